"""Load driver: many annotators vote through the app's API; a few people press Learn at once.

    python -m tests.tools.loadtest --annotators 50 --votes 10000        # SQLite, a temp folder
    python -m tests.tools.loadtest --annotators 50 --votes 10000 --db postgres  # throwaway
    python -m tests.tools.loadtest --learn-users 5 --learn-clicks 2 --votes 0   # Learn only
    python -m tests.tools.loadtest serve --port 7861  # the app with canned arena definitions

By default it launches the app in this process on a free loopback port, over the store given
by --db (a SQLite path, a database URL, or `postgres` for a throwaway cluster), with open rate
limits and canned arena definitions, so the votes load the API and the store, not the model.
Learn runs the real default LM with fast learners. --url drives an app already running on
this machine (loopback only); every client there shares one address, so start that app with
NONCE_LEARNS_PER_MIN (and NONCE_ADDRESS_*) raised for more Learn clicks than one person's.
Every run is bounded: a vote total and a wall-clock timeout.
Each annotator is one gradio_client; a vote is acknowledged when /vote_* returned normally,
and afterwards every acknowledged battle id must be in the store exactly once.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import logging
import socket
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from demo.settings import DemoSettings, RateLimit, load_demo_settings
from demo.vocabulary import VOTE_VALUES

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]

FAST_LEARNERS = ("centroid", "prompting", "definition_reader")  # Learn in a second or two each
CANNED = "a small made-up thing, defined for the load test"
OPEN = RateLimit(per_minute=1e9, burst=1_000_000)


def open_limits(limit: RateLimit = OPEN) -> dict[str, RateLimit]:
    """DemoSettings fields for `limit` on battles, votes and Learn, per annotator and per
    address (exports keep theirs): a test or load run that calls fast from one machine."""
    names = ("battle_limit", "vote_limit", "address_battle_limit", "address_vote_limit")
    return dict.fromkeys((*names, "learn_limit"), limit)


def check_loopback(url: str) -> str:
    """Refuse any URL whose host is not this machine's loopback interface."""
    host = urlparse(url).hostname or ""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror as err:
        raise ValueError(f"cannot resolve {host!r}: {err}") from err
    if host != "localhost" and not all(ipaddress.ip_address(a).is_loopback for a in addresses):
        raise ValueError(f"{url!r} is not a loopback address; the load test only targets this host")
    return url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_ready(url: str, proc, timeout: float = 180.0, path: str = "gradio_api/info") -> None:
    """Until the app process `proc` serving `url` answers `url + path` with 200; a
    RuntimeError if the process exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the app at {url} exited while starting")
        try:
            with urllib.request.urlopen(url + path, timeout=5) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the app at {url} did not answer within {timeout} s")


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, max(0, round(q / 100 * len(ranked) + 0.5) - 1))]


def prefill_canned(callbacks, text: str = CANNED) -> None:
    """Give every pool item a ready definition per arena learner, and for the LM told the
    real word where the oracle plays (NONCE_ARENA_ORACLE_SHARE): battles skip the LM."""
    from backends.definitions import ORACLE_IN_CONTEXT

    arena = callbacks.arena
    sides = [*arena.learners, ORACLE_IN_CONTEXT]
    arena.prefill(arena.pool, {name: f"{text} ({name})" for name in sides})


def launch(settings: DemoSettings, port: int = 0, canned: bool = True):
    """(url, callbacks, app): the app running in this process on a loopback port."""
    from demo.callbacks import Callbacks
    from demo.layout import build_app, launch_options

    callbacks = Callbacks(settings)
    if canned:
        prefill_canned(callbacks)
    app = build_app(settings, callbacks)
    port = port or free_port()
    app.launch(
        server_name="127.0.0.1",
        server_port=port,
        prevent_thread_lock=True,
        quiet=True,
        **launch_options(),  # as app.py launches it
    )
    return f"http://127.0.0.1:{port}/", callbacks, app


def client_of(url: str):
    from gradio_client import Client

    # plain http on loopback: ssl_verify=False skips loading the CA bundle per request
    return Client(url, verbose=False, ssl_verify=False)


@dataclass
class VoteRun:
    """What the annotators saw: acknowledged battle ids and per-call latencies (seconds)."""

    acked: list[str] = field(default_factory=list)
    vote_seconds: list[float] = field(default_factory=list)
    battle_seconds: list[float] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    wall: float = 0.0


def drive_votes(url: str, annotators: int, votes: int, timeout: float) -> VoteRun:
    """`annotators` clients share `votes` battle+vote rounds until done or `timeout` seconds."""
    run, lock = VoteRun(), threading.Lock()
    budget = iter(range(votes))
    deadline = time.monotonic() + timeout

    def annotate(worker: int) -> None:
        client = client_of(url)
        while time.monotonic() < deadline:
            with lock:
                turn = next(budget, None)
            if turn is None:
                return
            _one_vote(client, VOTE_VALUES[(worker + turn) % len(VOTE_VALUES)], run, lock)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=annotators) as pool:
        list(pool.map(annotate, range(annotators)))
    run.wall = time.perf_counter() - start
    return run


def _one_vote(client, choice: str, run: VoteRun, lock: threading.Lock) -> None:
    try:
        t0 = time.perf_counter()
        battle_id = client.predict(None, api_name="/battle_pool")[0]
        t1 = time.perf_counter()
        client.predict(battle_id, None, api_name=f"/vote_{choice}")
        t2 = time.perf_counter()
    except Exception as err:  # noqa: BLE001 — any failure is counted, not acknowledged
        with lock:
            run.errors[f"{type(err).__name__}: {str(err)[:80]}"] += 1
        return
    with lock:
        run.acked.append(battle_id)
        run.battle_seconds.append(t1 - t0)
        run.vote_seconds.append(t2 - t1)


def stored_check(store, acked: list[str]) -> dict[str, int]:
    """How many acknowledged votes the store holds once, twice, or not at all."""
    held = Counter(v.battle_id for v in store.votes("human"))
    return {
        "acknowledged": len(acked),
        "stored_once": sum(1 for b in acked if held[b] == 1),
        "duplicated": sum(1 for b in acked if held[b] > 1),
        "missing": sum(1 for b in acked if held[b] == 0),
        "rows_in_store": sum(held.values()),
    }


def drive_learn(url: str, users: int, clicks: int, learners, timeout: float) -> list[float]:
    """`users` clients each press Learn `clicks` times at once; seconds per click."""
    examples = json.loads((ROOT / "assets" / "examples.json").read_text())
    seconds, lock = [], threading.Lock()
    deadline = time.monotonic() + timeout

    def person(user: int) -> None:
        client = client_of(url)
        for k in range(clicks):
            if time.monotonic() > deadline:
                return
            ex = examples[(user + k) % len(examples)]
            args = (ex["word"], "\n".join(ex["examples"]), "", list(learners))
            t0 = time.perf_counter()
            client.predict(*args, "gemma-3-270m", "cpu", "input", 0, api_name="/learn")
            with lock:
                seconds.append(time.perf_counter() - t0)

    with ThreadPoolExecutor(max_workers=users) as pool:
        list(pool.map(person, range(users)))
    return seconds


def _store_target(db: str | None, folder: Path, stack: contextlib.ExitStack) -> str:
    if db == "postgres":
        from tests.tools.pgtemp import TempPostgres

        return stack.enter_context(TempPostgres()).url
    return db or str(folder / "votes.sqlite")


def _refuse_a_store_with_votes(db: str | None) -> None:
    """The app this driver launches casts stand-in votes under ordinary annotator ids: into a
    store that already holds votes they could not be told from people's."""
    if not db or db == "postgres":
        return
    from demo.store import VoteStore

    is_url = "://" in db
    if is_url or Path(db).expanduser().is_file():
        store = VoteStore.open(db, create=is_url)  # a file that is no store: refused as it is
        try:
            held = store.count_votes()
        finally:
            store.close()
        if held:
            raise ValueError(
                f"--db already holds {held} votes; the load driver writes stand-in votes, so "
                "give it a new or empty store (or drive a running app with --url)"
            )


def run(args: argparse.Namespace) -> dict:
    """Launch (or reach) the app, drive votes then Learn, check the store; return the figures."""
    with contextlib.ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nonce-load-")))
        settings = DemoSettings(
            cache_dir=folder,
            db=_store_target(args.db, folder, stack),
            arena_learners=FAST_LEARNERS,
            **open_limits(),
            leaderboard_rounds=20,
        )
        if args.url:
            url, store = check_loopback(args.url), None
            if args.db:
                from demo.store import VoteStore

                store = VoteStore.open(settings.db)
        else:
            _refuse_a_store_with_votes(args.db)
            url, callbacks, app = launch(settings)
            stack.callback(app.close)
            store = callbacks.store
        return _measure(args, url, store, settings.db)


def _measure(args: argparse.Namespace, url: str, store, db: str) -> dict:
    figures: dict = {"url": url, "db": db.split("@")[-1], "annotators": args.annotators}
    if args.votes:
        before = store.count_votes("human") if store is not None else 0
        votes = drive_votes(url, args.annotators, args.votes, args.timeout)
        figures |= {
            "votes_asked": args.votes,
            "wall_s": round(votes.wall, 2),
            "votes_per_s": round(len(votes.acked) / max(votes.wall, 1e-9), 1),
            "vote_p50_s": round(percentile(votes.vote_seconds, 50), 4),
            "vote_p95_s": round(percentile(votes.vote_seconds, 95), 4),
            "battle_p50_s": round(percentile(votes.battle_seconds, 50), 4),
            "battle_p95_s": round(percentile(votes.battle_seconds, 95), 4),
            "errors": dict(votes.errors),
            "acked": len(votes.acked),
        }
        if store is not None:
            figures |= stored_check(store, votes.acked)
            figures["rows_in_store"] -= before
        print(json.dumps(figures), flush=True)  # the vote figures survive a failing Learn phase
    if args.learn_users and args.learn_clicks:
        learners = tuple(args.learners.split(","))
        client_of(url).predict(
            "wug",
            "A wug sang.",
            "",
            list(learners),
            "gemma-3-270m",
            "cpu",
            "input",
            0,
            api_name="/learn",
        )  # warm-up: loads the LM, not timed
        seconds = drive_learn(url, args.learn_users, args.learn_clicks, learners, args.timeout)
        figures |= {
            "learn_users": args.learn_users,
            "learn_clicks_asked": args.learn_clicks,
            "learn_clicks": len(seconds),
            "learn_learners": ",".join(learners),
            "learn_p50_s": round(percentile(seconds, 50), 2),
            "learn_p95_s": round(percentile(seconds, 95), 2),
        }
    return figures


def _serve(port: int) -> None:
    """The app as `python app.py` starts it (settings from NONCE_*), with canned definitions."""
    _url, _callbacks, app = launch(load_demo_settings(), port)
    print(f"serving on 127.0.0.1:{port}", flush=True)
    app.block_thread()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.loadtest", description=__doc__)
    parser.add_argument("mode", nargs="?", choices=("run", "serve"), default="run")
    parser.add_argument("--annotators", type=int, default=50, help="concurrent vote clients")
    parser.add_argument("--votes", type=int, default=10_000, help="total votes to cast")
    parser.add_argument("--db", help="SQLite path, database URL, or 'postgres' (throwaway)")
    parser.add_argument("--url", help="drive a running app on this machine instead")
    parser.add_argument("--learn-users", type=int, default=0, help="concurrent Learn users")
    parser.add_argument("--learn-clicks", type=int, default=2, help="Learn clicks per user")
    parser.add_argument("--learners", default=",".join(FAST_LEARNERS), help="Learn's learners")
    parser.add_argument("--timeout", type=float, default=1800.0, help="wall-clock cap, seconds")
    parser.add_argument("--port", type=int, default=7861, help="serve: port on 127.0.0.1")
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING)
    args = _parser().parse_args(argv)
    limits = (
        0 <= args.votes <= 1_000_000,
        1 <= args.annotators <= 500,
        0 <= args.learn_users <= 50,
    )
    if not all(limits) or not 0 < args.timeout <= 24 * 3600:
        print(
            "error: votes 0..1e6, annotators 1..500, learn users 0..50, timeout (0, 1 day]",
            file=sys.stderr,
        )
        return 2
    if args.mode == "serve":
        _serve(args.port)
        return 0
    try:
        figures = run(args)
    except (ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(json.dumps(figures, indent=2))
    problems = failures(figures)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


def failures(figures: dict) -> list[str]:
    """What makes a run fail: any call that failed, any vote asked for but not acknowledged
    (a timeout), any acknowledged vote missing from the store or stored twice, any Learn
    click that did not come back."""
    problems = []
    if figures.get("errors"):
        problems.append(f"{sum(figures['errors'].values())} calls failed: {figures['errors']}")
    asked, acked = figures.get("votes_asked", 0), figures.get("acked", 0)
    if asked and acked != asked:
        problems.append(f"{asked} votes asked, {acked} acknowledged")
    for key in ("missing", "duplicated"):
        if figures.get(key):
            problems.append(f"{figures[key]} acknowledged votes {key} in the store")
    clicks = figures.get("learn_users", 0) * figures.get("learn_clicks_asked", 0)
    if clicks and figures.get("learn_clicks") != clicks:
        problems.append(f"{clicks} Learn clicks asked, {figures.get('learn_clicks')} answered")
    return problems


if __name__ == "__main__":
    sys.exit(main())
