"""Hostile input at every entry point: the library, the CLIs, the UI callbacks, the HTTP API and
the export. Each input is refused with a clear message or accepted and shown literally; none
gives a traceback, an HTTP 500, stored garbage or typed text rendered as HTML."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from backends.inputs import check_definition, check_examples, check_word
from backends.learners import parse_learners
from demo.exports import safe_export_name
from demo.identity import Who
from demo.items import split_sentences
from demo.store import VoteStore
from tests.reliability.conftest import settings_in
from tests.reliability.hostile import NUMBERS, TEXTS, WORD, clear_message, no_raw_html
from tests.tools.loadtest import client_of

ROOT = Path(__file__).resolve().parents[2]
COUNTS: Counter = Counter()  # entry point -> hostile inputs tried
MARKUP = ("status", "cards", "reveal", "export_note", "human_note", "auto_note")  # Markdown


def outcome(call) -> str:
    """'ok' or 'refused'; anything else fails the test with what went wrong."""
    try:
        result = call()
    except (ValueError, RuntimeError) as err:
        assert clear_message(err), f"unclear message: {str(err)[:200]!r}"
        return "refused"
    rendered = result if isinstance(result, dict) else {}
    for key in MARKUP:
        assert no_raw_html(rendered.get(key, "")), f"{key} renders HTML: {rendered[key][:200]!r}"
    return "ok"


@pytest.fixture(scope="module", autouse=True)
def report_counts():
    yield
    print("\nhostile inputs per entry point: " + json.dumps(dict(COUNTS)))


def test_library(monkeypatch, tiny_lm):
    import backends.pipeline as pipeline
    from backends.learners.token_tuning import TokenTuningConfig

    monkeypatch.setattr(pipeline, "load_lm", lambda *a, **k: tiny_lm)
    for h in TEXTS:
        for check in (check_word, check_definition, parse_learners, safe_export_name):
            outcome(lambda: check(h.text))  # noqa: B023 (called at once)
        outcome(lambda: check_examples(WORD, split_sentences(h.text)))  # noqa: B023
        outcome(lambda: pipeline.learn(h.text, [f"A {h.text} sat."], "centroid"))  # noqa: B023
        outcome(lambda: pipeline.learn(WORD, split_sentences(h.text), "centroid"))  # noqa: B023
        COUNTS["library"] += 1
    for n in NUMBERS:
        outcome(lambda: TokenTuningConfig(steps=n))  # noqa: B023
        outcome(lambda: pipeline.learn(WORD, ["A wug sat."], "centroid", k=n))  # noqa: B023
        COUNTS["library"] += 1
    assert COUNTS["library"] >= 40


def _cli(main, argv: list[str]) -> tuple[int, str]:
    err, out = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse: usage and a one-line reason
            code = exit_.code
    return code, err.getvalue()


def _cli_ok(main, argv: list[str]) -> None:
    code, err = _cli(main, argv)
    assert code in (0, 1, 2), code
    assert "Traceback" not in err
    if code:
        assert err.strip() and clear_message(err.strip().splitlines()[-1]), err[-300:]


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
    for i, h in enumerate(TEXTS):
        flag = fields[i % len(fields)]
        argv = (
            base + [flag, h.text]
            if flag != "--word"
            else [*base, "--word", h.text, "--example", f"A {h.text} sat."]
        )
        _cli_ok(main, argv)
        COUNTS["backends CLI"] += 1
    for n in NUMBERS:
        for flag in ("--k", "--steps"):
            _cli_ok(main, [*base, flag, str(n)])
        COUNTS["backends CLI"] += 1
    assert COUNTS["backends CLI"] >= 40


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
    COUNTS["backends CLI (subprocess)"] += 1


def test_ui_callbacks(tmp_path, no_model):
    from demo.callbacks import Callbacks

    cb = Callbacks(settings_in(tmp_path))
    cb.arena.prefill(cb.arena.pool, {"centroid": "x <b>y</b>", "prompting": "z"})
    who = Who(browser_id="hostile", session="hostile-session")
    learn = ["wug", "The wug sang.", "", ["centroid"], "gemma-3-270m", "cpu", "input", 0]
    for h in TEXTS:
        for slot in range(7):  # each Learn field in turn
            args = list(learn)
            args[slot] = [h.text] if slot == 3 else h.text
            if slot == 0:
                args[1] = f"The {h.text} sang."
            outcome(lambda: cb.learn(*args))  # noqa: B023
        outcome(lambda: cb.battle_own(h.text, f"A {h.text} sat.", who))  # noqa: B023
        outcome(lambda: cb.battle_own(WORD, h.text, who))  # noqa: B023
        outcome(lambda: cb.vote(h.text, "a", who))  # noqa: B023
        outcome(lambda: cb.vote("x", h.text, who))  # noqa: B023
        outcome(lambda: cb.export(h.text, "human"))  # noqa: B023
        outcome(lambda: cb.export("jsonl", h.text))  # noqa: B023
        outcome(lambda: cb.battle_pool(Who(browser_id=h.text, session="s")))  # noqa: B023
        COUNTS["UI callbacks"] += 1
    for n in NUMBERS:
        outcome(lambda: cb.learn(*learn[:3], ["token_tuning"], *learn[4:7], n))  # noqa: B023
        COUNTS["UI callbacks"] += 1
    assert cb.store.count_votes() == 0  # no refused vote was stored
    for vote in cb.store.votes():
        assert check_word(vote.item.word) == vote.item.word
    cb.store.close()
    assert COUNTS["UI callbacks"] >= 40


def api_message(text: str) -> bool:
    """Ours, or Gradio's own refusal of a value outside a choice component's options (it quotes
    the value whole, back to the API client that sent it; a browser can only send choices)."""
    gradio_choice = text.startswith("Value: ") and "is not in the list of choices" in text
    return gradio_choice or clear_message(text)


def _battles(store: VoteStore) -> int:
    from sqlalchemy import func, select

    from demo.store import battles

    with store.engine.connect() as conn:
        return conn.execute(select(func.count()).select_from(battles)).scalar_one()


def test_http_api(tmp_path, app_factory, no_model):
    url, callbacks = app_factory(settings_in(tmp_path))
    client = client_of(url)
    learn = ["wug", "The wug sang.", "", ["centroid"], "gemma-3-270m", "cpu", "input", 0]
    calls = [
        lambda t: client.predict(t, f"The {t} sang.", *learn[2:], api_name="/learn"),
        lambda t: client.predict("wug", t, *learn[2:], api_name="/learn"),
        lambda t: client.predict(*learn[:2], t, *learn[3:], api_name="/learn"),
        lambda t: client.predict(*learn[:3], [t], *learn[4:], api_name="/learn"),
        lambda t: client.predict(t, f"A {t} sat.", None, api_name="/battle_own"),
        lambda t: client.predict("wug", t, None, api_name="/battle_own"),
        lambda t: client.predict(t, None, api_name="/vote_a"),
        lambda t: client.predict(t, None, api_name="/battle_pool"),  # a forged browser id
    ]
    for i, h in enumerate(TEXTS):
        text = h.text if len(h.text) < 100_000 else h.text[:2_000_000]  # keep the run short
        before = _battles(callbacks.store)
        try:
            result = calls[i % len(calls)](text)
            shown = result if isinstance(result, (list, tuple)) else [result]
            assert all(no_raw_html(v) for v in shown[:2] if isinstance(v, str))
        except Exception as err:  # noqa: BLE001 — gradio_client's AppError carries the message
            assert api_message(str(err)), f"{h.name}: {str(err)[:200]!r}"
            assert _battles(callbacks.store) == before, f"{h.name}: a refused input stored a battle"
        COUNTS["HTTP API"] += 1
    for n in NUMBERS:
        try:
            client.predict(*learn[:3], ["token_tuning"], *learn[4:7], n, api_name="/learn")
        except Exception as err:  # noqa: BLE001
            assert api_message(str(err)), f"steps {n!r}: {str(err)[:200]!r}"
        COUNTS["HTTP API"] += 1
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
        COUNTS["HTTP API"] += 1
    assert callbacks.store.count_votes() == 0
    assert COUNTS["HTTP API"] >= 40


def test_export(tmp_path, monkeypatch, no_model):
    from demo.__main__ import main
    from demo.callbacks import Callbacks

    db = tmp_path / "votes.sqlite"
    cb = Callbacks(settings_in(tmp_path, db=str(db)))
    deep = tmp_path.joinpath(*"abcdefgh")  # '../' names stay inside tmp_path
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    for h in TEXTS:
        out = h.text.lstrip("/") if h.text.startswith("/") else h.text  # never at the real /etc
        _cli_ok(main, ["export", "--db", str(db), "--out", out])
        _cli_ok(main, ["export", "--db", h.text.lstrip("/") or h.text, "--out", "-"])
        _cli_ok(main, ["export", "--db", str(db), "--format", h.text, "--out", "-"])
        _cli_ok(main, ["export", "--db", str(db), "--judge", h.text, "--out", "-"])
        outcome(lambda: cb.export(h.text, "all"))  # noqa: B023
        COUNTS["export"] += 1
    escaped = [p for p in tmp_path.rglob("*") if p.is_file() and not str(p).startswith(str(deep))]
    assert {p.name for p in escaped} <= {
        "votes.sqlite",
        "votes.sqlite-wal",
        "votes.sqlite-shm",
        "pool.jsonl",
    }
    cb.store.close()
    assert COUNTS["export"] >= 40
