"""The launch-time warm-up: the first ready example learned once on a background thread, so
the first person to press Learn does not wait for the LM and the learners to load."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest

from backends.settings import resolve_device
from demo import engine, gpu
from demo.callbacks import Callbacks
from demo.settings import DemoSettings, load_demo_settings

FAST = ("centroid", "prompting")
WUG = {"word": "wug", "examples": ["A wug is a small bird.", "The wug sang all night."]}


def settings_with(tmp_path, examples: list[dict]) -> DemoSettings:
    path = tmp_path / f"examples-{len(examples)}.json"  # ready_examples is cached by path
    path.write_text(json.dumps(examples))
    return DemoSettings(cache_dir=tmp_path, examples=path, learn_learners=FAST)


def test_warm_up_is_on_by_default_and_read_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NONCE_WARM_UP", raising=False)
    assert load_demo_settings().warm_up is True
    monkeypatch.setenv("NONCE_WARM_UP", "0")
    assert load_demo_settings().warm_up is False
    monkeypatch.setenv("NONCE_WARM_UP", "later")
    with pytest.raises(ValueError, match="NONCE_WARM_UP"):
        load_demo_settings()


@pytest.mark.integration
def test_warm_up_loads_the_lm_and_learns_with_each_learner():
    done = engine.warm_up(WUG["word"], WUG["examples"], FAST)
    assert done == len(FAST) + 3  # the LM, each learner, the map, the real word's lemmas
    assert (engine.lm_name(None), resolve_device("auto")) in engine._loaded  # a click skips set-up


def test_a_request_waiting_for_the_lm_is_counted_until_it_has_it():
    engine._LM_LOCK.acquire()  # as a warm-up step holds it
    try:
        person = threading.Thread(target=_take_a_turn)
        person.start()
        deadline = time.monotonic() + 10
        while engine._people_waiting != 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert engine._people_waiting == 1
    finally:
        engine._LM_LOCK.release()
    person.join(timeout=10)
    assert engine._people_waiting == 0 and not engine._LM_LOCK.locked()


def _take_a_turn() -> None:
    with engine.lm_turn():
        pass


def test_the_warm_up_gives_way_to_a_person_waiting_for_the_lm(monkeypatch):
    monkeypatch.setattr(engine, "_people_waiting", 1)  # a Learn click is waiting
    assert engine.warm_up(WUG["word"], WUG["examples"], FAST) == 0  # not a step taken


@pytest.mark.integration
def test_a_click_during_the_warm_up_is_answered(tmp_path, caplog):
    callbacks = Callbacks(settings_with(tmp_path, [WUG]))
    try:
        with caplog.at_level(logging.INFO, logger="demo.engine"):
            thread = callbacks.warm_up_in_background()
            assert thread is not None and thread.name == "warm-up"
            shown = callbacks.learn(
                "blick", "A blick sat on the fence.", "", list(FAST), "gemma-3-270m", "cpu", "input"
            )
            thread.join(timeout=600)
        assert not thread.is_alive()
        # it finished first, or stopped at its next step once the click waited
        assert "warmed up in" in caplog.text or "warm-up gave way to a person" in caplog.text
        assert all(name in shown["cards"] for name in FAST)
    finally:
        callbacks.close()


@pytest.mark.integration
def test_a_failed_warm_up_is_logged_and_leaves_the_app_running(tmp_path, caplog):
    # a ready example whose sentences do not use its word: the library refuses it
    broken = {"word": "wug", "examples": ["A small bird sang all night."]}
    callbacks = Callbacks(settings_with(tmp_path, [broken]))
    try:
        with caplog.at_level(logging.INFO, logger="demo.engine"):
            thread = callbacks.warm_up_in_background()
            thread.join(timeout=600)
        assert "warm-up failed (InputError" in caplog.text
        assert "warmed up in" not in caplog.text
    finally:
        callbacks.close()


def test_no_warm_up_without_a_ready_example_or_on_a_zerogpu_space(tmp_path, monkeypatch, caplog):
    callbacks = Callbacks(settings_with(tmp_path, []))
    try:
        assert callbacks.warm_up_in_background() is None
    finally:
        callbacks.close()
    unknown = settings_with(tmp_path, [WUG]).with_(learn_learners=("centroid", "telepathy"))
    callbacks = Callbacks(unknown)
    try:
        with caplog.at_level(logging.WARNING, logger="demo.callbacks"):
            assert callbacks.warm_up_in_background() is None
        assert "no warm-up: unknown learner 'telepathy'" in caplog.text
    finally:
        callbacks.close()
    # on a ZeroGPU Space (the platform sets SPACES_ZERO_GPU) no GPU is held at launch
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert gpu.on_zero_gpu()
    with caplog.at_level(logging.INFO, logger="demo.engine"):
        assert engine.warm_up_in_background(WUG["word"], WUG["examples"], FAST) is None
    assert "warm-up skipped" in caplog.text
