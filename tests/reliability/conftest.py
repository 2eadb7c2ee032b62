"""Fixtures for the reliability suites: the app in this process on a loopback port, with canned
arena definitions (and, where a test asks, a fake LM run that echoes its input back)."""

from __future__ import annotations

import json
import types

import pytest

from backends.inputs import check_definition, check_examples, check_real_word, check_word
from backends.neighbours import Neighbour
from demo.settings import DemoSettings
from tests.tools.loadtest import launch, open_limits

FAST = ("centroid", "prompting")


def echo_run_learn(word, examples, learners, definition=None, real_word=None, **_kwargs):
    """Stands in for the LM: each 'definition' repeats the hostile input, markup and all.
    It checks its inputs as the library's learn does, so refusals stay the library's."""
    word = check_word(word)
    check_examples(word, list(examples))
    check_definition(definition)
    real_word = check_real_word(real_word, word)
    rows = [
        types.SimpleNamespace(
            learner=name,
            definition=f"{word} <script>alert(1)</script> **{examples[0][:80]}**",
            # a learner's note is shown on its card too: it echoes the input as well
            embedding=types.SimpleNamespace(seconds=0.01, info={"note": f"{word} <b>note</b>"}),
            # and so are its nearest tokens, named on the card
            neighbours={"input": [Neighbour(f" {word}<i>", 1, 0.5)]},
        )
        for name in learners
    ]
    known = None
    if real_word:  # its card shows the oracles' definitions: they echo the input as well
        echo = f"{real_word} <script>alert(2)</script> **{examples[0][:80]}**"
        known = types.SimpleNamespace(
            word=real_word,
            definitions={"oracle": echo, "oracle_in_context": echo},
            says_itself={"oracle": True, "oracle_in_context": False},
            similarity=dict.fromkeys(learners, 0.5),
            rank=dict.fromkeys(learners, 12),
            ranked_among=77636,
        )
    return types.SimpleNamespace(
        word=word, lm="gemma-3-270m", device="cpu", results=rows, timings={}, known=known
    )


def echo_run_battle(item, learners, **_kwargs):
    """Stands in for a sampled battle: each 'definition' repeats the hostile input."""
    return {
        name: f"{item.word} <script>alert(1)</script> **{item.examples[0][:80]}**"
        for name in learners
    }


@pytest.fixture
def no_model(monkeypatch):
    """Learn and battles answer at once with echoed definitions; no plots are drawn."""
    import demo.arena
    import demo.engine
    from demo.callbacks import Callbacks

    monkeypatch.setattr(demo.arena, "run_battle", echo_run_battle)
    monkeypatch.setattr(demo.engine, "run_learn", echo_run_learn)
    monkeypatch.setattr(demo.engine, "set_up_lm", lambda *a, **k: None)
    monkeypatch.setattr(Callbacks, "_plots", lambda self, view, space: {})


def small_pool(folder):
    pool = folder / "pool.jsonl"
    rows = [{"word": w, "examples": [f"A {w} sat here."]} for w in ("blick", "dax", "fep")]
    pool.write_text("\n".join(json.dumps(r) for r in rows))
    return pool


def settings_in(folder, db: str | None = None, **changes) -> DemoSettings:
    base = DemoSettings(
        cache_dir=folder,
        db=db or str(folder / "votes.sqlite"),
        arena_learners=FAST,
        arena_items=small_pool(folder),
        **open_limits(),
        leaderboard_rounds=10,
    )
    return base.with_(**changes)


@pytest.fixture
def app_factory():
    """launch(settings) -> (url, callbacks); every app is closed after the test."""
    opened = []

    def start(settings: DemoSettings):
        url, callbacks, app = launch(settings)
        opened.append((app, callbacks))
        return url, callbacks

    yield start
    for app, callbacks in opened:
        app.close()
        callbacks.close()
