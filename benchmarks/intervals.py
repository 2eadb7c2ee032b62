"""How sure each DefGen comparison is: 95% bootstrap intervals over items, from the
definitions every run record keeps (no model is run).

A DefGen score is a mean over 100-200 items, and an item's identification is 0 or 1, so
one learner's 0.45 on the held-out file could be anything from about 0.35 to 0.55 on
another draw of 100 words. The issue's questions are comparisons on the same items ("is
`college` first?", "how far is it from the oracle?"), so the intervals that answer them
resample the items in pairs: the paired difference's interval is much narrower than the
two means' intervals side by side, because a hard word is hard for every learner (Efron
& Tibshirani 1993, the paired bootstrap). Rows are matched across records by their data
file, offset and item; where several records hold a learner at one k, the row over the
most items, then the newest, is read (as the report's headline does).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from backends.definitions import ORACLES

ROUNDS = 2000
LEVEL = 95  # percent
METRICS = (("identified", "identified"), ("bertscore_f1", "BERTScore"))


def bootstrap_interval(
    values: np.ndarray, seed: int = 0, rounds: int = ROUNDS
) -> tuple[float, float]:
    """The central `LEVEL`% interval of the mean of `values` (one per item) over `rounds`
    resamplings of the items. For a paired difference, pass the per-item differences."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float("nan"), float("nan")
    tail = (100 - LEVEL) / 2
    low, high = np.percentile(resampled_means(values, seed, rounds), [tail, 100 - tail])
    return float(low), float(high)


def resampled_means(values: np.ndarray, seed: int, rounds: int) -> np.ndarray:
    """[rounds, ...]: the mean over the items (the first axis of `values`, [n] or [n, m]
    for m scores an item) of each of `rounds` draws of n items with replacement, seeded.
    Items are drawn whole, so an item's m scores stay together (a paired bootstrap)."""
    draws = np.random.default_rng(seed).integers(0, len(values), size=(rounds, len(values)))
    return values[draws].mean(axis=1)


@dataclass(frozen=True)
class Comparison:
    """One learner against the reference learner on the same items, one metric."""

    split: str  # the data file (and offset) the items come from
    shots: int
    metric: str
    learner: str
    n: int
    mean: float
    interval: tuple[float, float]
    difference: float | None  # reference - learner (None on the reference's own line)
    difference_interval: tuple[float, float] | None


def newest_rows(runs: list[dict]) -> dict[tuple[str, int, str], dict]:
    """(split, k, learner) -> the row with kept definitions over the most items, then the
    newest, among the given DefGen records."""
    chosen: dict[tuple[str, int, str], tuple[tuple[int, str], dict]] = {}
    for run in runs:
        if run.get("task") != "defgen":
            continue
        offset = (run.get("settings") or {}).get("offset", 0)
        split = run["data"] + (f" from item {offset + 1}" if offset else "")
        for row in run["results"]:
            kept = row.get("samples") or []
            if not kept or not all({"item", "word"} <= set(s) for s in kept):
                continue  # no per-item definitions to pair
            key = (split, row["shots"], row["learner"])
            rank = (row["n"], run.get("date", ""))
            if key not in chosen or rank >= chosen[key][0]:
                chosen[key] = rank, row
    return {key: row for key, (_, row) in chosen.items()}


def compare(
    runs: list[dict],
    reference: str,
    learners: list[str],
    seed: int = 0,
    rounds: int = ROUNDS,
) -> list[Comparison]:
    """For each split and k where `reference` has a row: each of `learners` (and the
    oracle) against it on the items both were run on, for each metric in `METRICS`."""
    rows = newest_rows(runs)
    out = []
    for split, shots, learner in sorted(rows, key=lambda key: (key[0], key[1])):
        if learner != reference:
            continue
        mine = {s["item"]: s for s in rows[split, shots, reference]["samples"]}
        others = [name for name in learners if name != reference]
        for other in [reference, *others, *ORACLES]:
            theirs = rows.get((split, shots, other))
            if theirs is None:
                continue
            paired = {s["item"]: s for s in theirs["samples"]}
            items = sorted(i for i in mine if i in paired and paired[i]["word"] == mine[i]["word"])
            for metric, _ in METRICS:
                if not items or any(metric not in s[i] for s in (mine, paired) for i in items):
                    continue
                a = np.array([mine[i][metric] for i in items], dtype=float)
                b = np.array([paired[i][metric] for i in items], dtype=float)
                own = other == reference
                out.append(
                    Comparison(
                        split,
                        shots,
                        metric,
                        other,
                        len(items),
                        float(b.mean()),
                        bootstrap_interval(b, seed, rounds),
                        None if own else float((a - b).mean()),
                        None if own else bootstrap_interval(a - b, seed, rounds),
                    )
                )
    return out


def render(comparisons: list[Comparison], reference: str) -> list[str]:
    """Markdown: one table per split and k, a line per learner, each metric's mean with
    its interval and the reference's paired lead over it with that lead's interval."""
    lines: list[str] = []
    groups: dict[tuple[str, int], list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault((c.split, c.shots), []).append(c)
    for (split, shots), group in groups.items():
        header = ["learner", "n"]
        for _, label in METRICS:
            header += [f"{label} [{LEVEL}%]", f"`{reference}` minus it [{LEVEL}%]"]
        lines += [f"`{split}`, k = {shots}:", ""]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for learner in dict.fromkeys(c.learner for c in group):
            cells = [learner, ""]
            for metric, _ in METRICS:
                found = [c for c in group if c.learner == learner and c.metric == metric]
                if not found:
                    cells += ["–", "–"]
                    continue
                c = found[0]
                cells[1] = str(c.n)
                cells.append(f"{c.mean:.3f} [{c.interval[0]:.3f}, {c.interval[1]:.3f}]")
                if c.difference is None:
                    cells.append("")
                else:
                    low, high = c.difference_interval
                    cells.append(f"{c.difference:+.3f} [{low:+.3f}, {high:+.3f}]")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines
