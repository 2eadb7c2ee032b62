"""Does a long-running app's memory grow with use? The process's resident memory after each
of many Learn clicks, each followed by a battle on the same sentences and a vote.

    python -m tests.tools.memory_growth --clicks 40 --json /tmp/memory-growth.json

In one process, through the app's own callbacks (no HTTP; the page's state is dropped
after each click, as a person who moves on drops theirs): all six learners at the page's
defaults, a new made-up word every click (so the app's embedding cache keeps filling, as
it does on a Space), a real word on every other click, then a battle on the person's own
sentences and a vote. Rate limits are opened (`loadtest.open_limits`) and the vote store
is a throwaway file.
A steady state is what to look for: each click's learners and battle add entries to the
embedding cache (`NONCE_EMBEDDING_CACHE_SIZE`, 512 by default), which should hold little.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

BASES = ("florp", "glimber", "snoggle", "pellicate", "wuggle", "dax", "blicket", "toma", "fep")
FRAMES = (
    "The {w} sat on the old table by the door.",
    "She bought a new {w} at the market yesterday.",
    "Every morning he cleans the {w} before breakfast.",
)


def resident_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def run(clicks: int) -> list[dict]:
    from backends.learners import learner_names
    from demo.callbacks import Callbacks
    from demo.identity import Who
    from demo.settings import load_demo_settings
    from tests.tools.loadtest import open_limits

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "votes.sqlite")
        callbacks = Callbacks(load_demo_settings().with_(db=db, **open_limits()))
        who = Who(session="memory-growth", address="127.0.0.1")
        start = time.perf_counter()
        try:
            for i in range(clicks):
                word = BASES[i % len(BASES)] + (str(i // len(BASES)) if i >= len(BASES) else "")
                sentences = "\n".join(f.format(w=word) for f in FRAMES)
                callbacks.learn(
                    word, sentences, "", learner_names(), "gemma-3-270m", "cpu", "input",
                    who=who, real_word="lamp" if i % 2 else None,
                )  # fmt: skip
                battle = callbacks.battle_own(word, sentences, who)
                callbacks.vote(battle["battle_id"], "a", who)
                row = {"click": i, "word": word, "resident_mb": round(resident_mb(), 1)}
                row["seconds"] = round(time.perf_counter() - start, 1)
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            callbacks.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=40)
    parser.add_argument("--json", help="write every click's row here")
    args = parser.parse_args()
    rows = run(args.clicks)
    if len(rows) > 4:  # after the first clicks have loaded the LM and the learners
        early, late = rows[2]["resident_mb"], rows[-1]["resident_mb"]
        print(f"resident memory after click 3: {early:.0f} MB, after the last: {late:.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
