"""Load: concurrent annotators vote through the running app's API; every acknowledged vote is
stored exactly once, on SQLite and on PostgreSQL. The full-size run (50 annotators, 10 000
votes, Learn under 5 users) is `slow`; a small run checks the same mechanisms every time."""

from __future__ import annotations

import os

import pytest

from demo.settings import RateLimit
from tests.reliability.conftest import settings_in
from tests.tools.loadtest import drive_learn, drive_votes, failures, main, percentile, stored_check
from tests.tools.pgtemp import TempPostgres, missing_reason

pytestmark = pytest.mark.integration

needs_postgres = pytest.mark.skipif(missing_reason() is not None, reason=str(missing_reason()))


def _check_run(url, callbacks, annotators: int, votes: int, timeout: float) -> dict:
    run = drive_votes(url, annotators, votes, timeout)
    figures = stored_check(callbacks.store, run.acked)
    rate = len(run.acked) / run.wall
    p50, p95 = percentile(run.vote_seconds, 50), percentile(run.vote_seconds, 95)
    print(
        f"\n{annotators} annotators: {figures}, {rate:.1f} votes/s, "
        f"p50 {p50:.3f} s, p95 {p95:.3f} s"
    )
    assert not run.errors, run.errors
    assert figures["acknowledged"] == votes == figures["stored_once"] == figures["rows_in_store"]
    assert figures["duplicated"] == figures["missing"] == 0
    board = callbacks.boards.board("human")
    assert board.votes == votes and sum(r.battles for r in board.ratings.rows) == 2 * votes
    return figures


def test_the_driver_fails_on_any_failed_or_unacknowledged_call(tmp_path, app_factory, capsys):
    """`make load` must not pass when calls fail: here the app refuses all but 3 battles."""
    few = RateLimit(per_minute=1, burst=3)
    url, callbacks = app_factory(settings_in(tmp_path, battle_limit=few))
    argv = ["--url", url, "--annotators", "1", "--votes", "6", "--timeout", "120"]
    assert main(argv) == 1
    report = capsys.readouterr()
    assert "FAILED: 3 calls failed" in report.err and "6 votes asked, 3 acknowledged" in report.err
    assert callbacks.store.count_votes() == 3
    clean = {"votes_asked": 4, "acked": 4, "errors": {}, "missing": 0, "duplicated": 0}
    assert failures(clean) == []
    assert failures({**clean, "acked": 3}) == ["4 votes asked, 3 acknowledged"]
    assert failures({**clean, "missing": 1}) == ["1 acknowledged votes missing in the store"]
    assert failures({"learn_users": 2, "learn_clicks_asked": 2, "learn_clicks": 3})


def test_small_load_on_sqlite(tmp_path, app_factory):
    url, callbacks = app_factory(settings_in(tmp_path))
    _check_run(url, callbacks, annotators=5, votes=200, timeout=240)


@needs_postgres
def test_small_load_on_postgres(tmp_path, app_factory):
    with TempPostgres() as pg:
        url, callbacks = app_factory(settings_in(tmp_path, db=pg.url))
        _check_run(url, callbacks, annotators=5, votes=200, timeout=240)
        callbacks.close()


@pytest.mark.slow
def test_full_load_on_sqlite(tmp_path, app_factory):
    url, callbacks = app_factory(settings_in(tmp_path))
    _check_run(url, callbacks, annotators=50, votes=10_000, timeout=3600)


@pytest.mark.slow
@needs_postgres
def test_full_load_on_postgres(tmp_path, app_factory):
    with TempPostgres() as pg:
        url, callbacks = app_factory(settings_in(tmp_path, db=pg.url))
        _check_run(url, callbacks, annotators=50, votes=10_000, timeout=3600)
        callbacks.close()


@pytest.mark.slow
def test_learn_latency_under_five_users(tmp_path, app_factory):
    """The real default LM with fast learners; Learn runs one at a time, so the others queue."""
    url, _callbacks = app_factory(settings_in(tmp_path))
    learners = ("centroid", "prompting", "definition_reader")
    drive_learn(url, 1, 1, learners, timeout=600)  # warm-up: loads the LM
    clicks = int(os.environ.get("NONCE_LEARN_CLICKS", "2"))
    seconds = drive_learn(url, 5, clicks, learners, timeout=1800)
    print(
        f"\nLearn x{len(seconds)}: p50 {percentile(seconds, 50):.2f} s, "
        f"p95 {percentile(seconds, 95):.2f} s"
    )
    assert len(seconds) == 5 * clicks  # every click came back (a failed one raises)
    assert 0 < percentile(seconds, 50) <= percentile(seconds, 95) < 1800
