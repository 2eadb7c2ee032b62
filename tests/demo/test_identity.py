"""Identities a client cannot choose, and limits per annotator and per client address."""

from __future__ import annotations

import json

import pytest

from demo.callbacks import Callbacks
from demo.identity import Identities, Who, client_address
from demo.ratelimit import RateLimited, TokenBuckets
from demo.settings import DemoSettings, RateLimit

IDS = Identities(secret="test-secret", salt="s")


def test_issued_ids_verify_and_forged_ones_do_not():
    token = IDS.issue()
    raw, mac = token.split(".")
    assert IDS.verify(token) == raw and IDS.ensure(token) == token
    other_server = Identities(secret="another secret", salt="s")
    forged = [
        "alice-browser",  # the old unsigned kind
        f"{raw}.{'0' * 32}",  # a made-up signature
        f"{raw}x.{mac}",  # a signature moved to another id
        other_server.issue(),  # signed with another key
        token + "." + "a" * 200,  # too long: refused before any HMAC
        "wu\ud800g." + mac,  # a lone surrogate cannot even be encoded
        None,
        42,
    ]
    for sent in forged:
        assert IDS.verify(sent) is None, sent
        fresh = IDS.ensure(sent)
        assert fresh != sent and IDS.verify(fresh) is not None


def test_a_forged_id_counts_as_its_session_and_cannot_pick_an_identity():
    session_only = IDS.annotator(Who(session="s1"))
    assert IDS.annotator(Who(browser_id="forged-1", session="s1")) == session_only
    assert IDS.annotator(Who(browser_id="forged-2", session="s1")) == session_only
    assert IDS.annotator(Who(browser_id="forged-1", session="s2")) != session_only
    token = IDS.issue()  # a signed id is the same person in every session
    assert IDS.annotator(Who(browser_id=token, session="s1")) == IDS.annotator(
        Who(browser_id=token, session="s9")
    )
    with pytest.raises(ValueError, match="cannot tell who"):
        IDS.annotator(Who(browser_id="forged"))


def test_logins_keep_hashed_hf_ids():
    alice = IDS.annotator(Who(hf_user="alice", browser_id=IDS.issue(), session="x"))
    assert alice.startswith("hf:") and "alice" not in alice
    assert alice == IDS.annotator(Who(hf_user="alice"))
    assert alice != Identities(secret="test-secret", salt="other").annotator(Who(hf_user="alice"))


def test_client_address_trusts_the_forwarded_header_only_when_told():
    assert client_address("10.0.0.1", "203.0.113.9, 10.0.0.2", trust_forwarded=True) == (
        "203.0.113.9"
    )
    assert client_address("10.0.0.1", "203.0.113.9", trust_forwarded=False) == "10.0.0.1"
    assert client_address(None, None, trust_forwarded=True) == "unknown"
    assert len(client_address("1" * 500, None, trust_forwarded=False)) == 64


def test_buckets_refill_evict_and_refuse_without_spending():
    now = [0.0]
    limit = RateLimit(per_minute=60, burst=2)  # one token per second
    buckets = TokenBuckets({"annotator": limit, "address": limit}, "votes", clock=lambda: now[0])
    buckets.take(annotator="x", address="h1")
    buckets.take(annotator="x", address="h2")
    with pytest.raises(RateLimited, match="per annotator"):
        buckets.take(annotator="x", address="h3")
    assert len(buckets) == 3  # the refused take spent nothing and made no bucket for h3
    now[0] = 0.9  # a tenth of a second from the next token: said as 1 s, never "in 0 s"
    with pytest.raises(RateLimited, match=r"try again in 1 s\.$"):
        buckets.take(annotator="x", address="h3")
    now[0] = 1.0
    buckets.take(annotator="x", address="h3")
    now[0] = 1000.0  # idle far longer than a refill: the next take sweeps them all out
    buckets.take(annotator="y")
    assert len(buckets) == 1
    with pytest.raises(ValueError, match="unknown limit scope"):
        buckets.take(person="x")


def test_rotating_ids_from_one_address_stays_within_one_persons_limit(tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"word": "blick", "examples": ["A blick sat on the fence."]}))
    few = RateLimit(per_minute=1, burst=3)
    settings = DemoSettings(
        cache_dir=tmp_path,
        arena_learners=("centroid", "prompting"),
        arena_items=pool,
        battle_limit=few,
        vote_limit=few,
        address_battle_limit=few,
        address_vote_limit=few,
    )
    cb = Callbacks(settings)
    cb.arena.prefill(cb.arena.pool, {"centroid": "x", "prompting": "y"})
    shown, refused = [], 0
    for k in range(12):  # a fresh signed id and a fresh session every time, one address
        who = Who(browser_id=cb.browser_id(None), session=f"s{k}", address="198.51.100.7")
        try:
            shown.append((cb.battle_pool(who)["battle_id"], who))
        except RateLimited as err:
            assert "per address" in str(err)
            refused += 1
    assert len(shown) == 3 and refused == 9
    for battle_id, who in shown:
        cb.vote(battle_id, "a", who)
    elsewhere = Who(browser_id=cb.browser_id(None), address="192.0.2.1")
    assert cb.battle_pool(elsewhere)["battle_id"]  # another machine is not held up
    assert cb.store.count_votes() == 3
    cb.close()
