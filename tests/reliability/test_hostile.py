"""Hostile input at every entry point: the library, the CLIs, the UI callbacks, the HTTP API and
the export. Each input is refused with a clear message or accepted and shown literally; none
gives a traceback, an HTTP 500, stored garbage or typed text rendered as HTML."""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from backends.inputs import check_definition, check_examples, check_word
from backends.learners import parse_learners
from demo.identity import Who
from demo.items import split_sentences
from demo.store import VoteStore
from tests.reliability.conftest import settings_in
from tests.reliability.hostile import (
    ACCEPTED_AS_SENTENCES,
    ACCEPTED_AS_STEPS,
    ACCEPTED_AS_WORD,
    GOOD_SENTENCE,
    NUMBERS,
    REFUSED_AS_DEFINITION,
    TEXTS,
    WORD,
    clear_message,
    crashed,
    expected,
    no_raw_html,
)
from tests.tools.loadtest import client_of

ROOT = Path(__file__).resolve().parents[2]
OUTCOMES: Counter = Counter()  # "entry point: ok|refused" -> hostile inputs
MARKUP = ("status", "cards", "reveal", "export_note", "human_note", "auto_note")  # Markdown


def outcome(call, where: str) -> str:
    """'ok' or 'refused' (a ValueError/RuntimeError with a clear message); any other exception
    is a crash and fails the test."""
    try:
        result = call()
    except (ValueError, RuntimeError) as err:
        assert clear_message(err), f"unclear message: {str(err)[:200]!r}"
        OUTCOMES[f"{where}: refused"] += 1
        return "refused"
    rendered = result if isinstance(result, dict) else {}
    for key in MARKUP:
        assert no_raw_html(rendered.get(key, "")), f"{key} renders HTML: {rendered[key][:200]!r}"
    OUTCOMES[f"{where}: ok"] += 1
    return "ok"


def word_ok(h) -> str:
    return expected(h.name in ACCEPTED_AS_WORD)


def real_word_ok(h) -> str:
    return "ok" if not h.text.strip() else word_ok(h)


def sentences_ok(h) -> str:
    return expected(h.name in ACCEPTED_AS_SENTENCES)


@pytest.fixture(scope="module", autouse=True)
def report_outcomes():
    yield
    print("\nhostile inputs per entry point and outcome: " + json.dumps(dict(OUTCOMES)))


def test_library(monkeypatch, tiny_lm):
    import backends.pipeline as pipeline
    from backends.learners.token_tuning import TokenTuningConfig

    monkeypatch.setattr(pipeline, "load_lm", lambda *a, **k: tiny_lm)
    assert outcome(lambda: pipeline.learn(WORD, [GOOD_SENTENCE], "centroid"), "control") == "ok"
    for h in TEXTS:
        text = h.text
        assert outcome(lambda: check_word(text), "library") == word_ok(h), h.name  # noqa: B023
        as_word = outcome(lambda: pipeline.learn(text, [f"A {text} sat."], "centroid"), "library")  # noqa: B023
        assert as_word == word_ok(h), h.name
        checked = outcome(lambda: check_examples(WORD, split_sentences(text)), "library")  # noqa: B023
        assert checked == sentences_ok(h), h.name
        # with a plain sentence beside it (the tiny LM knows few words to average), learn
        # refuses exactly what its own check refuses
        both = lambda: split_sentences(text) + [GOOD_SENTENCE]  # noqa: B023, E731
        learned = outcome(lambda: pipeline.learn(WORD, both(), "centroid"), "library")  # noqa: B023
        assert learned == outcome(lambda: check_examples(WORD, both()), "library"), h.name  # noqa: B023
        definition = outcome(lambda: check_definition(text), "library")  # noqa: B023
        real = lambda: pipeline.learn(WORD, [GOOD_SENTENCE], "centroid", real_word=text)  # noqa: B023, E731
        assert outcome(real, "library") == real_word_ok(h), h.name
        assert definition == expected(h.name not in REFUSED_AS_DEFINITION), h.name
        assert outcome(lambda: parse_learners(text), "library") == "refused", h.name  # noqa: B023
    for n in NUMBERS:
        steps = outcome(lambda: TokenTuningConfig(steps=n), "library")  # noqa: B023
        assert steps == expected(type(n) is int and n == 0), repr(n)
        k = outcome(lambda: pipeline.learn(WORD, [GOOD_SENTENCE], "centroid", k=n), "library")  # noqa: B023
        assert k == "refused", repr(n)  # none of NUMBERS is a whole number in 1..200


def _cli(main, argv: list[str]) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse: usage and a one-line reason
            code = exit_.code
    return code, err.getvalue()


def _cli_ok(main, argv: list[str], where: str) -> int:
    """Run a CLI in-process: exit 0, or 1/2 with a one-line clear reason; never a traceback."""
    code, err = _cli(main, argv)
    assert code in (0, 1, 2), code
    assert "Traceback" not in err
    if code:
        assert err.strip() and clear_message(err.strip().splitlines()[-1]), err[-300:]
    OUTCOMES[f"{where}: {'ok' if code == 0 else 'refused'}"] += 1
    return code


def test_backends_cli(monkeypatch, tiny_lm):
    import backends.pipeline as pipeline
    from backends.__main__ import main

    real_load = pipeline.load_lm
    monkeypatch.setattr(
        pipeline,
        "load_lm",
        lambda name=None, device="auto": tiny_lm if name is None else real_load(name, device),
    )
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    base = [
        "learn",
        "--word",
        WORD,
        "--example",
        "A wug sat.",
        "--learner",
        "centroid",
        "--device",
        "cpu",
    ]
    fields = (
        "--word",
        "--example",
        "--definition",
        "--learner",
        "--lm",
        "--device",
        "--k",
        "--steps",
    )
    assert _cli_ok(main, base, "control") == 0
    for i, h in enumerate(TEXTS):
        flag = fields[i % len(fields)]
        argv = (
            base + [flag, h.text]
            if flag != "--word"
            else [*base, "--word", h.text, "--example", f"A {h.text} sat."]
        )
        code = _cli_ok(main, argv, "backends CLI")
        if flag == "--word":
            assert (code == 0) == (h.name in ACCEPTED_AS_WORD), h.name
        if flag in ("--learner", "--device", "--k", "--steps"):
            assert code != 0, (flag, h.name)  # no hostile text is a learner, device or number
    for n in NUMBERS:
        k = _cli_ok(main, [*base, "--k", str(n)], "backends CLI")
        assert (k == 0) == (str(n) in (" 5 ", "7")), repr(n)  # argparse's int(), then 1..200
        steps = _cli_ok(main, [*base, "--steps", str(n)], "backends CLI")
        assert (steps == 0) == (str(n) in ("0", " 5 ", "7")), repr(n)  # argparse's int()


@pytest.mark.parametrize(
    "args",
    [
        ["--word", "<script>", "--example", "<script> sat."],
        ["--word", "wug", *sum((["--example", "A wug sat."] for _ in range(1000)), [])],
        ["--word", "wug", "--example", "A wug sat.", "--k", "99999999999"],
    ],
    ids=["script", "1000 sentences", "absurd k"],
)
def test_backends_cli_subprocess(args):
    command = [sys.executable, "-m", "backends", "learn", "--device", "cpu", *args]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1


def test_ui_callbacks(tmp_path, no_model):
    from demo.callbacks import Callbacks

    cb = Callbacks(settings_in(tmp_path))
    cb.arena.prefill(cb.arena.pool, {"centroid": "x <b>y</b>", "prompting": "z"})
    who = Who(browser_id="hostile", session="hostile-session")
    real_battle = cb.battle_pool(who)["battle_id"]
    learn = ["wug", GOOD_SENTENCE, "", ["centroid"], "gemma-3-270m", "cpu", "input", 0]
    battles_made = 1
    for h in TEXTS:
        # each Learn field in turn: word, sentences, definition, learners, LM, device, space
        wanted = [word_ok(h), sentences_ok(h), expected(h.name not in REFUSED_AS_DEFINITION)]
        wanted += ["refused"] * 4
        for slot in range(7):
            args = list(learn)
            args[slot] = [h.text] if slot == 3 else h.text
            if slot == 0:
                args[1] = f"The {h.text} sang."
            assert outcome(lambda: cb.learn(*args), "UI learn") == wanted[slot], (h.name, slot)  # noqa: B023
        # the optional real word: blank is none, else a word as the new one is
        real = outcome(lambda: cb.learn(*learn, real_word=h.text), "UI learn")  # noqa: B023
        assert real == real_word_ok(h), h.name
        own = outcome(lambda: cb.battle_own(h.text, f"A {h.text} sat.", who), "UI battle")  # noqa: B023
        assert own == word_ok(h), h.name
        own_sentences = outcome(lambda: cb.battle_own(WORD, h.text, who), "UI battle")  # noqa: B023
        assert own_sentences == sentences_ok(h), h.name
        forged = Who(browser_id=h.text, session="forging-session")
        assert outcome(lambda: cb.battle_pool(forged), "UI battle") == "ok"  # noqa: B023
        battles_made += [own, own_sentences].count("ok") + 1
        for call in (
            lambda: cb.vote(h.text, "a", who),  # noqa: B023
            lambda: cb.vote(real_battle, h.text, who),  # noqa: B023
            lambda: cb.export(h.text, "human"),  # noqa: B023
            lambda: cb.export("jsonl", h.text),  # noqa: B023
        ):
            assert outcome(call, "UI vote/export") == "refused", h.name
    for n in NUMBERS:
        steps = outcome(lambda: cb.learn(*learn[:3], ["token_tuning"], *learn[4:7], n), "UI learn")  # noqa: B023
        assert steps == expected(repr(n) in ACCEPTED_AS_STEPS), repr(n)
    # refusals stored nothing: no vote on the real battle, every accepted battle and no other
    assert cb.store.count_votes() == 0 and _battles(cb.store) == battles_made
    assert cb.vote(real_battle, "a", who)["voting_open"] is False
    assert [v.battle_id for v in cb.store.votes()] == [real_battle]
    forged_as = {cb.identities.annotator(Who(session="forging-session"))}
    assert {b.annotator for b in _all_battles(cb.store)} == {
        cb.identities.annotator(who)
    } | forged_as
    cb.close()


def _all_battles(store: VoteStore):
    from sqlalchemy import select

    from demo.store import battles

    with store.engine.connect() as conn:
        ids = [row.id for row in conn.execute(select(battles.c.id))]
    return [store.get_battle(i) for i in ids]


def api_outcome(call, where: str, typed: bool = True) -> str:
    """'ok', or 'refused' with our message (or Gradio's refusal of a value outside a choice
    component's options); Gradio's generic crash message fails the test, except for a value
    of the wrong type (`typed=False`), which Gradio's own preprocessing refuses with it."""
    try:
        result = call()
    except Exception as err:  # noqa: BLE001 — gradio_client's AppError carries the message
        message = str(err)
        if not typed and crashed(message):
            OUTCOMES[f"{where}: refused by Gradio's preprocessing"] += 1
            return "refused"
        assert not crashed(message), f"a crash, not a refusal: {message[:200]!r}"
        gradio_choice = message.startswith("Value: ") and "is not in the list of choices" in message
        assert gradio_choice or clear_message(message), message[:200]
        OUTCOMES[f"{where}: refused"] += 1
        return "refused"
    shown = result if isinstance(result, (list, tuple)) else [result]
    assert all(no_raw_html(v) for v in shown[:2] if isinstance(v, str))
    OUTCOMES[f"{where}: ok"] += 1
    return "ok"


def _battles(store: VoteStore) -> int:
    from sqlalchemy import func, select

    from demo.store import battles

    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(battles)).scalar_one()


def test_http_api(tmp_path, app_factory, no_model):
    url, callbacks = app_factory(settings_in(tmp_path))
    client = client_of(url)
    learn = ["wug", GOOD_SENTENCE, "", ["centroid"], "gemma-3-270m", "cpu", "input", 0]
    definition_ok = [lambda h: expected(h.name not in REFUSED_AS_DEFINITION)]
    calls = [  # (call, what it should answer)
        (lambda t: client.predict(t, f"The {t} sang.", *learn[2:], api_name="/learn"), word_ok),
        (lambda t: client.predict("wug", t, *learn[2:], api_name="/learn"), sentences_ok),
        (lambda t: client.predict(*learn[:2], t, *learn[3:], api_name="/learn"), definition_ok[0]),
        (lambda t: client.predict(*learn[:3], [t], *learn[4:], api_name="/learn"), None),
        (lambda t: client.predict(*learn, t, api_name="/learn"), real_word_ok),
        (lambda t: client.predict(t, f"A {t} sat.", None, api_name="/battle_own"), word_ok),
        (lambda t: client.predict("wug", t, None, api_name="/battle_own"), sentences_ok),
        (lambda t: client.predict(t, None, api_name="/vote_a"), None),
        (lambda t: client.predict(t, api_name="/battle_pool"), lambda h: "ok"),  # forged id
    ]
    for i, h in enumerate(TEXTS):
        text = h.text if len(h.text) < 100_000 else h.text[:2_000_000]  # keep the run short
        call, answer = calls[i % len(calls)]
        before = _battles(callbacks.store)
        got = api_outcome(lambda: call(text), "HTTP API")  # noqa: B023
        assert got == (answer(h) if answer else "refused"), (h.name, i % len(calls))
        made = _battles(callbacks.store) - before
        assert made == (1 if got == "ok" and i % len(calls) >= 5 else 0), h.name
    for n in NUMBERS:
        number = isinstance(n, (int, float))  # reaches our callback; the rest stop at the slider
        steps = api_outcome(
            lambda: client.predict(*learn[:3], ["token_tuning"], *learn[4:7], n, api_name="/learn"),  # noqa: B023
            "HTTP API",
            typed=number,
        )
        if number:
            assert steps == expected(repr(n) in ACCEPTED_AS_STEPS), repr(n)
    for body in (
        b"{",
        b"[]",
        b'{"data": 5}',
        b'{"data": []}',
        b"\xff\xfe",
        b'{"data": [' + b"1," * 10000 + b"1]}",
    ):
        request = urllib.request.Request(url + "gradio_api/call/learn", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as reply:
                status = reply.status
        except urllib.error.HTTPError as err:
            status = err.code
        assert status < 500, f"raw body {body[:20]!r} gave HTTP {status}"
    # no hostile call stored a vote, and the server still answers a real battle and vote
    assert callbacks.store.count_votes() == 0
    battle_id = client.predict(None, api_name="/battle_pool")[0]
    client.predict(battle_id, None, api_name="/vote_b")
    assert callbacks.store.count_votes() == 1


def test_learn_through_the_api_is_limited_per_address(tmp_path, app_factory, no_model):
    from demo.settings import RateLimit

    url, _callbacks = app_factory(settings_in(tmp_path, learn_limit=RateLimit(1, burst=2)))
    learn = ["wug", GOOD_SENTENCE, "", ["centroid"], "gemma-3-270m", "cpu", "input", 0]
    clients = [client_of(url), client_of(url)]  # two sessions, one address (127.0.0.1)
    assert [
        api_outcome(lambda c=c: c.predict(*learn, api_name="/learn"), "HTTP API") for c in clients
    ] == ["ok", "ok"]
    try:
        clients[0].predict(*learn, api_name="/learn")
    except Exception as err:  # noqa: BLE001 — gradio_client's AppError carries the message
        assert re.search(r"Too many Learn requests .*\(per address\); try again in \d+ s", str(err))
    else:
        raise AssertionError("a third Learn from one address within the minute was not refused")


def test_export(tmp_path, monkeypatch, no_model):
    from demo.__main__ import _is_file, main
    from demo.callbacks import Callbacks

    # an empty --db falls back to the default store: keep it inside tmp_path, not a
    # votes.sqlite that a `make app` on this machine left in the real cache folder
    monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "votes.sqlite"
    cb = Callbacks(settings_in(tmp_path, db=str(db)))
    deep = tmp_path.joinpath(*"abcdefgh")  # '../' names stay inside tmp_path
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    for h in TEXTS:
        out = h.text.lstrip("/") if h.text.startswith("/") else h.text  # never at the real /etc
        _cli_ok(main, ["export", "--db", str(db), "--out", out], "export CLI")
        db_arg = h.text.lstrip("/") or h.text
        code = _cli_ok(main, ["export", "--db", db_arg, "--out", "-"], "export CLI")
        assert code or _is_file(db_arg), h.name  # only an existing file opens as a store
        assert _cli_ok(
            main, ["export", "--db", str(db), "--format", h.text, "--out", "-"], "export CLI"
        )
        assert _cli_ok(
            main, ["export", "--db", str(db), "--judge", h.text, "--out", "-"], "export CLI"
        )
        assert outcome(lambda: cb.export(h.text, "all"), "export") == "refused"  # noqa: B023
    escaped = [p for p in tmp_path.rglob("*") if p.is_file() and not str(p).startswith(str(deep))]
    assert {p.name for p in escaped} <= {
        "votes.sqlite",
        "votes.sqlite-wal",
        "votes.sqlite-shm",
        "pool.jsonl",
    }
    assert _cli_ok(main, ["export", "--db", str(db), "--out", "-"], "control") == 0
    cb.close()
