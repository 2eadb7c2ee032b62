"""The benchmark tasks, declared as data (after lm-evaluation-harness): name, default data,
metrics with their direction, version, and the function that runs the task.

Chimera (Lazaridou, Marelli & Baroni 2017), Definitional Nonce (Herbelot & Baroni 2017),
DefGen, Cloze and the automatic Elo tournament (CoLLEGe, Teehan, Lake & Ren 2024), and
speed/memory measurements (perf).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

from backends import shared_data
from backends.registry import unknown_name_message


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool
    description: str


@dataclass(frozen=True)
class Task:
    name: str
    description: str
    default_data: tuple[str, ...]  # files read when --data is not given
    metrics: tuple[Metric, ...]
    version: int  # bump when scoring changes, so old result files are not compared blindly
    runner: str  # "module:function" taking RunOptions, returning list[Result]; imported lazily
    # Items from this index on (per data file) are our own held-out test split: nothing is
    # tuned on them, and a run that starts there (`--offset`) is reported apart from dev.
    # Our DefGen test split is a file of its own (`defgen.test.jsonl`).
    held_out_from: int | None = None

    def run_function(self) -> Callable:
        module, function = self.runner.split(":")
        return getattr(importlib.import_module(module), function)


SPEARMAN = Metric("spearman", True, "mean over items of Spearman rho(cos, human ratings)")
MRR = Metric("mrr", True, "mean reciprocal rank of the gold word among the candidates")
MEDIAN_RANK = Metric("median_rank", False, "median rank of the gold word")
BERTSCORE = Metric("bertscore_f1", True, "BERTScore F1 vs the reference (local encoder)")
ROUGE = Metric("rouge_l", True, "ROUGE-L F1 vs the reference")
IDENTIFIED = Metric(
    "identified", True, "share of definitions closer to their own reference than to 29 others"
)
IDENTIFIED_MASKED = Metric(
    "identified_masked", True, "identified, with the real word's forms masked in every definition"
)
NAMES_WORD = Metric("names_word", False, "share of definitions that say the real word")
DEGENERATE = Metric(
    "degenerate",
    False,
    "share of definitions empty, saying the word, repeating a 3-gram, or looping on a word",
)
GAP_CLOSED = Metric(
    "gap_closed_identified", True, "(learner - centroid) / (oracle - centroid), identification"
)
ACCURACY = Metric("accuracy", True, "fraction of items whose gold candidate scored highest")
CHANCE = Metric("chance", True, "expected accuracy of a random pick (1 / candidates)")
ELO = Metric("elo", True, "online Elo (init 1000, K 4) over this run's automatic votes")
BT = Metric("bt_score", True, "Bradley-Terry score on the Elo scale, 95% bootstrap interval")
SECONDS = Metric("seconds", False, "wall-clock seconds")
# the annotator name the tournament's votes carry; with the tournament's version, the name
# the arena stores beside each automatic verdict (`demo.judge.PoolJudge.name`)
JUDGE = "auto:identify-masked-minilm-l6"
# the tournament version at which the judge's reading last changed: the arena names its
# verdicts by it, so a version that changes only who plays (7: the oracle that reads the
# examples) does not split one reading's verdicts in two
JUDGE_VERSION = 6

TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task(
            "chimera",
            "Chimera: cos(learned input vector, probe reference vectors) vs human ratings",
            tuple(str(shared_data.chimera_path(level)) for level in shared_data.CHIMERA_LEVELS),
            (SPEARMAN,),
            1,
            "benchmarks.word_tasks:run_chimera",
            held_out_from=110,  # of 220 chimeras per level: the second half
        ),
        Task(
            "nonce",
            "Definitional Nonce: rank of the gold word's reference vector among WordNet lemmas",
            (str(shared_data.definitional_nonce_path()),),
            (MRR, MEDIAN_RANK),
            1,
            "benchmarks.word_tasks:run_nonce",
            held_out_from=350,  # of 700 items: the second half
        ),
        Task(
            "defgen",
            "DefGen: generated definition (first sentence) vs the WordNet gloss, 1-3 shots, "
            "with the oracle (the real word) as the ceiling",
            (str(shared_data.SETS_DIR / "defgen.dev.jsonl"),),
            (IDENTIFIED, IDENTIFIED_MASKED, NAMES_WORD, DEGENERATE, GAP_CLOSED, BERTSCORE, ROUGE),
            # 3: decoding limits a word's uses; `degenerate` counts word loops. 4: a word
            # quoted alone opens no second quotation; `degenerate` counts a repeated quotation.
            # 5 was the copy ban's own (benchmarks/results/copy-ban/, not kept). 6:
            # `degenerate` counts "do" with the content words, and babble
            # (`benchmarks.metrics.babbles`); version 4 records are rescored to it in place
            6,
            "benchmarks.defgen:run_defgen",
        ),
        Task(
            "cloze",
            "Cloze: pick, by LM log-probability, which of 5 new words fills the blank",
            (str(shared_data.SETS_DIR / "cloze.dev.jsonl"),),
            (ACCURACY, CHANCE),
            1,
            "benchmarks.cloze:run_cloze",
        ),
        Task(
            "tournament",
            "Automatic Elo tournament on DefGen items, both oracles included; a degenerate "
            "definition loses, else the one that better identifies its reference (the real "
            "word masked) wins",
            (str(shared_data.SETS_DIR / "defgen.dev.jsonl"),),
            (ELO, BT),
            # DefGen's 4, and from 5 the judge reads the definitions with the word masked;
            # 6: DefGen's 6 (its judge's `degenerate`); 7: the oracle after the examples
            # (`oracle_in_context`) plays too, so the pairs are drawn anew; 8: the same
            # battles and Elo, the Bradley–Terry columns fitted under the arena's prior and
            # anchored at the mean over battles (`demo.ratings`)
            8,
            "benchmarks.defgen:run_tournament",
        ),
        Task(
            "perf",
            "Speed and memory: learners, batched definitions, model load, kNN store, ratings",
            (),
            (SECONDS,),
            1,
            "benchmarks.perf:run_perf",
        ),
        Task(
            "int8",
            "Greedy DefGen definitions with an int8 output layer vs fp32: matching share, time",
            (str(shared_data.SETS_DIR / "defgen.dev.jsonl"),),
            (SECONDS,),
            1,
            "benchmarks.kernel_match:run_int8_head",
        ),
        Task(
            "packed",
            "Greedy DefGen definitions with the LM body's linear layers packed (oneDNN) vs "
            "plain: matching share per learner and the oracle, time",
            (str(shared_data.SETS_DIR / "defgen.dev.jsonl"),),
            (SECONDS,),
            1,
            "benchmarks.kernel_match:run_packed_linears",
        ),
        Task(
            "steps",
            "DefGen definitions decoded through the lean step (backends/decode_step.py; a "
            "CUDA graph on a GPU) vs transformers' forward: matching share per learner and "
            "the oracle, time",
            (str(shared_data.SETS_DIR / "defgen.dev.jsonl"),),
            (SECONDS,),
            1,
            "benchmarks.kernel_match:run_lean_steps",
        ),
        Task(
            "half",
            "DefGen definitions with each decoding step reading the LM blocks' weights as "
            "fp16 (backends/half_body.py) vs fp32: matching share per learner and the "
            "oracle, time",
            (str(shared_data.SETS_DIR / "defgen.dev.jsonl"),),
            (SECONDS,),
            1,
            "benchmarks.kernel_match:run_half_body",
        ),
    )
}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(unknown_name_message("task", name, TASKS))
    return TASKS[name]


def task_names() -> list[str]:
    return list(TASKS)
