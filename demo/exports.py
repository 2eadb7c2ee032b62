"""Votes out of the store: JSONL, CSV and Parquet files, a Hugging Face dataset folder (each
loadable with `datasets.load_dataset`), and safe file names.

Every format carries the same flat record per vote (`vote_record`, fields `EXPORT_FIELDS`).

    count = export_votes(store, "votes.parquet", "parquet", judge="human")
    export_hf_dataset(store, "nonce-votes/", fmt="parquet")  # data/ + README.md card
"""

from __future__ import annotations

import csv
import json
import shutil
import tempfile
import threading
import unicodedata
from pathlib import Path
from typing import Any, Literal, TextIO, get_args

from demo.store import Vote, VoteStore
from demo.vocabulary import JUDGES, VOTE_VALUES, Judge

ExportFormat = Literal["jsonl", "csv", "parquet"]
EXPORT_FORMATS: tuple[str, ...] = get_args(ExportFormat)
EXPORT_FIELDS = (
    "battle_id",
    "word",
    "answer",  # the real word behind a prepared item's made-up one; null otherwise
    "pos",  # a prepared item's part of speech (noun, verb, adjective, adverb); null otherwise
    "reference",  # a prepared item's WordNet gloss, which the automatic judge reads
    "examples",
    "learner_a",
    "learner_b",
    "output_a",
    "output_b",
    "lm",
    "decoding",  # JSON of the battle's sampling settings; null for greedy or canned outputs
    "seed",
    "repeat_of",  # the battle this one showed again to another annotator; null otherwise
    "vote",
    "auto_vote",  # the automatic judge's verdict on this battle; null where it has none
    "auto_judge",  # which automatic judge gave it; null before judges were named
    "annotator",
    "judge",
    "created_at",
)


def vote_record(vote: Vote) -> dict[str, Any]:
    """A vote as a flat JSON-ready dict (the export schema)."""
    record: dict[str, Any] = {"battle_id": vote.battle_id, "word": vote.item.word}
    record |= {name: getattr(vote.item, name) for name in ("answer", "pos", "reference")}
    record["examples"] = list(vote.item.examples)
    record |= {name: getattr(vote, name) for name in EXPORT_FIELDS[6:-1]}
    record["created_at"] = vote.created_at.isoformat()
    return record


def export_votes(
    store: VoteStore,
    dest: str | Path | TextIO,
    fmt: ExportFormat = "jsonl",
    judge: Judge | None = None,
) -> int:
    """Write votes as JSONL, CSV or Parquet to a path chosen by the caller, or JSONL/CSV to an
    open text file."""
    if fmt not in EXPORT_FORMATS:
        valid = ", ".join(EXPORT_FORMATS)
        raise ValueError(f"unknown export format {str(fmt)[:40]!r}; valid: {valid}")
    if fmt == "parquet" and not isinstance(dest, (str, Path)):
        raise ValueError("Parquet is binary: give a file path, not a text stream")
    records = [vote_record(vote) for vote in store.votes(judge)]
    if fmt == "parquet":
        _write_parquet(records, Path(dest))  # type: ignore[arg-type]
    elif isinstance(dest, (str, Path)):
        with open(dest, "w", encoding="utf-8", newline="") as file:
            _write(records, file, fmt)
    else:
        _write(records, dest, fmt)
    return len(records)


def _write(records: list[dict[str, Any]], file: TextIO, fmt: ExportFormat) -> None:
    if fmt == "jsonl":
        for record in records:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
        return
    writer = csv.DictWriter(file, fieldnames=EXPORT_FIELDS)
    writer.writeheader()
    for record in records:
        writer.writerow({**record, "examples": json.dumps(record["examples"], ensure_ascii=False)})


def _parquet_schema():
    import pyarrow as pa

    types = {"examples": pa.list_(pa.string()), "seed": pa.int64()}
    return pa.schema([(name, types.get(name, pa.string())) for name in EXPORT_FIELDS])


def _write_parquet(records: list[dict[str, Any]], path: Path) -> None:
    """One Parquet file with a fixed schema, so even an empty export has typed columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {name: [r[name] for r in records] for name in EXPORT_FIELDS}
    pq.write_table(pa.table(columns, schema=_parquet_schema()), path)


def export_hf_dataset(
    store: VoteStore,
    folder: str | Path,
    judge: Judge | None = None,
    fmt: ExportFormat = "parquet",
) -> Path:
    """Write a Hugging Face dataset folder: data/votes.<fmt> and a README.md dataset card."""
    root = Path(folder)
    (root / "data").mkdir(parents=True, exist_ok=True)
    data_file = f"data/votes.{fmt}"
    count = export_votes(store, root / data_file, fmt, judge)
    (root / "README.md").write_text(dataset_card(count, judge, data_file), "utf-8")
    return root


def dataset_card(count: int | None, judge: Judge | None, data_file: str) -> str:
    """A dataset card whose front matter points `datasets.load_dataset` at `data_file`."""
    judges = judge or " and ".join(JUDGES)
    return (
        "---\n"
        "pretty_name: Nonce Arena votes\n"
        "configs:\n"
        "- config_name: default\n"
        "  data_files:\n"
        "  - split: train\n"
        f"    path: {data_file}\n"
        "---\n\n"
        "# Nonce Arena votes\n\n"
        f"{'' if count is None else f'{count} '}blind pairwise judgments ({judges} judges) of "
        "definitions that learners gave\n"
        f"for made-up words. Each row: {', '.join(EXPORT_FIELDS)}.\n"
        f"vote is one of {' | '.join(VOTE_VALUES)}; created_at is UTC; decoding is the JSON of\n"
        "the sampling settings behind both definitions and seed the battle's seed (null for\n"
        "rows without sampling); answer is the real word behind a prepared item's made-up one,\n"
        "pos its part of speech and reference the WordNet gloss of the sense shown;\n"
        "repeat_of names the battle a row showed again to a second annotator (agreement);\n"
        "auto_vote is the automatic judge's verdict on the same two definitions (the\n"
        "benchmarks' tournament reader: degenerate first, then which definition singles out\n"
        "its reference among 30 by MiniLM sentence-embedding cosine), null where none;\n"
        "auto_judge names that judge's version (null for verdicts stored before 2026-11-28).\n"
        "Annotator ids are pseudonymous: a salted hash of a login or a server-issued id.\n"
    )


class ExportFolder:
    """One private temporary folder for the page's exports, holding at most `keep` files.

    Gradio copies a returned file into its own cache (cleared by the app's `delete_cache`),
    so our copy is only needed until the callback returns: each new export removes all but
    the newest `keep - 1` earlier ones, and `close` removes the folder."""

    def __init__(self, keep: int = 4) -> None:
        if keep < 1:
            raise ValueError(f"keep={keep}: keep at least the file being served")
        self.keep = keep
        self.root = Path(tempfile.mkdtemp(prefix="nonce-exports-"))
        self._lock = threading.Lock()
        self._count = 0

    def new_path(self, name: str) -> Path:
        """A fresh path for `name` (a plain file name), after pruning older exports."""
        safe_export_name(name)
        with self._lock:
            self._count += 1
            older = sorted(self.root.iterdir(), key=lambda p: p.stat().st_mtime_ns)
            for stale in older[: max(0, len(older) - (self.keep - 1))]:
                shutil.rmtree(stale, ignore_errors=True)
            folder = self.root / str(self._count)  # one folder each: equal names never clash
            folder.mkdir()
            return folder / name

    def files(self) -> list[Path]:
        return sorted(p for p in self.root.rglob("*") if p.is_file())

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def safe_export_name(name: str) -> str:
    """Return `name` if it is a plain file name; reject separators, '..' and control chars."""
    shown = repr(name)[:60]  # the messages quote at most this much of a hostile name
    if not name.strip() or name in (".", ".."):
        raise ValueError(f"export name {shown} is empty or a directory reference")
    if len(name) > 200:
        raise ValueError(f"export name {shown}… is {len(name):,} characters; the limit is 200")
    if "/" in name or "\\" in name or ".." in name:
        raise ValueError(f"export name {shown} may not contain '/', '\\' or '..'")
    # control, format (bidi overrides, zero-width), private-use and surrogate code points
    if any(unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs") for char in name):
        raise ValueError(f"export name {shown} contains control or invisible characters")
    return name
