"""Command line for the web app's data: `python -m demo export --format jsonl --out votes.jsonl`."""

from __future__ import annotations

import argparse
import logging
import sys

from demo.settings import load_demo_settings
from demo.store import StoreUnavailable, VoteStore


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="write the stored votes to a JSONL or CSV file")
    export.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    export.add_argument("--out", required=True, help="file to write ('-' for standard output)")
    export.add_argument("--judge", choices=("human", "auto"), default=None, help="default: both")
    export.add_argument("--db", help="SQLite path or database URL (default: NONCE_DB)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    target = args.db or load_demo_settings().db_target
    try:
        store = VoteStore.open(target)
        dest = sys.stdout if args.out == "-" else args.out
        count = store.export(dest, args.format, args.judge)
    except (StoreUnavailable, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.out != "-":
        print(f"{count} votes written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
