"""The two targets of issue 17, tried as a scripted client would, against the app on loopback.

    python -m tests.tools.abuse rotate --threads 4 --seconds 90    # identities and limits
    python -m tests.tools.abuse recur --battles 40                 # blind: texts seen again

`rotate`: threads that open a new gradio_client connection for every battle and send a
made-up browser id each time, voting as fast as they are let, from one address. Passes when
the votes that got in stay within one person's limit (burst + rate x duration) and the store
holds no more annotators than connections opened.
`recur`: one client asks for battles on prepared words with the real LM and counts battles
showing a definition text it has seen before. Passes at <= 10%.
Both launch the app in this process on a free loopback port unless --url names a running one
(with --db its store, to count annotators).
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from backends.arguments import number, whole_number
from demo.settings import DemoSettings
from demo.store import VoteStore
from tests.tools.loadtest import FAST_LEARNERS, check_loopback, client_of, launch, open_limits


def rotate(url: str, threads: int, seconds: float) -> dict:
    """Rotate identities from `threads` threads for `seconds`; count what got through."""
    counts = {"connections": 0, "battles": 0, "votes": 0, "refused": 0, "other_errors": 0}
    lock, deadline = threading.Lock(), time.monotonic() + seconds

    def add(key: str) -> None:
        with lock:
            counts[key] += 1

    def attack(_worker: int) -> None:
        while time.monotonic() < deadline:
            client = client_of(url)  # a new connection: a new Gradio session
            add("connections")
            try:
                battle = client.predict(secrets.token_hex(8), api_name="/battle_pool")[0]
                add("battles")
                client.predict(battle, secrets.token_hex(8), api_name="/vote_a")
                add("votes")
            except Exception as err:  # noqa: BLE001 — a refusal is what we hope to see
                add("refused" if "Too many" in str(err) else "other_errors")
                time.sleep(0.2)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(attack, range(threads)))
    return counts


def recur(url: str, battles: int) -> dict:
    """Battles on prepared words; how many showed a text seen in an earlier battle."""
    client, seen, repeats, reveals = client_of(url), set(), 0, 0
    for _ in range(battles):
        shown = client.predict(None, api_name="/battle_pool")
        texts = {shown[3], shown[4]}
        repeats += bool(texts & seen)
        seen |= texts
        reveal = client.predict(shown[0], None, api_name="/vote_tie")
        reveals += "A was" in (reveal if isinstance(reveal, str) else reveal[0])
    return {
        "battles": battles,
        "seen_before": repeats,
        "share": round(repeats / battles, 3),
        "texts": len(seen),
        "names_revealed": reveals,
    }


def _settings(folder: Path, mode: str) -> DemoSettings:
    base = DemoSettings(cache_dir=folder, arena_learners=FAST_LEARNERS, leaderboard_rounds=20)
    if mode == "recur":  # one honest-speed client: limits out of the way, the real LM on
        return base.with_(**open_limits(), repeat_share=0.0)
    return base  # rotate: the shipped limits, canned texts (the LM is not what is tested)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.abuse", description=__doc__)
    parser.add_argument("mode", choices=("rotate", "recur"))
    parser.add_argument("--threads", type=whole_number(1), default=4, help="rotate: >= 1")
    parser.add_argument("--seconds", type=number(0, above=True), default=90.0, help="rotate: > 0")
    parser.add_argument("--battles", type=whole_number(1), default=40, help="recur: >= 1")
    parser.add_argument("--url", help="a running app on this machine (default: launch one)")
    parser.add_argument("--db", help="with --url: its vote store, to count annotators")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="nonce-abuse-") as folder:
        settings = _settings(Path(folder), args.mode)
        if args.url:
            url, callbacks = check_loopback(args.url), None
            store = VoteStore.open(args.db) if args.db else None
        else:
            url, callbacks, _app = launch(settings, canned=args.mode == "rotate")
            store = callbacks.store
        start = time.perf_counter()
        if args.mode == "rotate":
            figures = rotate(url, args.threads, args.seconds)
            limit = settings.address_vote_limit
            figures["one_persons_limit"] = int(limit.burst + limit.per_minute * args.seconds / 60)
            ok = figures["votes"] <= figures["one_persons_limit"]
            if store is not None:
                stored = {v.annotator for v in store.votes("human")}
                figures["annotators_in_store"] = len(stored)
                ok = ok and len(stored) <= figures["connections"]
        else:
            figures = recur(url, args.battles)
            ok = figures["share"] <= 0.10
        figures["wall_s"] = round(time.perf_counter() - start, 1)
        figures["target_met"] = ok
        print(json.dumps(figures, indent=2))
        if callbacks is not None:
            callbacks.close()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
