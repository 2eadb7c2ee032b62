"""The first Learn click after launch, with and without the warm-up (NONCE_WARM_UP).

    python -m tests.tools.first_click --json /tmp/first-click.json

Each run starts `python app.py` as a new user's `make app` does (its own process, an
empty vote store, the converted models already cached), waits until the page answers,
then waits `--read` seconds, as a person reads the page before pressing Learn, and
presses Learn on the page's first ready example with the learners and token-tuning steps
the page ticks; then once more on the second example, the warm figure. Runs alternate
warm-up on / off, so the machine's noise falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.tools.loadtest import ROOT, client_of, free_port, wait_ready


def one_run(warm_up: bool, read: float, timeout: float) -> dict:
    """Seconds to the page, to the first click's answer and to a second click's."""
    from backends.learners import learner_names
    from demo.engine import DEFAULT_TT_STEPS

    examples = json.loads((ROOT / "assets" / "examples.json").read_text())
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory() as folder:
        env = os.environ | {
            "GRADIO_SERVER_PORT": str(port),
            "GRADIO_SERVER_NAME": "127.0.0.1",
            "NONCE_DB": str(Path(folder) / "votes.sqlite"),
            "NONCE_WARM_UP": "1" if warm_up else "0",
            "HF_HUB_OFFLINE": "1",
        }
        start = time.perf_counter()
        app = subprocess.Popen(
            [sys.executable, "app.py"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_ready(url, app, timeout, path="")  # the page itself, as a person opens it
            page = time.perf_counter() - start
            time.sleep(read)
            client = client_of(url)
            clicks = []
            for ex in examples[:2]:
                args = (ex["word"], "\n".join(ex["examples"]), "", learner_names())
                t0 = time.perf_counter()
                client.predict(
                    *args, "gemma-3-270m", "auto", "input", DEFAULT_TT_STEPS, api_name="/learn"
                )
                clicks.append(time.perf_counter() - t0)
        finally:
            app.terminate()
            app.wait(timeout=60)
    return {
        "warm_up": warm_up,
        "read_s": read,
        "page_s": round(page, 2),
        "first_click_s": round(clicks[0], 2),
        "second_click_s": round(clicks[1], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.tools.first_click", description=__doc__)
    parser.add_argument("--read", default="0,30", help="seconds before the first click, each")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", default=None, help="write the runs here")
    args = parser.parse_args(argv)
    runs = []
    for read in [float(r) for r in args.read.split(",")]:
        for _ in range(args.repeats):
            for warm_up in (True, False):
                runs.append(one_run(warm_up, read, args.timeout))
                print(json.dumps(runs[-1]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"runs": runs}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
