"""The vote store: refusals, concurrent writers, exports, and failures it must report."""

import csv
import io
import json
import multiprocessing
import os
import threading
from datetime import timezone
from pathlib import Path

import pytest
from sqlalchemy import event

from demo import store
from demo.store import AutoVote, Item, Matchup, StoreUnavailable, VoteRefused, VoteStore

ITEM = Item("blicket", ("She fed the <nonce> twice a day.", "The <nonce> purred."))
MATCHUP = Matchup(ITEM, "hice", "additive", "a small pet", "a kitchen tool", "gemma-3-270m")


@pytest.fixture
def votes_db(tmp_path: Path) -> Path:
    return tmp_path / "nested" / "votes.db"


@pytest.fixture
def sqlite_store(votes_db: Path):
    opened = VoteStore.open(votes_db)
    yield opened
    opened.close()


@pytest.fixture(scope="session")
def postgres_url():
    """NONCE_TEST_POSTGRES_URL (a throwaway database: its tables are dropped), else a
    throwaway cluster from Debian's postgresql package (installed by `make test`)."""
    pytest.importorskip("psycopg")
    url = os.environ.get("NONCE_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    from tests.tools.pgtemp import TempPostgres, missing_reason

    reason = missing_reason()
    if reason:
        pytest.skip(f"no PostgreSQL: {reason} (or set NONCE_TEST_POSTGRES_URL)")
    with TempPostgres() as server:
        yield server.url


@pytest.fixture(params=["sqlite", "postgresql"])
def vote_store(request: pytest.FixtureRequest, sqlite_store: VoteStore):
    """The same tests on SQLite and on PostgreSQL."""
    if request.param == "sqlite":
        yield sqlite_store
        return
    opened = VoteStore.open(request.getfixturevalue("postgres_url"))
    store.battles.metadata.drop_all(opened.engine)
    store.battles.metadata.create_all(opened.engine)
    yield opened
    opened.close()


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


def _voted(vote_store: VoteStore) -> list[store.Vote]:
    for annotator, verdict in [("anon-1", "a"), ("anon-2", "both_bad")]:
        battle = vote_store.create_battle(MATCHUP, annotator=annotator)
        vote_store.record_vote(battle.id, verdict, annotator=annotator)
    return vote_store.votes()


def test_jsonl_export_round_trips(vote_store: VoteStore, tmp_path: Path) -> None:
    votes = _voted(vote_store)
    assert vote_store.export(tmp_path / "votes.jsonl", "jsonl") == 2
    lines = (tmp_path / "votes.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [store.vote_record(v) for v in votes]
    assert json.loads(lines[0])["examples"] == list(ITEM.examples)


def test_csv_export_round_trips(vote_store: VoteStore) -> None:
    votes = _voted(vote_store)
    buffer = io.StringIO()
    vote_store.export(buffer, "csv")
    rows = list(csv.DictReader(io.StringIO(buffer.getvalue())))
    assert tuple(rows[0]) == store.EXPORT_FIELDS
    for row, vote in zip(rows, votes, strict=True):
        assert {**row, "examples": json.loads(row["examples"])} == store.vote_record(vote)


def test_export_refuses_unknown_format(vote_store: VoteStore) -> None:
    with pytest.raises(ValueError, match="'xml'; valid: jsonl, csv"):
        vote_store.export(io.StringIO(), "xml")  # type: ignore[arg-type]


def test_hf_dataset_layout(vote_store: VoteStore, tmp_path: Path) -> None:
    _voted(vote_store)
    root = vote_store.export_hf_dataset(tmp_path / "dataset")
    card = (root / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\n") and "path: data/votes.jsonl" in card
    assert len((root / "data" / "votes.jsonl").read_text(encoding="utf-8").splitlines()) == 2


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


@pytest.mark.parametrize("name", ["votes.jsonl", "human-2024_01.csv", "a.b.c"])
def test_safe_export_name_accepts_plain_names(name: str) -> None:
    assert store.safe_export_name(name) == name


@pytest.mark.parametrize(
    "name", ["", ".", "..", "../x", "a/b", "a\\b", "/etc/passwd", "x\n", "\x00"]
)
def test_safe_export_name_rejects_traversal(name: str) -> None:
    with pytest.raises(ValueError, match="export name"):
        store.safe_export_name(name)
