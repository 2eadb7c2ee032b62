"""Battles sample their own definitions (the tiny LM stands in for the real one): seeds and
decoding are stored with each vote, texts do not repeat, and the reveal names the real word."""

from __future__ import annotations

import json

import pytest

import backends.pipeline
from demo.callbacks import Callbacks
from demo.identity import Who
from demo.settings import DemoSettings, RateLimit

ALICE = Who(session="alice-session")


@pytest.fixture
def cb(tmp_path, monkeypatch, tiny_lm):
    monkeypatch.setattr(backends.pipeline, "load_lm", lambda *a, **k: tiny_lm)
    pool = tmp_path / "pool.jsonl"
    row = {"word": "blick", "examples": ["the blick sang at night ."], "answer": "bird"}
    pool.write_text(json.dumps(row))
    open_limit = RateLimit(per_minute=600, burst=100)
    settings = DemoSettings(
        cache_dir=tmp_path,
        arena_learners=("centroid", "prompting"),
        arena_items=pool,
        battle_limit=open_limit,
        address_battle_limit=open_limit,
        leaderboard_rounds=10,
    )
    callbacks = Callbacks(settings)
    yield callbacks
    callbacks.close()


def test_each_battle_samples_new_texts_and_stores_how(cb):
    shown = [cb.battle_pool(ALICE) for _ in range(8)]
    battles = [cb.store.get_battle(s["battle_id"]) for s in shown]
    assert len({b.seed for b in battles}) == 8
    assert all(
        json.loads(b.decoding) == json.loads(cb.settings.arena_decoding.as_json()) for b in battles
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
