"""Where a DefGen run's gap to the oracle comes from, per part of speech: how often the
word the LM read the new word as (college's `read_as`) was the real word, and how often
the definition was identified when it was and when it was not, beside the oracle's.

    python -m benchmarks.read_as benchmarks/results/defgen-dev-college-read-as.json

The DefGen files hold their parts of speech in blocks (`build_wordnet_sets.POS_QUOTAS`:
dev 80 nouns, 60 verbs, 60 adjectives; the held-out test file 40, 30, 30), so an item's
part of speech is read from its index; a record of other data is reported whole.

Where a record keeps each sample's `read_rank` (the real word's place among every word the
LM weighed), two more columns say how far a better ranking of the same candidates could
go: `top5` and `weighed`, the share with the real word among the five heaviest and
anywhere among them, and `ceiling_top5` / `ceiling_weighed`, identification had the real
word been read first wherever it was that high. An item read first that way is counted
as the oracle's definition of it was (identified or not): the definitions of a word read
first are identified about as often as the oracle's (model card, "What the LM read the
word as"), so this is an estimate, not a measurement.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from benchmarks.build_wordnet_sets import POS_QUOTAS
from benchmarks.defgen import RANK_BANDS, read_first

POS_NAMES = {"n": "nouns", "v": "verbs", "a": "adjectives"}
# index into POS_QUOTAS' triples; the written sentences keep their WordNet file's words in order
SPLITS = {
    "defgen.dev.jsonl": 0,
    "defgen.dev.natural.jsonl": 0,
    "defgen.test.jsonl": 2,
    "defgen.test.natural.jsonl": 2,
    "defgen.test.natural2.jsonl": 2,
}


def part_of_speech(data: str, item: int) -> str:
    """'nouns', 'verbs' or 'adjectives' for item `item` of a DefGen file, 'all' for other data."""
    split = SPLITS.get(Path(data).name)
    if split is None:
        return "all"
    end = 0
    for pos, quotas in POS_QUOTAS.items():
        end += quotas[split]
        if item < end:
            return POS_NAMES[pos]
    return "all"


def summarise(record: dict) -> list[dict]:
    """One row per (learner with `read_as`, k, part of speech), and its oracle's rate."""
    oracle = {
        (r["shots"], s["item"]): s["identified"]
        for r in record["results"]
        if r["learner"] == "oracle"
        for s in r["samples"]
    }
    rows = []
    for result in record["results"]:
        samples = [s for s in result["samples"] if "read_as" in s or "read_rank" in s]
        groups = defaultdict(list)
        for s in samples:
            groups[part_of_speech(record["data"], s["item"])].append(s)
        if len(groups) > 1:
            groups["all"] = samples
        for pos, group in groups.items():
            first = [s for s in group if was_read_first(s)]
            other = [s for s in group if not was_read_first(s)]
            rows.append(
                {
                    "learner": result["learner"],
                    "k": result["shots"],
                    "pos": pos,
                    "n": len(group),
                    "read_first": len(first) / len(group),
                    "identified": _mean([s["identified"] for s in group]),
                    "identified_read_first": _mean([s["identified"] for s in first]),
                    "oracle_read_first": _mean([oracle[result["shots"], s["item"]] for s in first]),
                    "identified_read_other": _mean([s["identified"] for s in other]),
                    "oracle": _mean([oracle[result["shots"], s["item"]] for s in group]),
                    **ceilings(
                        group, {s["item"]: oracle[result["shots"], s["item"]] for s in group}
                    ),
                }
            )
    return rows


def was_read_first(sample: dict) -> bool:
    """Whether the heaviest word read was the real word: its rank 0 where the sample keeps
    the rank, else its `read_as` (records from before ranks were kept)."""
    if "read_rank" in sample:
        return sample["read_rank"] == 0
    return read_first(sample["read_as"], sample["word"])


def ceilings(group: list[dict], oracle: dict[int, float]) -> dict[str, float]:
    """Shares with the real word among the five heaviest / anywhere among the words weighed,
    and the identification estimated had it been read first there ({} without ranks);
    `oracle`: the oracle's identification per item."""
    if not group or any("read_rank" not in s for s in group):
        return {}
    out = {}
    for band, within in RANK_BANDS.items():
        out[band] = _mean([float(within(s["read_rank"])) for s in group])
        out[f"ceiling_{band}"] = _mean(
            [oracle[s["item"]] if within(s["read_rank"]) and s["read_rank"] > 0 else s["identified"]
             for s in group]
        )  # fmt: skip
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("record", help="a DefGen run record (JSON) with read_as samples")
    args = parser.parse_args(argv)
    record = json.loads(Path(args.record).read_text(encoding="utf-8"))
    rows = summarise(record)
    if not rows:
        parser.error(f"{args.record}: no sample says what the LM read the word as")
    columns = list(rows[0])
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for row in rows:
        cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in row.values()]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
