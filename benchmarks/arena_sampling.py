"""What the arena's voters read: every learner's definitions sampled as a battle samples
them, beside the greedy ones the benchmarks score, on DefGen items.

A battle's two definitions are sampled (temperature and top-k, seeded per battle;
demo/sampling.py), while DefGen and the tournament score greedy definitions. This runs the
six learners once per item and defines the same vectors once per decoding: greedy, then
each temperature with each seed (top-k as the arena's), each item drawing its own seed as
a battle does. Scores are DefGen's own (`benchmarks.defgen.score_samples`: identification
among 30 of the file's references, BERTScore, degenerate rate); `seeds_differ` is the share
of items where two seeds of one temperature gave different texts (a battle's text should
rarely come back). `unfinished` is the share that stopped (a line break, a full stop, the
end of text) right after a word a sentence cannot stop on ('a', 'the order of';
`backends.function_words.UNFINISHED`), what `Decoding.finish_sentence` forbids; a text its
budget cut is not counted. `wordless` is the share that stopped before saying any content
word ('1.', 'a 1.', 'you can'), what `Decoding.content_first` forbids. `ran_on` is the
share its token budget cut before any sentence end, shown with a '…'
(`Decoding.wind_down`). `--set` changes a decoding field in every row, to measure a
setting before it becomes the default. Both oracles are sampled beside the learners
(`--learners` picks those): the real word alone, and after the examples with it in them,
the side the arena's `NONCE_ARENA_ORACLE_SHARE` battles show.

    python -m benchmarks.arena_sampling --items 0:200:4 --temperatures 0.5,0.8,1.0 \\
        --seeds 1,2 --json benchmarks/results/arena_sampling/dev-every4th.json
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from dataclasses import asdict, replace
from itertools import combinations
from pathlib import Path

from backends.arguments import whole_number

GREEDY_ROW = "greedy"
ITEM_SEED_STRIDE = 1000  # item i samples with seed + 1000 i: its own draw, as each battle has


def stopped_unfinished(text: str, finished: bool) -> bool:
    """Whether a definition that stopped ended on a word that wants another: no mark
    after its last word, and that word one of `UNFINISHED` ('a', 'the order of')."""
    from backends.function_words import UNFINISHED

    words = text.split()
    return finished and bool(words) and text[-1].isalpha() and words[-1].lower() in UNFINISHED


def stopped_wordless(text: str, finished: bool) -> bool:
    """Whether a definition that stopped said no content word: '1.', 'a 1.', 'you can'."""
    from backends.function_words import is_content_word
    from benchmarks.metrics import tokens

    return finished and not any(is_content_word(w) for w in tokens(text))


def parse_items(text: str) -> list[int]:
    """'0:200:4' -> [0, 4, ..., 196]; ranges LO:HI[:STEP], comma-separated, each holding
    at least one item (0 <= LO < HI)."""
    items = []
    for part in text.split(","):
        shape = f"{part[:40]!r}: write LO:HI or LO:HI:STEP (whole numbers, 0 <= LO < HI, STEP >= 1)"
        try:
            bounds = [int(x) for x in part.split(":")]
        except ValueError:
            raise ValueError(shape) from None
        if len(bounds) not in (2, 3) or (len(bounds) == 3 and bounds[2] < 1):
            raise ValueError(shape)
        if not 0 <= bounds[0] < bounds[1]:  # an empty range, or one counting from the end
            raise ValueError(shape)
        items.extend(range(*bounds))
    return items


def decoding_rows(
    temperatures: list[float], seeds: list[int], top_k: int, changes: dict | None = None
) -> dict:
    """Row name -> Decoding: greedy first, then 'T=<t> seed=<s>' for each pair; `changes`
    (field -> value) set in every row."""
    from backends.decoding import Decoding
    from backends.definitions import DEFAULT_DECODING

    if not all(0 < t < math.inf for t in temperatures):  # 0: greedy under a sampled name
        raise ValueError(
            f"temperatures {temperatures}: each must be finite and > 0 (greedy is always a row)"
        )
    changes = changes or {}
    rows = {GREEDY_ROW: replace(DEFAULT_DECODING, **changes)}
    for t in temperatures:
        for s in seeds:
            rows[f"T={t} seed={s}"] = Decoding(
                **{**changes, "temperature": t, "top_k": top_k, "seed": s}
            )
    return rows


def parse_changes(text: str) -> dict:
    """'wind_down=16,wind_down_rate=0.5' -> {field: value}, each value of its field's type."""
    from dataclasses import fields

    from backends.decoding import Decoding

    kinds = {f.name: f.type for f in fields(Decoding)}  # 'bool', 'int' or 'float'
    read = {"bool": lambda v: v.lower() in ("1", "true", "yes"), "int": int, "float": float}
    changes = {}
    for part in filter(None, text.split(",")):
        name, _, value = part.partition("=")
        if name not in kinds or not value:
            raise ValueError(f"--set {part!r}: write FIELD=VALUE, FIELD one of {sorted(kinds)}")
        try:
            changes[name] = read[kinds[name]](value)
        except ValueError:
            raise ValueError(
                f"--set {part!r}: {name} takes a value of type {kinds[name]}"
            ) from None
    return changes


def seeds_differ(texts: dict[tuple[str, int], str], rows: list[str]) -> float:
    """Share of (item, pair of rows) whose texts differ; `texts[row, item]`."""
    items = sorted({item for _, item in texts})
    differ = [texts[a, i] != texts[b, i] for a, b in combinations(rows, 2) for i in items]
    return sum(differ) / len(differ) if differ else float("nan")


def _numbers(flag: str, text: str, kind: type) -> list:
    """'0.5,0.8' -> [0.5, 0.8]: comma-separated numbers of `kind`, or a ValueError naming `flag`."""
    try:
        return [kind(x) for x in text.split(",")]
    except ValueError:
        what = "whole numbers" if kind is int else "numbers"
        raise ValueError(f"{flag} {text[:40]!r}: write comma-separated {what}") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.arena_sampling", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--data", default=None, help="DefGen file (default: the dev set)")
    parser.add_argument("--items", required=True, help="ranges LO:HI[:STEP], comma-separated")
    parser.add_argument("--shots", type=whole_number(1), default=3)
    parser.add_argument("--temperatures", default="0.8", help="e.g. 0.5,0.8,1.0")
    parser.add_argument("--top-k", type=whole_number(0), default=40, help="0 = no top-k")
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--threads", type=whole_number(0), default=2, help="0 = torch's default")
    parser.add_argument("--json", default=None, help="write the samples and scores here")
    parser.add_argument("--set", default="", help="decoding fields for every row: F=V,F=V")
    parser.add_argument(
        "--learners", default="all", help="comma-separated learner names (default: all six)"
    )
    args = parser.parse_args(argv)
    try:
        picked = parse_items(args.items)
    except ValueError as err:  # an empty or malformed range
        parser.error(f"argument --items: {err}")
    try:
        temperatures = _numbers("--temperatures", args.temperatures, float)
        seeds = _numbers("--seeds", args.seeds, int)
        rows = decoding_rows(temperatures, seeds, args.top_k, parse_changes(args.set))
    except ValueError as err:  # a bad number or decoding setting
        parser.error(str(err))

    import torch

    from backends.definitions import ORACLE, ORACLE_IN_CONTEXT, ORACLES, define, define_known
    from backends.learners import parse_learners
    from backends.pipeline import load_lm
    from benchmarks import data
    from benchmarks.bertscore import BertScoreConfig, BertScorer
    from benchmarks.defgen import Sample, in_context_prefix, score_samples
    from benchmarks.runs import STAND_IN, RunOptions, examples_for, learn_each

    data_path = Path(args.data) if args.data else data.SETS_DIR / "defgen.dev.jsonl"
    if not data_path.is_file():
        parser.error(f"--data {args.data}: no such file")
    if args.threads:
        torch.set_num_threads(args.threads)
    items = data.load_defgen(data_path)
    if max(picked) >= len(items):
        parser.error(f"--items {args.items}: {data_path.name} has {len(items)} items")
    try:  # all six by default, in the registry's order
        learners = tuple(parse_learners(args.learners))
    except ValueError as err:  # an unknown name
        parser.error(str(err))
    options = RunOptions(data=(data_path,), learners=learners)  # the benchmarks' settings
    lm = load_lm()
    samples, row_of, start = [], [], time.time()  # row_of[j]: the decoding of samples[j]
    unfinished: list[float] = []  # [j]: samples[j] stopped on 'a', 'of', 'and' ...
    wordless: list[float] = []  # [j]: samples[j] stopped before any content word
    ran_on: list[float] = []  # [j]: samples[j] cut by its token budget
    for i in picked:
        item = items[i]
        learned = learn_each(
            lm, learners, STAND_IN, examples_for(item.examples[: args.shots]), options
        )
        for row, decoding in rows.items():
            if not decoding.greedy:
                decoding = replace(decoding, seed=decoding.seed + ITEM_SEED_STRIDE * i)
            found = define(lm, learned, decoding=decoding)
            found += define_known(lm, [item.word], decoding=decoding, learner=ORACLE)
            # ... and what the arena's oracle side writes: the same after the examples
            prefix = in_context_prefix(item.word, item.examples[: args.shots])
            found += define_known(
                lm, [item.word], decoding=decoding, learner=ORACLE_IN_CONTEXT, prefix=prefix
            )
            samples += [
                Sample(i, item.word, args.shots, d.learner, d.text, item.definition) for d in found
            ]
            unfinished += [float(stopped_unfinished(d.text, d.finished)) for d in found]
            wordless += [float(stopped_wordless(d.text, d.finished)) for d in found]
            ran_on += [float(not d.finished) for d in found]
            row_of += [row] * len(found)
        print(f"{i} {item.word} {time.time() - start:.0f} s", flush=True)

    score_samples(samples, [x.definition for x in items], BertScorer(BertScoreConfig()), 0)
    for s, stopped, said_nothing, cut in zip(samples, unfinished, wordless, ran_on):
        s.scores["unfinished"] = stopped
        s.scores["wordless"] = said_nothing
        s.scores["ran_on"] = cut
    groups, texts = defaultdict(list), defaultdict(dict)
    for s, row in zip(samples, row_of):  # scored under its own name: the oracle's real word
        groups[s.learner, row].append(s)
        texts[s.learner][row, s.item] = s.definition
    summary = {}
    for (learner, row), group in groups.items():
        means = {m: sum(s.scores[m] for s in group) / len(group) for m in group[0].scores}
        summary[f"{learner} | {row}"] = {"n": len(group), **means}
    for t in temperatures:
        same_t = [f"T={t} seed={s}" for s in seeds]
        for learner in (*learners, *ORACLES):
            summary[f"{learner} | T={t}"] = {
                "seeds_differ": seeds_differ(texts[learner], same_t),
                **{
                    m: sum(summary[f"{learner} | {r}"][m] for r in same_t) / len(same_t)
                    for m in (
                        "identified",
                        "bertscore_f1",
                        "degenerate",
                        "unfinished",
                        "wordless",
                        "ran_on",
                    )
                },
            }
    for name, means in summary.items():
        shown = (f"{m}={v}" if isinstance(v, int) else f"{m}={v:.3f}" for m, v in means.items())
        print(f"{name:36s} " + " ".join(shown))
    if args.json:
        record = {
            "args": vars(args),
            "seconds": round(time.time() - start, 1),
            "summary": summary,
            "samples": [{**asdict(s), "decoding": row} for s, row in zip(samples, row_of)],
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
