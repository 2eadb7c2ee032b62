"""DefGen and the automatic Elo tournament (CoLLEGe, Teehan, Lake & Ren 2024, §5.2 and Table 2).

DefGen: learn the word from its first k examples (k = 1, 2, 3), generate with CoLLEGe's
probe 'The word "<nonce>" is defined as' (all learners of an item in one batched
generation, decoded by backends.definitions.DEFAULT_DECODING), keep the first sentence,
and score it against the reference gloss with BERTScore F1 (local encoder) and ROUGE-L;
and as a reader would: identification (is the definition closer, by mean-pooled sentence
embedding cosine, to its own reference than to each of 29 others from the same file?
chance 1/30) and the degenerate rate (empty, says the word, repeats a word 3-gram, says
a content word or "do" three times or a word right after itself, quotes the same thing
twice, or babbles: `benchmarks.metrics.degenerate`).
The oracle row is the LM defining the real word (its own tokens, same probe and
decoding): the ceiling for any learner; "gap closed" = (learner - centroid) / (oracle -
centroid). The oracle reads no examples, so where they pin a sense it does not know it (a
camp for soldiers), and a learner that sets them before its probe (college) can pass it;
the `oracle_in_context` row is the same oracle with the item's first k examples, the real
word in them, set before its probe as college sets its own: the ceiling for that learner.
Every definition is kept in the run record.

Tournament: per item, a random pair among the learners and the oracle, and a random k;
a degenerate definition loses to a usable one, otherwise the one that singles out its
own reference by the wider cosine margin wins, a tie within `tie_margin`. Votes go to a
vote store as judge="auto"; ratings are online Elo (init 1000, K 4) and a bootstrapped
Bradley-Terry leaderboard (demo.ratings).
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import random
import re
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import torch

from backends.definitions import (
    DEFAULT_DECODING,
    ORACLE,
    ORACLE_IN_CONTEXT,
    ORACLES,
    define,
    define_known,
    first_sentence,
)
from backends.learners.base import Example
from backends.learners.college import examples_prefix
from backends.pipeline import load_lm
from backends.settings import resolve_device
from benchmarks import data, metrics
from benchmarks.bertscore import BertScoreConfig, BertScorer
from benchmarks.results import Result
from benchmarks.runs import STAND_IN, RunOptions, describe_config, examples_for, learn_each, limited
from benchmarks.tasks import JUDGE

log = logging.getLogger(__name__)

DISTRACTORS = 29  # identification: the own reference against 29 others (chance 1/30)
CENTROID = "centroid"  # the baseline that "gap closed" measures from


def load_items(options: RunOptions) -> list[data.DefGenItem]:
    items = [item for path in options.data for item in data.load_defgen(path)]
    return limited(items, options.limit, options.offset)


@dataclass
class Sample:
    """One generated definition, kept in the run record so anyone can read it."""

    item: int  # index in the data file(s)
    word: str  # the real word behind the nonce
    shots: int  # example sentences the learner saw
    learner: str
    definition: str  # first sentence of the generation
    reference: str
    scores: dict = field(default_factory=dict)  # bertscore_f1, rouge_l, identified, degenerate
    # What the LM read the new word as, where the learner says (college: [[word, weight]])
    read_as: list | None = None
    # Where the real word was among every word the LM weighed (0: first; -1: not one of them)
    read_rank: int | None = None

    def record(self) -> dict:
        kept = {"read_as": self.read_as} if self.read_as is not None else {}
        if self.read_rank is not None:
            kept["read_rank"] = self.read_rank
        return {
            "item": self.item,
            "word": self.word,
            "definition": self.definition,
            **{k: round(v, 4) if isinstance(v, float) else v for k, v in self.scores.items()},
            **kept,
        }


def generate_samples(
    options: RunOptions, items: list[data.DefGenItem], lm, first: int = 0
) -> list[Sample]:
    """Each learner's definition per item and k (one batched generation per item and k),
    and the oracles': the real word's own tokens, same probe and decoding, at every k, once
    alone and once after the k examples with the real word in them.
    `first`: the run's index of items[0] (a worker's share starts there)."""
    samples = []
    for number, item in enumerate(items, start=first):
        known = define_known(lm, [item.word], max_new_tokens=options.max_new_tokens)[0]
        for k in options.shots:
            if len(item.examples) < k:
                continue  # an item with fewer examples than k does not count at k
            embeddings = learn_each(
                lm, options.learners, STAND_IN, examples_for(item.examples[:k]), options
            )
            found = define(lm, embeddings, max_new_tokens=options.max_new_tokens)
            in_context = define_in_context(lm, item.word, item.examples[:k], options)
            read = [e.info.get("read_as") for e in embeddings] + [None] * len(ORACLES)
            ranks = [read_rank(e.info.get("read_words"), item.word) for e in embeddings]
            ranks += [None] * len(ORACLES)
            named = [(d.learner, d.text) for d in found]
            named += [(ORACLE, known.text), (ORACLE_IN_CONTEXT, in_context)]
            for (name, text), read_as, rank in zip(named, read, ranks):
                text = first_sentence(text)
                samples.append(
                    Sample(
                        number,
                        item.word,
                        k,
                        name,
                        text,
                        item.definition,
                        read_as=read_as,
                        read_rank=rank,
                    )
                )
        log.info("defgen item %d (%s) done", number + 1, item.word)
    return samples


def define_in_context(lm, word: str, texts: list[str], options: RunOptions) -> str:
    """The oracle's definition of `word` after the examples `texts` (their placeholder
    filled by the word itself), set before the probe in college's layout: what the LM says
    of a word it knows when it has read the same sentences a learner read."""
    prefix = in_context_prefix(word, texts)
    return define_known(lm, [word], options.max_new_tokens, prefix=prefix)[0].text


def in_context_prefix(word: str, texts: list[str]) -> str:
    """The examples `texts` with `word` in their placeholder's place, as college sets its
    examples before the probe: what `ORACLE_IN_CONTEXT` reads first."""
    return examples_prefix([Example(data.with_nonce(text, word)) for text in texts])


def own_word(learner: str, word: str) -> str:
    """The word a definition is degenerate for saying: a definition that says the word it
    defines names it for free; the stand-in string is what a learner's definition could
    say, the real word `word` what the oracles' could."""
    return word if learner in ORACLES else STAND_IN


def score_samples(
    samples: list[Sample], references: list[str], scorer: BertScorer, seed: int
) -> None:
    """BERTScore F1, ROUGE-L, identification among 30 references (as written, and with the
    real word masked) and degeneracy, per sample."""
    f1 = scorer.f1([s.reference for s in samples], [s.definition for s in samples])
    ref_vectors = scorer.sentence_vectors(references)  # [items, d]
    cosines, masked_cosines = identification_cosines(samples, ref_vectors, scorer)
    for s, score, row, masked_row in zip(samples, f1, cosines, masked_cosines):
        others = metrics.distractors(len(references), s.item, DISTRACTORS, seed)
        said = own_word(s.learner, s.word)
        s.scores = {
            "bertscore_f1": score,
            "rouge_l": metrics.rouge_l(s.reference, s.definition),
            "identified": float(metrics.identified(row[s.item], [row[i] for i in others])),
            "degenerate": float(metrics.degenerate(s.definition, said)),
            **masked_scores(s, masked_row, others),
        }


def identification_cosines(samples: list[Sample], ref_vectors, scorer: BertScorer):
    """Per sample, its definition's cosine to every reference ([samples][items]), as
    written and with the real word masked (only definitions that name it read again)."""
    def_vectors = scorer.sentence_vectors([s.definition for s in samples])  # [samples, d]
    masked_vectors = def_vectors.clone()
    hidden = {i: metrics.masked(s.definition, s.word, STAND_IN) for i, s in enumerate(samples)}
    named = [i for i, text in hidden.items() if text != samples[i].definition]
    if named:
        masked_vectors[named] = scorer.sentence_vectors([hidden[i] for i in named])
    return (def_vectors @ ref_vectors.T).tolist(), (masked_vectors @ ref_vectors.T).tolist()


def masked_scores(sample: Sample, masked_row: list[float], others: list[int]) -> dict:
    """Whether the definition names the real word, and whether it is identified with that
    name masked. A learner is banned from saying only its new token, the oracle from its
    word: college's definitions, written from the row of the word its LM reader read,
    often name that word ('"to bruise" or ...'), the one thing the oracle may not do. With
    the word masked for every learner and the oracle alike, identification counts what a
    definition says of the word, not its name."""
    return {
        "names_word": float(metrics.names_word(sample.definition, sample.word)),
        "identified_masked": float(
            metrics.identified(masked_row[sample.item], [masked_row[i] for i in others])
        ),
    }


def rescore_masked(record: dict, scorer: BertScorer) -> int:
    """Add `names_word` and `identified_masked` (per sample, their means per row and the
    masked gap closed) to a DefGen run record written before they existed, from the
    definitions it keeps. Returns how many samples' `identified`, recomputed on the way,
    differ from the record's (0: the record's own scoring was reproduced)."""
    from backends.shared_data import REPO_ROOT

    rows = [row for row in record["results"] if row.get("samples")]
    items = [item for p in record["data"].split(",") for item in data.load_defgen(REPO_ROOT / p)]
    start = (record.get("settings") or {}).get("offset", 0)
    count = 1 + max(s["item"] for row in rows for s in row["samples"])
    references = [item.definition for item in items[start : start + count]]
    seed = int(m.group(1)) if (m := re.search(r"--seed[ =](\d+)", record["command"])) else 0
    samples = [
        Sample(k["item"], k["word"], row["shots"], row["learner"], k["definition"], "")
        for row in rows
        for k in row["samples"]
    ]
    cosines, masked_cosines = identification_cosines(
        samples, scorer.sentence_vectors(references), scorer
    )
    kept = iter(k for row in rows for k in row["samples"])
    differ = 0
    for s, row, masked_row, sample in zip(samples, cosines, masked_cosines, kept):
        others = metrics.distractors(len(references), s.item, DISTRACTORS, seed)
        differ += metrics.identified(row[s.item], [row[i] for i in others]) != sample["identified"]
        sample.update(masked_scores(s, masked_row, others))
    masked_means = {}
    for row in rows:
        for metric in ("names_word", "identified_masked"):
            row[metric] = round(_mean([k[metric] for k in row["samples"]]), 4)
        masked_means[row["learner"], row["shots"]] = row["identified_masked"]
    for row in rows:
        base = masked_means.get((CENTROID, row["shots"]))
        top = masked_means.get((ORACLE, row["shots"]))
        if base is not None and top is not None:
            gap = metrics.gap_closed(row["identified_masked"], base, top)
            row["gap_closed_identified_masked"] = None if math.isnan(gap) else round(gap, 4)
        # its config and definitions stay last, as in a new run's row
        tail = {k: row.pop(k) for k in list(row) if k in ("config", "samples")}
        row.update(tail)
    return differ


def rescore_degenerate(record: dict) -> int:
    """Score every kept definition's `degenerate` again, as `metrics.degenerate` reads it
    now (per sample and each row's mean), in place. Returns how many samples changed."""
    changed = 0
    for row in record["results"]:
        kept = row.get("samples") or []
        for sample in kept:
            said = own_word(row["learner"], sample["word"])
            now = float(metrics.degenerate(sample["definition"], said))
            changed += now != sample.get("degenerate")
            sample["degenerate"] = now
        if kept:
            row["degenerate"] = round(_mean([k["degenerate"] for k in kept]), 4)
    return changed


def summarise(samples: list[Sample], options: RunOptions, scorer: BertScorer) -> list[Result]:
    """One row per (learner, k): mean scores, gap closed towards the oracle, the samples."""
    groups: dict[tuple[str, int], list[Sample]] = defaultdict(list)
    for s in samples:
        groups[s.learner, s.shots].append(s)
    means = {key: _means(group) for key, group in groups.items()}
    results = []
    for k in options.shots:
        for learner in (*options.learners, *ORACLES):
            if (learner, k) not in groups:
                continue
            scores = dict(means[learner, k])
            scores.update(reading_scores(groups[learner, k]))
            if (CENTROID, k) in means and (ORACLE, k) in means:
                for metric in ("identified", "identified_masked", "bertscore_f1"):
                    scores[f"gap_closed_{metric}"] = metrics.gap_closed(
                        scores[metric], means[CENTROID, k][metric], means[ORACLE, k][metric]
                    )
            config = {**_described(learner, options), "bertscore": scorer.config.record()}
            config["decoding"] = DEFAULT_DECODING.record()
            group = groups[learner, k]
            results.append(
                Result(learner, k, len(group), scores, config, samples=[s.record() for s in group])
            )
    return results


def read_first(read_as: list | None, word: str) -> bool:
    """Whether the word the learner's LM reading weighed most is the real word."""
    return bool(read_as) and read_as[0][0].lower() == word.lower()


# How high the real word stood among the words the LM weighed (`read_rank`): among the five
# heaviest, or anywhere. What a better ranking of the same words could reach at most.
RANK_BANDS = {"top5": lambda rank: 0 <= rank < 5, "weighed": lambda rank: rank >= 0}


def read_rank(read_words: list[str] | None, word: str) -> int | None:
    """The real word's place among the words the LM weighed, heaviest first (0: read first;
    -1: not one of them); None for a learner that does not say."""
    if read_words is None:
        return None
    lowered = [w.lower() for w in read_words]
    return lowered.index(word.lower()) if word.lower() in lowered else -1


def reading_scores(group: list[Sample]) -> dict[str, float]:
    """For a learner that says what the LM read the word as (college): how often that was
    the real word (`read_first`), and identification when it was and when not: where the
    definitions' gap to the oracle comes from ({} for other learners)."""
    read = [s for s in group if s.read_as is not None]
    if not read:
        return {}
    hit = [s for s in read if read_first(s.read_as, s.word)]
    miss = [s for s in read if not read_first(s.read_as, s.word)]
    scores = {
        "read_first": len(hit) / len(read),
        "identified_read_first": _mean([s.scores["identified"] for s in hit]),
        "identified_read_other": _mean([s.scores["identified"] for s in miss]),
    }
    ranked = [s.read_rank for s in read if s.read_rank is not None]
    if ranked:  # how much a better ranking of the same words could give at most
        for band, within in RANK_BANDS.items():
            scores[f"read_{band}"] = sum(within(r) for r in ranked) / len(ranked)
    return scores


def run_defgen(options: RunOptions) -> list[Result]:
    items = load_items(options)
    if options.workers > 1:
        samples = generate_in_workers(options, len(items))
    else:
        samples = generate_samples(options, items, load_lm(options.lm, options.device))
    scorer = BertScorer(BertScoreConfig(), device=resolve_device(options.device))
    score_samples(samples, [item.definition for item in items], scorer, options.seed)
    return summarise(samples, options, scorer)


def generate_in_workers(options: RunOptions, n_items: int) -> list[Sample]:
    """The samples of `generate_samples`, the items cut into `options.workers` contiguous
    shares, each generated by a process of its own (its own LM; on a GPU they share the
    device): for a machine whose cores or GPU one process leaves idle. Scoring stays in the
    caller, over all items, so the record is the one a single process would write."""
    bounds = [n_items * w // options.workers for w in range(options.workers + 1)]
    # a worker logs its progress as we do, and uses the CPU threads we were given
    level, threads = logging.getLogger().getEffectiveLevel(), torch.get_num_threads()
    shares = [(options, a, b, level, threads) for a, b in zip(bounds, bounds[1:]) if b > a]
    context = multiprocessing.get_context("spawn")  # CUDA cannot be forked
    with ProcessPoolExecutor(len(shares), mp_context=context) as pool:
        return [s for part in pool.map(_generate_share, shares) for s in part]


def _generate_share(share: tuple[RunOptions, int, int, int, int]) -> list[Sample]:
    options, start, stop, level, threads = share
    torch.set_num_threads(threads)
    logging.basicConfig(level=level, format=f"%(levelname)s worker {start}-{stop}: %(message)s")
    items = load_items(options)[start:stop]
    return generate_samples(options, items, load_lm(options.lm, options.device), first=start)


def _described(learner: str, options: RunOptions) -> dict:
    """A row's settings: the learner's config, or what the oracle is."""
    if learner == ORACLE:
        return {"label": "real word"}
    if learner == ORACLE_IN_CONTEXT:
        return {"label": "real word, after the examples with it in them"}
    return describe_config(learner, options)


def _means(group: list[Sample]) -> dict[str, float]:
    return {m: _mean([s.scores[m] for s in group]) for m in group[0].scores}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


@dataclass(frozen=True)
class Verdict:
    """What the automatic judge saw in one definition."""

    margin: float  # cos(own reference) - max cos(29 other references): > 0 means identified
    degenerate: bool


def judge(a: Verdict, b: Verdict, tie_margin: float) -> str:
    """A reader's verdict, automated: a degenerate definition loses to a usable one (both
    degenerate: 'both_bad'); otherwise the one that singles out its own reference by the
    wider margin (`battle_verdicts` reads both), a difference within `tie_margin` is a tie."""
    if a.degenerate or b.degenerate:
        return "both_bad" if a.degenerate and b.degenerate else ("b" if a.degenerate else "a")
    if a.margin - b.margin > tie_margin:
        return "a"
    if b.margin - a.margin > tie_margin:
        return "b"
    return "tie"


def default_db() -> str:
    """The benchmarks' own vote store, beside the app's but never the app's: automatic
    votes are not people's, and a benchmark run must not change the live leaderboard."""
    from backends.settings import load_settings

    return str(load_settings().cache_dir / "benchmark-votes.sqlite")


def run_tournament(options: RunOptions) -> list[Result]:
    from demo.store import AutoVote, Item

    if len(options.learners) < 2:
        raise ValueError("the tournament needs at least two learners")
    lm = load_lm(options.lm, options.device)
    scorer = BertScorer(BertScoreConfig(), device=str(lm.device))
    items = load_items(options)
    ref_vectors = scorer.sentence_vectors([item.definition for item in items])  # [items, d]
    rng = random.Random(options.seed)
    votes = []
    for number, item in enumerate(items):
        # both oracles play: the word's own definition, and the one written after the
        # same examples, the ceiling for a learner that reads them
        pair = tuple(rng.sample([*options.learners, *ORACLES], 2))
        k = rng.choice(
            [k for k in options.shots if k <= len(item.examples)] or [len(item.examples)]
        )
        examples = examples_for(item.examples[:k])
        texts = [_battle_definition(lm, name, item, k, options) for name in pair]
        others = metrics.distractors(len(items), number, DISTRACTORS, options.seed)
        said = [own_word(name, item.word) for name in pair]
        a, b = battle_verdicts(
            scorer, ref_vectors, number, others, texts, item.word, STAND_IN, said
        )
        seen = Item(STAND_IN, tuple(ex.text for ex in examples))
        vote = judge(a, b, options.tie_margin)
        votes.append(AutoVote(seen, *pair, *texts, lm=lm.name, vote=vote, annotator=JUDGE))
    return _tournament_results(votes, options)


def battle_verdicts(
    scorer, ref_vectors, number, others, texts, real_word, mask, said
) -> list[Verdict]:
    """Each side's verdict on item `number` (reference rows `ref_vectors`, distractors
    `others`), for the tournament and the arena's automatic judge (demo/judge.py) alike.
    A text is degenerate as `metrics.degenerate` reads it with its side's own word
    (`said`); its margin is read with `real_word` masked as `mask`, as `identified_masked`
    is, so a learner that names the word it read does not win on the name alone, which
    the oracle, banned from its own word, may never write."""
    judged = [metrics.masked(text, real_word, mask) for text in texts] if real_word else texts
    cosines = (scorer.sentence_vectors(judged) @ ref_vectors.T).tolist()  # [sides, items]
    return [
        Verdict(metrics.margin(row[number], [row[i] for i in others]), metrics.degenerate(t, w))
        for t, w, row in zip(texts, said, cosines, strict=True)
    ]


def _battle_definition(lm, name: str, item, k: int, options: RunOptions) -> str:
    """One side's definition: a learner's from the item's first `k` examples, or an
    oracle's (after those examples with the real word in them, for `ORACLE_IN_CONTEXT`)."""
    if name == ORACLE:
        text = define_known(lm, [item.word], options.max_new_tokens)[0].text
    elif name == ORACLE_IN_CONTEXT:
        text = define_in_context(lm, item.word, item.examples[:k], options)
    else:
        examples = examples_for(item.examples[:k])
        learned = learn_each(lm, (name,), STAND_IN, examples, options)
        text = define(lm, learned, options.max_new_tokens)[0].text
    return first_sentence(text)


def _tournament_results(votes: list, options: RunOptions) -> list[Result]:
    from demo.ratings import leaderboard
    from demo.store import VoteStore

    store = VoteStore.open(options.db or default_db())
    try:
        store.record_auto_votes(votes)
    finally:
        store.close()
    board = leaderboard(
        [(v.learner_a, v.learner_b, v.vote) for v in votes], rounds=100, seed=options.seed
    )
    settings = {"tie_margin": options.tie_margin, "judge": JUDGE, "rounds": 100}
    return [
        Result(
            row.learner,
            None,
            row.battles,
            {
                "elo": row.elo,
                "bt_score": row.score,
                "ci_low": row.ci_low,
                "ci_high": row.ci_high,
                "rank": row.rank,
            },
            {**_described(row.learner, options), **settings},
        )
        for row in board.rows
    ]
