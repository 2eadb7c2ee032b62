"""Integrity: votes only for battles the server created, once each; no learner name before the
vote; per-annotator rate limits; exports carry pseudonymous annotator ids and no secrets."""

from __future__ import annotations

import json
import re
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from demo.exports import EXPORT_FIELDS
from demo.settings import RateLimit
from tests.reliability.conftest import FAST, settings_in
from tests.tools.loadtest import client_of

pytestmark = pytest.mark.integration

NEUTRAL = {"centroid": "a small bird", "prompting": "a kind of tool"}  # name nothing


def _raw_call(url: str, api: str, data: list) -> str:
    """The whole server-sent-event stream of one API call, as the browser would receive it."""
    body = json.dumps({"data": data}).encode()
    request = urllib.request.Request(url + f"gradio_api/call/{api}", data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as reply:
        event_id = json.loads(reply.read())["event_id"]
    with urllib.request.urlopen(url + f"gradio_api/call/{api}/{event_id}", timeout=30) as reply:
        return reply.read().decode()


def test_no_learner_name_before_the_vote(tmp_path, app_factory):
    url, callbacks = app_factory(settings_in(tmp_path))
    callbacks.arena.prefill(callbacks.arena.pool, NEUTRAL)
    stream = _raw_call(url, "battle_pool", [None])
    assert "process_completed" in stream or "complete" in stream
    for name in FAST:
        assert name not in stream, f"the battle reveals {name!r} before the vote"
    client = client_of(url)
    shown = client.predict(None, api_name="/battle_pool")
    assert not any(name in json.dumps(shown) for name in FAST)
    reveal = client.predict(shown[0], None, api_name="/vote_a")
    assert all(name in json.dumps(reveal) for name in FAST)  # named only after the vote


def test_each_battle_takes_one_vote_even_under_a_race(tmp_path, app_factory):
    url, callbacks = app_factory(settings_in(tmp_path))
    callbacks.arena.prefill(callbacks.arena.pool, NEUTRAL)
    client = client_of(url)
    battle_id = client.predict(None, api_name="/battle_pool")[0]

    def vote(_):
        try:
            return client.predict(battle_id, None, api_name="/vote_b")
        except Exception as err:  # noqa: BLE001
            return f"error: {err}"

    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(vote, range(10)))
    # one vote stored; the nine that lost the race are told it stands, not an error
    assert callbacks.store.count_votes() == 1
    assert sum(r.startswith("Thanks") for r in results) == 1
    assert sum(r.startswith("You had already judged this battle") for r in results) == 9
    with pytest.raises(Exception, match="unknown battle"):
        client.predict("A" * 22, None, api_name="/vote_a")  # a well-formed but forged id
    with pytest.raises(Exception, match="another annotator"):
        client_of(url).predict(
            client.predict(None, api_name="/battle_pool")[0], None, api_name="/vote_a"
        )


def test_rate_limits_per_annotator(tmp_path, app_factory):
    few = RateLimit(per_minute=1, burst=3)
    url, callbacks = app_factory(settings_in(tmp_path, vote_limit=few, battle_limit=few))
    callbacks.arena.prefill(callbacks.arena.pool, NEUTRAL)
    client = client_of(url)
    battles = [client.predict(None, api_name="/battle_pool")[0] for _ in range(3)]
    with pytest.raises(Exception, match=r"Too many new battles in a short time \(per annotator"):
        client.predict(None, api_name="/battle_pool")
    for battle_id in battles:
        client.predict(battle_id, None, api_name="/vote_tie")
    other = client_of(url)  # someone else (address limits open here) is not held up
    assert other.predict(None, api_name="/battle_pool")[0]
    assert callbacks.store.count_votes() == 3


def test_forged_ids_and_rotation_gain_nothing_from_one_address(tmp_path, app_factory):
    """A script that makes up a browser id per call, and opens a new session per battle, gets
    no identity it chose and no more than one person's battles from one address."""
    few = RateLimit(per_minute=1, burst=4)
    settings = settings_in(tmp_path, battle_limit=few, address_battle_limit=few)
    url, callbacks = app_factory(settings)
    callbacks.arena.prefill(callbacks.arena.pool, NEUTRAL)
    client = client_of(url)
    ids = [client.predict(f"forged-{k}", api_name="/battle_pool")[0] for k in range(2)]
    annotators = {callbacks.store.get_battle(b).annotator for b in ids}
    assert len(annotators) == 1  # two made-up ids, one session: one annotator
    client.predict(ids[0], "yet-another-forged-id", api_name="/vote_a")  # same person votes
    outcomes = []
    for k in range(6):
        try:
            client_of(url).predict(f"rotated-{k}", api_name="/battle_pool")
            outcomes.append("battle")
        except Exception as err:  # noqa: BLE001 — gradio_client's AppError carries our message
            assert "per address" in str(err), str(err)
            outcomes.append("refused")
    assert outcomes == ["battle", "battle"] + ["refused"] * 4
    assert client.predict(api_name="/leaderboard")  # the server still answers


def test_export_is_pseudonymous_and_carries_no_secrets(tmp_path, app_factory):
    salt = "s3cret-salt-for-the-test"
    url, callbacks = app_factory(settings_in(tmp_path, id_salt=salt))
    callbacks.arena.prefill(callbacks.arena.pool, NEUTRAL)
    raw_ids = ["browser-id-of-alice", "bob@example.org"]
    for raw in raw_ids:
        client = client_of(url)
        battle_id = client.predict(raw, api_name="/battle_pool")[0]
        client.predict(battle_id, raw, api_name="/vote_a")
    session_client = client_of(url)
    battle_id = session_client.predict(None, api_name="/battle_pool")[0]
    session_client.predict(battle_id, None, api_name="/vote_b")
    path = client_of(url).predict("jsonl", "all", api_name="/export")[0]
    text = open(path, encoding="utf-8").read()
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 3
    assert all(re.fullmatch(r"(anon|hf):[0-9a-f]{20}", r["annotator"]) for r in rows)
    assert len({r["annotator"] for r in rows}) == 3
    for secret in [*raw_ids, salt, session_client.session_hash, "127.0.0.1", str(tmp_path)]:
        assert secret not in text, f"the export carries {secret!r}"
    assert tuple(rows[0]) == EXPORT_FIELDS
    assert {"decoding", "seed", "answer"} <= set(rows[0])  # how each battle's texts were made
