"""The real page in headless Chromium: Learn, two arena votes by keyboard shortcut, the
leaderboard with agreement (between people, and with the automatic judge), the
style-controlled board and the boards by part of speech (tests/browser/)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from demo.items import arena_pool
from demo.settings import DemoSettings
from tests.tools.loadtest import launch

pytestmark = [pytest.mark.browser, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "browser" / "flow.mjs"
CHROMIUM = Path("/usr/bin/chromium")
FAST = ("centroid", "prompting")


def _missing() -> str | None:
    if not CHROMIUM.exists():
        return "no /usr/bin/chromium (apt-get install -y chromium)"
    if shutil.which("node") is None:
        return "no node on PATH"
    if not (ROOT / "tests" / "browser" / "node_modules" / "playwright-core").is_dir():
        return "no playwright-core: run `npm install` in tests/browser"
    return None


@pytest.mark.skipif(_missing() is not None, reason=str(_missing()))
def test_learn_vote_and_leaderboard_in_chromium(tmp_path):
    settings = DemoSettings(
        cache_dir=tmp_path, learn_learners=FAST, arena_learners=FAST, leaderboard_rounds=20
    )
    url, callbacks, app = launch(settings, canned=False)
    artifacts = ROOT / "test-artifacts" / "browser"
    try:
        run = subprocess.run(
            ["node", str(SCRIPT), url, str(artifacts)],
            capture_output=True,
            text=True,
            timeout=420,
        )
    finally:
        app.close()
        callbacks.close()
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(run.stdout.strip().splitlines()[-1])
    assert "0 votes" in report["before"] and "2 votes" in report["after"]
    assert all(name in report["cards"] for name in FAST)
    assert "The real word: “bird”" in report["cards"]  # the ceiling's card, beside them
    assert "<img src=x" in report["shownSentences"] and report["xss"] is None
    assert "How to judge" in report["guidelines"]
    # keyboard and screen readers (demo/guidelines.py's script)
    assert report["a11y"] == {"readOnly": True, "disabled": False, "live": "polite", "keys": "A"}
    assert report["focusAfterVote"] == "battle-pool" and report["switchedOff"] is True
    # the keyboard voted: A on the first battle, N for the next one, T on it
    assert "A is better" in report["reveal"]
    assert "You have judged 1 battle" in report["reveal"]
    assert report["changed"] and "a tie" in report["secondReveal"]
    assert "You have judged 2 battles" in report["secondReveal"]
    assert "Inter-annotator agreement" in report["after"]
    # the second battle was on a prepared word; one with a real word behind it (all but the
    # hand-written ones) carries a reference gloss, so the judge gave its verdict on it
    [shown] = [i for i in arena_pool(settings.arena_items) if i.word == report["nextWord"]]
    judged = "on 1 battle it judged" if shown.answer else "no battle it judged yet"
    judge_line = "Agreement with the automatic judge (the tournament's reader, on prepared words): "
    assert judge_line in report["after"] and judged in report["after"]
    # the noun board holds the second vote only if that word is a noun (own words have no POS)
    assert f"— {int(shown.pos == 'noun')} vote" in report["nounNote"]
    assert all(name in report["styleTable"] for name in FAST)
    assert "length difference held fixed" in report["styleNote"]
    for shot in ("learn.png", "arena.png", "leaderboard.png"):
        assert (artifacts / shot).stat().st_size > 10_000
