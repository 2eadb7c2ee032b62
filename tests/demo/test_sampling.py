"""Battle definitions sampled per battle through the library's decoding: seeded, different
per seed, stored whole so a battle can be generated again."""

from __future__ import annotations

import json

import pytest

from backends.definitions import CUT_MARK, DEFAULT_DECODING, MARK_LEVEL, Definition, define
from backends.inputs import check_examples
from backends.learners import load_learner
from demo.sampling import ArenaSampling, define_sampled, replay

EXAMPLES = ["the bird sang at night .", "my daughter fed the bird some bread ."]


@pytest.fixture(scope="module")
def embeddings(tiny_lm):
    checked = check_examples("bird", EXAMPLES)
    return [
        load_learner(name).learn(tiny_lm, "bird", checked) for name in ("centroid", "prompting")
    ]


def test_the_same_seed_gives_the_same_texts_and_other_seeds_others(tiny_lm, embeddings):
    sampling = ArenaSampling(temperature=1.0, top_k=0, max_new_tokens=12)
    first = define_sampled(tiny_lm, embeddings, sampling.decoding(11), 12)
    assert define_sampled(tiny_lm, embeddings, sampling.decoding(11), 12) == first
    others = {
        tuple(define_sampled(tiny_lm, embeddings, sampling.decoding(s), 12)) for s in range(6)
    }
    assert len(others) == 6  # six seeds, six different pairs of texts


def test_top_k_one_is_the_librarys_greedy_decoding(tiny_lm, embeddings):
    greedy = [d.text for d in define(tiny_lm, embeddings, 8, decoding=DEFAULT_DECODING)]
    one = ArenaSampling(temperature=0.7, top_k=1, max_new_tokens=8)
    assert define_sampled(tiny_lm, embeddings, one.decoding(1), 8) == greedy
    assert define_sampled(tiny_lm, embeddings, one.decoding(2), 8) == greedy


def test_a_stored_decoding_replays_the_battle(tiny_lm, embeddings):
    sampling = ArenaSampling(temperature=0.9, top_k=20, max_new_tokens=10)
    stored = sampling.as_json(seed=77)
    record = json.loads(stored)
    assert (record["seed"], record["temperature"], record["top_k"]) == (77, 0.9, 20)
    assert record["ban_word"] is True and record["max_new_tokens"] == 10  # library defaults kept
    decoding, budget, mark_cut = replay(stored)
    assert decoding == sampling.decoding(77) and budget == 10 and mark_cut == MARK_LEVEL
    shown = define_sampled(tiny_lm, embeddings, sampling.decoding(77), 10)
    assert define_sampled(tiny_lm, embeddings, decoding, budget, mark_cut) == shown


def test_a_cut_definition_is_shown_cut_and_old_votes_replay_unmarked(tiny_lm, embeddings):
    decoding = ArenaSampling(temperature=1.0, top_k=0, max_new_tokens=3).decoding(3)
    marked = define_sampled(tiny_lm, embeddings, decoding, 3)
    plain = define_sampled(tiny_lm, embeddings, decoding, 3, mark_cut=False)
    assert any(m != p for m, p in zip(marked, plain))  # three tokens of a random LM: cut
    assert all(m in (p, p + CUT_MARK) for m, p in zip(marked, plain))
    stored = json.loads(ArenaSampling().as_json(seed=5))
    del stored["mark_cut"]  # a vote stored before the mark
    assert replay(json.dumps(stored))[2] is False


def test_a_decoding_stored_before_the_once_rule_replays_without_it():
    # votes stored before `word_uses` and `block_slurs` existed were generated without them
    stored = ArenaSampling(temperature=0.9, top_k=20, max_new_tokens=10).as_json(seed=5)
    old = {k: v for k, v in json.loads(stored).items() if k not in ("word_uses", "block_slurs")}
    decoding, _, _ = replay(json.dumps(old))
    assert (decoding.word_uses, decoding.block_slurs, decoding.seed) == (0, False, 5)
    assert replay(stored)[0].word_uses == 1  # a new vote keeps what it used


def test_sampling_settings_are_checked():
    for bad in ({"temperature": 0}, {"temperature": -1}, {"top_k": -1}, {"max_new_tokens": 0}):
        with pytest.raises(ValueError):
            ArenaSampling(**bad)


def test_a_line_break_inside_an_open_bracket_is_shown_cut_from_the_second_level():
    # sampled for a battle, prompting wrote 'a 12-bit wide (10 bits) or 16-to 32-byte
    # (three to four' and a line break: shown whole, as if the bracket had closed
    text = "a 12-bit wide (10 bits) or 16-to 32-byte (three to four"
    broken = Definition("prompting", "florp", text, text + "\ndecimal")
    assert broken.shown == broken.marked(2) == text + CUT_MARK
    assert broken.marked(True) == broken.marked(0) == text  # votes stored at level 1 replay so
    closed = Definition("prompting", "florp", "a unit (of length).", "a unit (of length).")
    assert closed.shown == closed.text
    budget = Definition("college", "florp", 'a "sleep" or "in', 'a "sleep" or "in', finished=False)
    assert budget.marked(True) == budget.shown == budget.text + CUT_MARK
