"""DefGen's paired bootstrap intervals (benchmarks/intervals.py), on hand-made records."""

import numpy as np
import pytest

from benchmarks.intervals import bootstrap_interval, compare, newest_rows, render


def _run(rows, date="2026-11-01", data="benchmarks/sets/defgen.dev.jsonl", offset=0):
    return {
        "task": "defgen", "data": data, "date": date, "settings": {"offset": offset},
        "results": rows,
    }  # fmt: skip


def _row(learner, identified, bertscore=None, shots=3, words=None):
    words = words or [f"w{i}" for i in range(len(identified))]
    bertscore = bertscore or [0.3] * len(identified)
    samples = [
        {"item": i, "word": w, "identified": float(a), "bertscore_f1": b}
        for i, (w, a, b) in enumerate(zip(words, identified, bertscore))
    ]
    return {"learner": learner, "shots": shots, "n": len(samples), "samples": samples}


def test_interval_of_a_constant_is_that_constant_and_a_spread_mean_is_inside():
    assert bootstrap_interval(np.full(50, 0.4)) == pytest.approx((0.4, 0.4))
    values = np.array([0.0, 1.0] * 50)  # mean 0.5 over 100 items: about +-0.1
    low, high = bootstrap_interval(values)
    assert 0.38 < low < 0.5 < high < 0.62
    assert bootstrap_interval(values) == bootstrap_interval(values)  # seeded


def test_a_paired_lead_is_sure_where_two_means_side_by_side_overlap():
    # a hard word is hard for both: on the same 40 items b is right wherever a is, plus
    # 6 more. Alone, their intervals overlap; paired, the lead's interval excludes 0.
    rng = np.random.default_rng(1)
    a = (rng.random(40) < 0.4).astype(float)
    b = a.copy()
    b[np.flatnonzero(a == 0)[:6]] = 1.0
    low_a, high_a = bootstrap_interval(a)
    low_b, _ = bootstrap_interval(b)
    assert low_b < high_a  # unpaired, they overlap
    low, high = bootstrap_interval(b - a)
    assert 0 < low <= high


def test_rows_pair_across_records_by_item_and_the_newest_row_is_read():
    old = _run([_row("college", [0, 0, 0, 0])], date="2026-11-01")
    new = _run([_row("college", [1, 1, 1, 0]), _row("oracle", [1, 1, 1, 1])], date="2026-11-02")
    other = _run([_row("centroid", [0, 1, 0, 0])], date="2026-10-01")
    held = _run([_row("college", [1, 0])], data="benchmarks/sets/defgen.test.jsonl")
    rows = newest_rows([old, new, other, held])
    assert rows["benchmarks/sets/defgen.dev.jsonl", 3, "college"]["samples"][0]["identified"] == 1
    found = compare([old, new, other, held], "college", ["centroid", "college"])
    dev = {c.learner: c for c in found if "dev" in c.split and c.metric == "identified"}
    assert dev["college"].mean == 0.75 and dev["college"].difference is None
    assert dev["centroid"].difference == pytest.approx(0.5)  # items 0 and 2 are college's
    assert dev["oracle"].difference == pytest.approx(-0.25)  # the oracle always rides along
    held_rows = [c for c in found if "test" in c.split and c.metric == "identified"]
    assert [c.learner for c in held_rows] == ["college"]  # no other learner ran there
    text = "\n".join(render(found, "college"))
    assert "`benchmarks/sets/defgen.dev.jsonl`, k = 3:" in text
    assert "| centroid | 4 | 0.250 [" in text and "| +0.500 [" in text


def test_items_pair_only_when_they_are_the_same_word():
    a = _run([_row("college", [1, 1, 0], words=["cat", "dog", "emu"])])
    b = _run([_row("centroid", [0, 0, 0], words=["cat", "dig", "emu"])])
    found = compare([a, b], "college", ["centroid"])
    centroid = next(c for c in found if c.learner == "centroid" and c.metric == "identified")
    assert centroid.n == 2 and centroid.difference == pytest.approx(0.5)


def test_records_without_per_item_definitions_are_left_out():
    bare = _run([{"learner": "college", "shots": 3, "n": 30, "identified": 0.4, "samples": [{}]}])
    assert compare([bare], "college", []) == []
    assert compare([{"task": "chimera", "results": []}], "college", []) == []
