"""Stores for the store and export tests: SQLite, and PostgreSQL where a server can start."""

import os
from pathlib import Path

import pytest

from demo import store
from demo.store import VoteStore


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
