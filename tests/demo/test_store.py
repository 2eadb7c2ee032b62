"""The vote store: refusals, concurrent writers, schema upgrades, and failures it must report."""

import multiprocessing
import threading
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import MetaData, Table, create_engine, event, insert

from demo import store
from demo.store import AutoVote, Item, Matchup, StoreUnavailable, VoteRefused, VoteStore

ITEM = Item("blicket", ("She fed the <nonce> twice a day.", "The <nonce> purred."))
MATCHUP = Matchup(ITEM, "hice", "additive", "a small pet", "a kitchen tool", "gemma-3-270m")


def test_vote_copies_its_battle(vote_store: VoteStore) -> None:
    battle = vote_store.create_battle(MATCHUP, annotator="anon-1")
    assert battle.judge == "human" and len(battle.id) >= 20
    assert vote_store.get_battle(battle.id) == battle
    vote = vote_store.record_vote(battle.id, "b", annotator="anon-1")
    assert (vote.battle_id, vote.vote, vote.annotator, vote.judge) == (
        battle.id,
        "b",
        "anon-1",
        "human",
    )
    assert (vote.item, vote.learner_a, vote.output_b, vote.lm) == (
        ITEM,
        "hice",
        "a kitchen tool",
        "gemma-3-270m",
    )
    assert vote.created_at.tzinfo == timezone.utc
    assert vote_store.votes() == [vote] and vote_store.count_votes() == 1


def test_battle_ids_are_unguessable_and_distinct(vote_store: VoteStore) -> None:
    ids = {vote_store.create_battle(MATCHUP, annotator="anon-1").id for _ in range(50)}
    assert len(ids) == 50


def test_second_vote_is_refused(vote_store: VoteStore) -> None:
    battle = vote_store.create_battle(MATCHUP, annotator="anon-1")
    vote_store.record_vote(battle.id, "a", annotator="anon-1")
    with pytest.raises(VoteRefused, match="already has a vote"):
        vote_store.record_vote(battle.id, "b", annotator="anon-1")
    assert [vote.vote for vote in vote_store.votes()] == ["a"]


def test_unknown_battle_is_refused(vote_store: VoteStore) -> None:
    with pytest.raises(VoteRefused, match="unknown battle 'forged'"):
        vote_store.record_vote("forged", "a", annotator="anon-1")


def test_vote_from_another_annotator_is_refused(vote_store: VoteStore) -> None:
    battle = vote_store.create_battle(MATCHUP, annotator="anon-1")
    with pytest.raises(VoteRefused, match="another annotator"):
        vote_store.record_vote(battle.id, "a", annotator="anon-2")
    assert vote_store.count_votes() == 0


def test_invalid_values_are_refused(vote_store: VoteStore) -> None:
    battle = vote_store.create_battle(MATCHUP, annotator="anon-1")
    with pytest.raises(VoteRefused, match="'c'; valid: a, b, tie, both_bad"):
        vote_store.record_vote(battle.id, "c", annotator="anon-1")  # type: ignore[arg-type]
    assert issubclass(VoteRefused, ValueError)
    with pytest.raises(ValueError, match="'robot'; valid: human, auto"):
        vote_store.create_battle(MATCHUP, annotator="anon-1", judge="robot")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="'hice' twice"):
        vote_store.create_battle(Matchup(ITEM, "hice", "hice", "x", "y", "lm"), "anon-1")


def _battle_and_vote(target: str, annotator: str, count: int) -> None:
    opened = VoteStore.open(target)
    for _ in range(count):
        battle = opened.create_battle(MATCHUP, annotator=annotator)
        opened.record_vote(battle.id, "tie", annotator=annotator)
    opened.close()


def test_threads_writing_at_once_lose_no_vote(vote_store: VoteStore) -> None:
    def write(annotator: str) -> None:
        for _ in range(10):
            battle = vote_store.create_battle(MATCHUP, annotator=annotator)
            vote_store.record_vote(battle.id, "a", annotator=annotator)

    threads = [threading.Thread(target=write, args=(f"anon-{k}",)) for k in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert vote_store.count_votes() == 16 * 10


def test_racing_votes_on_one_battle_store_exactly_one(vote_store: VoteStore) -> None:
    battle = vote_store.create_battle(MATCHUP, annotator="anon-1")
    outcomes: list[str] = []

    def vote() -> None:
        try:
            vote_store.record_vote(battle.id, "a", annotator="anon-1")
            outcomes.append("stored")
        except VoteRefused:
            outcomes.append("refused")

    threads = [threading.Thread(target=vote) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["refused"] * 11 + ["stored"]
    assert vote_store.count_votes() == 1


def test_processes_writing_at_once_lose_no_vote(sqlite_store: VoteStore, votes_db: Path) -> None:
    # fork starts workers at once (spawn would re-import everything in each); every worker
    # opens its own engine, so no SQLite connection is used across the fork
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    workers = [
        context.Process(target=_battle_and_vote, args=(str(votes_db), f"proc-{k}", 15))
        for k in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0] * 4
    assert sqlite_store.count_votes() == 4 * 15


def test_auto_votes_are_written_in_bulk(vote_store: VoteStore) -> None:
    verdicts = ["a", "b", "tie", "both_bad"]
    records = [
        AutoVote(**MATCHUP.__dict__, vote=verdicts[k % 4], annotator="auto:rouge")
        for k in range(2_000)
    ]
    assert vote_store.record_auto_votes(records) == 2_000
    vote_store.create_battle(MATCHUP, annotator="anon-1")
    assert vote_store.count_votes(judge="auto") == 2_000
    assert vote_store.count_votes(judge="human") == 0
    assert {vote.vote for vote in vote_store.votes(judge="auto")} == set(verdicts)
    with pytest.raises(VoteRefused, match="'maybe'"):
        vote_store.record_auto_votes([AutoVote(**MATCHUP.__dict__, vote="maybe", annotator="j")])
    assert vote_store.count_votes() == 2_000


def test_read_only_database_is_reported(sqlite_store: VoteStore, votes_db: Path) -> None:
    battle = sqlite_store.create_battle(MATCHUP, annotator="anon-1")
    read_only = VoteStore.open(f"sqlite:///file:{votes_db}?mode=ro&uri=true")
    assert read_only.count_votes() == 0
    with pytest.raises(StoreUnavailable, match="read-only"):
        read_only.record_vote(battle.id, "a", annotator="anon-1")
    read_only.close()


def test_full_disk_is_reported(sqlite_store: VoteStore) -> None:
    sqlite_store.create_battle(MATCHUP, annotator="anon-1")

    @event.listens_for(sqlite_store.engine, "connect")
    def _cap(dbapi_connection, _record) -> None:
        # forbid the file from growing: SQLite then fails with SQLITE_FULL
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    sqlite_store.engine.dispose()
    huge = Matchup(ITEM, "hice", "additive", "x" * 1_000_000, "y", "lm")
    with pytest.raises(StoreUnavailable, match="disk is full"):
        sqlite_store.create_battle(huge, annotator="anon-1")


def test_unreachable_database_is_reported(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(StoreUnavailable):
        VoteStore.open(f"sqlite:///{tmp_path / 'file' / 'votes.db'}")


def test_sampling_settings_and_answer_are_stored_with_the_vote(vote_store: VoteStore) -> None:
    item = Item("blicket", ITEM.examples, "kitten", pos="noun", reference="a young cat")
    sampled = Matchup(
        item, "hice", "additive", "x", "y", "lm", decoding='{"t": 0.8}', seed=7, auto_vote="b"
    )
    sampled = replace(sampled, auto_judge="auto:judge-v1")
    battle = vote_store.create_battle(sampled, annotator="anon-1")
    vote = vote_store.record_vote(battle.id, "tie", annotator="anon-1")
    assert vote.item == item  # answer, part of speech and reference gloss come back
    assert (vote.decoding, vote.seed, vote.auto_vote, vote.vote) == ('{"t": 0.8}', 7, "b", "tie")
    assert vote.auto_judge == "auto:judge-v1"  # and which judge gave the verdict
    assert vote_store.get_battle(battle.id) == battle
    with pytest.raises(ValueError, match="unknown automatic verdict 'better'"):
        vote_store.create_battle(replace(sampled, auto_vote="better"), annotator="anon-1")


def _old_schema(path: Path) -> None:
    """A store as the first release made it: none of the columns added since."""
    added = set(store._ADDED)
    old = MetaData()
    for table in (store.battles, store.votes):
        Table(table.name, old, *(c._copy() for c in table.columns if c.name not in added))
    engine = create_engine(f"sqlite:///{path}")
    old.create_all(engine)
    row = {"word": "blick", "examples": '["A blick."]', "learner_a": "a1", "learner_b": "b1"}
    row |= {"output_a": "x", "output_b": "y", "lm": "lm", "annotator": "anon:1", "judge": "human"}
    row["created_at"] = datetime.now(timezone.utc)
    with engine.begin() as conn:
        conn.execute(insert(old.tables["battles"]), [{**row, "id": "old-battle"}])
        conn.execute(insert(old.tables["votes"]), [{**row, "battle_id": "old-battle", "vote": "a"}])
    engine.dispose()


def test_a_store_from_before_sampling_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    _old_schema(path)
    upgraded = VoteStore.open(path)
    [old_vote] = upgraded.votes()
    assert (old_vote.battle_id, old_vote.vote, old_vote.seed, old_vote.item.answer) == (
        "old-battle",
        "a",
        None,
        None,
    )
    battle = upgraded.create_battle(
        Matchup(ITEM, "hice", "additive", "x", "y", "lm", decoding="{}", seed=3), "anon-2"
    )
    assert upgraded.record_vote(battle.id, "b", "anon-2").seed == 3
    upgraded.close()
    again = VoteStore.open(path)  # opening twice adds nothing and loses nothing
    assert [v.seed for v in again.votes()] == [None, 3]
    again.close()
