"""Exports: JSONL and CSV round trips, the dataset folder, and safe file names."""

import csv
import io
import json
from dataclasses import replace
from pathlib import Path

import pytest

from demo.exports import (
    EXPORT_FIELDS,
    ExportFolder,
    export_hf_dataset,
    export_votes,
    safe_export_name,
    vote_record,
)
from demo.store import Matchup, Vote, VoteStore
from tests.demo.test_store import ITEM, MATCHUP


def _voted(vote_store: VoteStore) -> list[Vote]:
    for annotator, verdict in [("anon-1", "a"), ("anon-2", "both_bad")]:
        battle = vote_store.create_battle(MATCHUP, annotator=annotator)
        vote_store.record_vote(battle.id, verdict, annotator=annotator)
    return vote_store.votes()


def test_jsonl_export_round_trips(vote_store: VoteStore, tmp_path: Path) -> None:
    votes = _voted(vote_store)
    assert export_votes(vote_store, tmp_path / "votes.jsonl", "jsonl") == 2
    lines = (tmp_path / "votes.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [vote_record(v) for v in votes]
    assert json.loads(lines[0])["examples"] == list(ITEM.examples)


def test_csv_export_round_trips(vote_store: VoteStore) -> None:
    votes = _voted(vote_store)
    buffer = io.StringIO()
    export_votes(vote_store, buffer, "csv")
    rows = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    assert tuple(rows[0]) == EXPORT_FIELDS
    for row, vote in zip(rows, votes, strict=True):
        expected = {k: "" if v is None else str(v) for k, v in vote_record(vote).items()}
        assert {**row, "examples": json.loads(row["examples"])} == {
            **expected,
            "examples": list(ITEM.examples),
        }


def test_export_refuses_unknown_format(vote_store: VoteStore) -> None:
    with pytest.raises(ValueError, match="'xml'; valid: jsonl, csv, parquet"):
        export_votes(vote_store, io.StringIO(), "xml")  # type: ignore[arg-type]


def test_hf_dataset_layout(vote_store: VoteStore, tmp_path: Path) -> None:
    _voted(vote_store)
    root = export_hf_dataset(vote_store, tmp_path / "dataset", fmt="jsonl")
    card = (root / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "path: data/votes.jsonl" in card
    assert "2 blind pairwise judgments" in card
    assert len((root / "data" / "votes.jsonl").read_text(encoding="utf-8").splitlines()) == 2


@pytest.mark.parametrize("name", ["votes.jsonl", "human-2024_01.csv", "a.b.c"])
def test_safe_export_name_accepts_plain_names(name: str) -> None:
    assert safe_export_name(name) == name


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../x", "a/b", "a\\b", "/etc/passwd", "x\n", "\x00"]
)
def test_safe_export_name_rejects_traversal(name: str) -> None:
    with pytest.raises(ValueError, match="export name"):
        safe_export_name(name)


def test_export_folder_keeps_only_the_newest_files(tmp_path: Path) -> None:
    folder = ExportFolder(keep=2)
    paths = []
    for k in range(5):
        path = folder.new_path("votes.jsonl")  # the same name every time: no clash
        path.write_text(str(k))
        paths.append(path)
    assert folder.files() == paths[-2:] and paths[-1].read_text() == "4"
    with pytest.raises(ValueError, match="export name"):
        folder.new_path("../escape.jsonl")
    folder.close()
    assert not folder.root.exists()


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_every_format_loads_with_datasets(
    sqlite_store: VoteStore, tmp_path: Path, fmt, monkeypatch
):
    """The dataset folder round-trips through `datasets.load_dataset`, offline."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    votes = _voted(sqlite_store)
    prepared = replace(ITEM, answer="cat", pos="noun", reference="a small domesticated feline")
    sampled = Matchup(
        prepared, "hice", "additive", "x", "y", "lm", decoding='{"t": 1}', seed=9, auto_vote="b"
    )
    battle = sqlite_store.create_battle(sampled, "anon-3")
    votes.append(sqlite_store.record_vote(battle.id, "tie", "anon-3"))
    root = export_hf_dataset(sqlite_store, tmp_path / fmt, fmt=fmt)
    loaded = datasets.load_dataset(str(root), split="train", cache_dir=str(tmp_path / "cache"))
    assert loaded.num_rows == 3 and tuple(loaded.column_names) == EXPORT_FIELDS
    rows = list(loaded)
    for row, vote in zip(rows, votes, strict=True):
        record = vote_record(vote)
        if fmt == "csv":  # CSV has no lists: examples stays the JSON text it was written as
            record["examples"] = json.dumps(record["examples"], ensure_ascii=False)
        assert row == record, fmt
    assert rows[2]["seed"] == 9 and rows[0]["seed"] is None
    assert (rows[2]["pos"], rows[2]["auto_vote"], rows[0]["auto_vote"]) == ("noun", "b", None)


def test_parquet_needs_a_path(vote_store: VoteStore) -> None:
    with pytest.raises(ValueError, match="Parquet is binary"):
        export_votes(vote_store, io.StringIO(), "parquet")
