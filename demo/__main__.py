"""Command line for the web app's data.

python -m demo export --format jsonl --out votes.jsonl     # or csv, parquet
python -m demo export --push-to-hub owner/nonce-votes      # a Parquet dataset + card
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from backends.arguments import one_of
from demo.exports import EXPORT_FORMATS, export_votes, safe_export_name
from demo.hub import check_repo_id, push_to_hub
from demo.settings import load_demo_settings
from demo.store import StoreUnavailable, VoteStore
from demo.vocabulary import JUDGES


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m demo", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser(
        "export", help="write the stored votes to a file, or push them to a Hub dataset"
    )
    export.add_argument("--format", type=one_of(*EXPORT_FORMATS), default="jsonl")
    where = export.add_mutually_exclusive_group(required=True)
    where.add_argument("--out", help="file to write ('-' for standard output)")
    where.add_argument(
        "--push-to-hub",
        metavar="REPO",
        help="upload a Parquet dataset with its card to this Hugging Face dataset repo "
        "(owner/name; private when created; token from HF_TOKEN or `hf auth login`)",
    )
    export.add_argument("--judge", type=one_of(*JUDGES), default=None, help="default: both")
    export.add_argument("--db", help="SQLite path or database URL (default: NONCE_DB)")
    export.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    return parser


def _checked_out(out: str, force: bool) -> str:
    """--out: '-' or a new file (a plain name, no '..') in an existing folder."""
    if out == "-":
        return out
    path = Path(out)
    safe_export_name(path.name)
    if not path.name.strip() or ".." in path.parts:
        raise ValueError(f"--out {out[:60]!r}: give a file name, without '..'")
    if not path.parent.is_dir():
        raise ValueError(f"--out {out[:60]!r}: folder {str(path.parent)[:60]!r} does not exist")
    if path.exists() and not force:
        raise ValueError(f"--out {out[:60]!r} exists; add --force to overwrite it")
    return out


def _is_file(path: str) -> bool:
    try:
        return Path(path).expanduser().is_file()
    except (OSError, ValueError):  # too long for a path, or a NUL byte
        return False


def _checked_db(target: str) -> str:
    """An export reads a store: a SQLite path must exist (opening would create an empty one)."""
    if "://" not in target and not _is_file(target):
        raise ValueError(f"no vote store at {target[:60]!r}: give a SQLite file or a database URL")
    return target


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    try:
        if args.push_to_hub is not None:
            check_repo_id(args.push_to_hub)  # before opening anything
        # reading only: a database that holds no vote store is refused, never given one
        store = VoteStore.open(_checked_db(args.db or load_demo_settings().db_target), create=False)
        if args.push_to_hub is not None:
            print(f"pushed: {push_to_hub(store, args.push_to_hub, args.judge)}")
            return 0
        dest = sys.stdout if args.out == "-" else _checked_out(args.out, args.force)
        count = export_votes(store, dest, args.format, args.judge)
    except (StoreUnavailable, OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.out != "-":
        print(f"{count} votes written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
