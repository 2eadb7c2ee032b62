"""`python -m demo export` writes what the store holds, per judge and format."""

from __future__ import annotations

import csv
import json

from demo.__main__ import main
from demo.store import AutoVote, Item, Matchup, VoteStore


def test_export_cli_per_judge_and_format(tmp_path, capsys):
    db = tmp_path / "votes.sqlite"
    store = VoteStore.open(db)
    matchup = Matchup(Item("blick", ("A blick sat.",)), "centroid", "cache", "x", "y", "lm")
    battle = store.create_battle(matchup, annotator="anon:1")
    store.record_vote(battle.id, "a", annotator="anon:1")
    store.record_auto_votes([AutoVote(**matchup.__dict__, vote="b", annotator="auto:bertscore")])
    store.close()

    out = tmp_path / "human.jsonl"
    assert main(["export", "--db", str(db), "--out", str(out), "--judge", "human"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["vote"] for r in rows] == ["a"] and rows[0]["examples"] == ["A blick sat."]
    assert "1 votes written" in capsys.readouterr().out

    both = tmp_path / "all.csv"
    assert main(["export", "--db", str(db), "--format", "csv", "--out", str(both)]) == 0
    with both.open(encoding="utf-8") as handle:
        assert sorted(r["judge"] for r in csv.DictReader(handle)) == ["auto", "human"]

    table = tmp_path / "all.parquet"
    assert main(["export", "--db", str(db), "--format", "parquet", "--out", str(table)]) == 0
    import pyarrow.parquet as pq

    assert pq.read_table(table).column("vote").to_pylist() == ["a", "b"]
    assert main(["export", "--db", str(db), "--format", "parquet", "--out", "-"]) == 1
    assert "Parquet is binary" in capsys.readouterr().err

    assert main(["export", "--db", str(db), "--out", str(tmp_path / "no" / "dir.csv")]) == 1
    assert "error:" in capsys.readouterr().err


def test_export_refuses_a_database_that_holds_no_vote_store_and_leaves_it_as_it_was(
    tmp_path, capsys
):
    import sqlite3

    other, unrelated, empty = (tmp_path / f"{n}.sqlite" for n in ("other", "unrelated", "empty"))
    with sqlite3.connect(other) as conn:  # another program's "votes" table
        conn.execute("create table votes (id integer, foo text)")
    with sqlite3.connect(unrelated) as conn:
        conn.execute("create table customers (id integer)")
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(bytes(range(256)) * 20)
    for db, said in [
        (other, "'votes' table is not a vote store's"),
        (unrelated, "holds no vote store"),
        (empty, "holds no vote store"),
        (garbage, "file is not a database"),
    ]:
        before = db.read_bytes()
        assert main(["export", "--db", str(db), "--out", str(tmp_path / "o.jsonl")]) == 1
        assert said in capsys.readouterr().err
        assert db.read_bytes() == before and not db.with_name(db.name + "-wal").exists()
    assert main(["export", "--push-to-hub", "", "--db", str(other)]) == 1
    assert "not a Hugging Face repo id" in capsys.readouterr().err
