"""Command line: `python -m backends learn ...` and `python -m backends fetch ...`.

    python -m backends learn --word wug --example "A wug sat on the fence." \
        --example "The wug sang at dawn." --learner all --json
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from backends.arguments import one_of
from backends.settings import load_settings


def _whole(value: str) -> int:
    """An argparse type: an int, quoting at most 40 characters of a bad value."""
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a whole number") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m backends", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    learn = sub.add_parser("learn", help="learn a new word with one or more learners")
    learn.add_argument("--word", required=True)
    learn.add_argument("--example", action="append", default=[], help="a sentence using the word")
    learn.add_argument("--definition", help="optional definition (read by definition_reader)")
    learn.add_argument(
        "--real-word", help="optional: the word it stands for, to compare (the LM knows it)"
    )
    learn.add_argument("--learner", default="all", help="NAME, NAME,NAME or all")
    learn.add_argument("--lm", default=None, help="LM preset, local folder or hub id")
    learn.add_argument("--device", default=None, type=one_of("auto", "cpu", "cuda"))
    learn.add_argument("--k", type=_whole, default=10, help="neighbours per space")
    learn.add_argument("--steps", type=_whole, default=None, help="token tuning steps")
    learn.add_argument("--json", action="store_true", help="print JSON instead of a table")
    fetch = sub.add_parser("fetch", help="set-up: obtain and convert the embedded models")
    fetch.add_argument(
        "names", nargs="*", help="presets (default: all embedded: both LMs, the mpnet encoder)"
    )
    fetch.add_argument("--force", action="store_true", help="rebuild a damaged cache")
    return parser


def _as_record(result) -> dict:
    return {
        "word": result.word,
        "lm": result.lm,
        "device": result.device,
        "timings": result.timings,
        "learners": [
            {
                "learner": r.learner,
                "definition": r.definition,
                "neighbours": {
                    space: [{"token": n.token, "score": round(n.similarity, 4)} for n in found]
                    for space, found in r.neighbours.items()
                },
                "timings": r.timings,
                "info": r.embedding.info,
            }
            for r in result.results
        ],
        "real_word": None
        if result.known is None
        else {
            "word": result.known.word,
            "definitions": result.known.definitions,
            "says_itself": result.known.says_itself,
            "cosine": {name: round(c, 4) for name, c in result.known.similarity.items()},
            "rank": result.known.rank,
            "ranked_among": result.known.ranked_among,
        },
    }


def _print_table(record: dict) -> None:
    print(f"{record['word']!r} on {record['lm']} ({record['device']})")
    for r in record["learners"]:
        near = ", ".join(f"{n['token']} {n['score']:.2f}" for n in r["neighbours"]["input"][:5])
        print(f"\n[{r['learner']}] learned in {r['timings']['learn']:.2f} s")
        print(f"  definition: {r['definition']}")
        print(f"  neighbours: {near}")
        if r["info"].get("note"):  # what the learner says of its result, as its app card does
            print(f"  note: {r['info']['note']}")
        real = record["real_word"] or {}
        cosine = real.get("cosine", {}).get(r["learner"])
        if cosine is not None:  # none where the vector does not hold what it learned
            rank = f"rank {real['rank'][r['learner']]} of {real['ranked_among']} WordNet words"
            print(f"  cosine to {real['word']!r}: {cosine:.2f} ({rank})")
    if record["real_word"]:  # the ceiling: the LM defining the word it knows
        print(f"\n[the real word: {record['real_word']['word']}] (not a learner)")
        for name, text in record["real_word"]["definitions"].items():
            print(f"  {name}: {text}")
    timings = ", ".join(f"{k} {v:.2f} s" for k, v in record["timings"].items())
    print(f"\n{timings}")


def _learn(args) -> None:
    from backends.learners.token_tuning import TokenTuningConfig
    from backends.pipeline import learn

    configs = (
        {"token_tuning": TokenTuningConfig(steps=args.steps)} if args.steps is not None else None
    )
    result = learn(
        args.word,
        args.example,
        args.learner,
        definition=args.definition,
        lm=args.lm,
        device=args.device or load_settings().device,
        k=args.k,
        configs=configs,
        real_word=args.real_word,
    )
    record = _as_record(result)
    if args.json:
        print(json.dumps(record, indent=2, ensure_ascii=False))
    else:
        _print_table(record)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = _parser().parse_args(argv)
    try:
        if args.command == "learn":
            _learn(args)
        else:
            from backends.models import fetch

            logging.getLogger("backends").setLevel(logging.INFO)
            fetch(args.names, force=args.force)
    except (ValueError, RuntimeError) as err:
        # The library's errors name the bad value and the choices; no traceback for a person.
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
