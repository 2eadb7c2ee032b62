"""Vote store: server-created battles and append-only votes, on SQLAlchemy Core.

An embedded SQLite file (WAL mode) by default; the same code runs on PostgreSQL given a URL,
so several app replicas can share one store. A battle takes at most one vote, enforced by a
UNIQUE constraint in the database so it holds across threads, processes and replicas. Vote
rows are never updated or deleted. Annotator ids arrive pseudonymous and are kept as given.
Columns added since the first release (answer, pos, reference, decoding, seed, repeat_of,
auto_vote) are nullable and are added to an older database when it is opened, so existing votes
stay as they were.

    store = VoteStore.open("votes.db")
    item = Item("blicket", ("She fed the <nonce> twice a day.",))
    matchup = Matchup(item, "hice", "additive", "a small pet", "a tool", lm="gemma-3-270m")
    battle = store.create_battle(matchup, annotator="anon-3f")
    store.record_vote(battle.id, "a", annotator="anon-3f")
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    func,
    insert,
    inspect,
    literal,
    make_url,
    select,
)
from sqlalchemy import (
    text as sql_text,
)
from sqlalchemy.engine import URL
from sqlalchemy.exc import (
    ArgumentError,
    DatabaseError,
    IntegrityError,
    OperationalError,
    ProgrammingError,
)

from demo.vocabulary import JUDGES, VOTE_VALUES, Judge, VoteValue, sql_in

log = logging.getLogger(__name__)


class VoteRefused(ValueError):
    """A vote the store will not record: unknown battle, second vote, wrong annotator, bad value."""


class StoreUnavailable(RuntimeError):
    """The database cannot be reached or written (read-only, disk full, locked too long)."""


@dataclass(frozen=True)
class StoreSettings:
    """How the store talks to its database."""

    # seconds a writer waits for SQLite's write lock before failing: concurrent votes queue up
    busy_timeout_s: float = 30.0
    # FULL fsyncs the WAL at every commit, so a recorded vote survives power loss as well as an
    # app crash (NORMAL may drop the last commits on power loss); one fsync per vote is cheap
    sqlite_synchronous: Literal["NORMAL", "FULL"] = "FULL"


@dataclass(frozen=True)
class Item:
    """The made-up word and the example sentences a learner saw."""

    word: str
    examples: tuple[str, ...]
    # the real word hidden behind the made-up one (prepared items), shown after the vote
    answer: str | None = None
    # prepared items: the hidden word's part of speech in the sentences shown (demo.items.POS),
    # for the boards by part of speech, and the WordNet gloss of that sense, which the
    # automatic judge reads as the reference definition (demo/judge.py)
    pos: str | None = None
    reference: str | None = None


@dataclass(frozen=True)
class Matchup:
    """What a battle shows: one item, two learners and their definitions under one LM."""

    item: Item
    learner_a: str
    learner_b: str
    output_a: str
    output_b: str
    lm: str
    # how the two definitions were sampled for this battle (JSON), and the battle's seed;
    # None for greedy or canned definitions and for rows stored before sampling existed
    decoding: str | None = None
    seed: int | None = None
    # the battle this one shows again to another annotator (for their agreement), if any
    repeat_of: str | None = None
    # the automatic judge's verdict on the two definitions (demo/judge.py), computed once when
    # the battle is made; None where it has no reference (a person's own word, older rows)
    auto_vote: str | None = None
    # which automatic judge gave that verdict (`PoolJudge.name`: the tournament's and its version),
    # so agreement never pools verdicts of two versions; None for verdicts stored before
    # judges were named (2026-11-28), by whichever version judged then
    auto_judge: str | None = None


@dataclass(frozen=True, kw_only=True)
class Battle(Matchup):
    """A matchup shown blind to one annotator; created server-side with an unguessable id."""

    id: str
    annotator: str
    judge: Judge
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class Vote(Matchup):
    """One recorded judgment, self-contained (it copies its battle's matchup)."""

    battle_id: str
    vote: VoteValue
    annotator: str
    judge: Judge
    created_at: datetime


@dataclass(frozen=True, kw_only=True)
class AutoVote(Matchup):
    """A matchup and an automatic judge's verdict, written in bulk by the benchmarks."""

    vote: VoteValue
    annotator: str  # the automatic judge's name, e.g. "auto:bertscore"


_metadata = MetaData()
_SHARED = ("word", "examples", "learner_a", "learner_b", "output_a", "output_b", "lm")
# Columns added after stores already held votes: nullable, so older rows keep NULL, and
# added to an existing database by `_add_missing_columns` when it is opened.
_ADDED = {
    "answer": Text,
    "decoding": Text,
    "seed": BigInteger,
    "repeat_of": Text,
    "pos": Text,
    "reference": Text,
    "auto_vote": Text,
    "auto_judge": Text,
}
_ITEM_EXTRAS = ("answer", "pos", "reference")  # Item fields beside word and examples
# Matchup fields as they are
_MATCHUP_EXTRAS = ("decoding", "seed", "repeat_of", "auto_vote", "auto_judge")
_COPIED = (*_SHARED, *_ADDED)  # what a vote copies from its battle
# votes on prepared words drawn at once for a repeat; those whose sentences are not the
# prepared item's (someone typed a prepared word) are passed over
_REPEAT_DRAWS = 20


def _shared_columns() -> list[Column[Any]]:
    # examples is a JSON list of sentences
    return [Column(name, Text, nullable=False) for name in _SHARED]


def _added_columns() -> list[Column[Any]]:
    return [Column(name, kind, nullable=True) for name, kind in _ADDED.items()]


battles = Table(
    "battles",
    _metadata,
    Column("id", String(64), primary_key=True),
    *_shared_columns(),
    Column("annotator", Text, nullable=False),
    Column("judge", String(8), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    *_added_columns(),
    CheckConstraint(sql_in("judge", JUDGES), name="battles_judge"),
)
votes = Table(
    "votes",
    _metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("battle_id", ForeignKey("battles.id"), nullable=False, unique=True),
    *_shared_columns(),
    Column("vote", String(8), nullable=False),
    Column("annotator", Text, nullable=False),
    Column("judge", String(8), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    *_added_columns(),
    CheckConstraint(sql_in("vote", VOTE_VALUES), name="votes_vote"),
    CheckConstraint(sql_in("judge", JUDGES), name="votes_judge"),
)


def _quoted(value: object) -> str:
    """A value as messages quote it: repr, cut to 40 characters (ids and votes can be hostile)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _check(value: str, options: tuple[str, ...], what: str, error: type[ValueError]) -> None:
    if value not in options:
        raise error(f"unknown {what} {_quoted(value)}; valid: {', '.join(options)}")


@contextmanager
def _available(action: str) -> Iterator[None]:
    """Turn the database's operational failures into one typed, human error."""
    try:
        yield
    except OperationalError as err:
        reason = str(err.orig).lower()
        if "readonly" in reason or "read-only" in reason:
            why = "the database is read-only"
        elif "full" in reason or "no space" in reason:
            why = "the disk is full"
        elif "locked" in reason or "busy" in reason:
            why = "the database stayed busy too long"
        else:
            why = f"the database failed ({err.orig})"
        log.error("vote store cannot %s: %s", action, err.orig)
        raise StoreUnavailable(f"The vote store cannot {action}: {why}.") from err


def _utc(moment: datetime) -> datetime:
    # SQLite hands back naive datetimes (every value was written in UTC); PostgreSQL hands
    # back its session's time zone
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


def _matchup_fields(row: Any) -> dict[str, Any]:
    fields = {name: getattr(row, name) for name in (*_SHARED[2:], *_MATCHUP_EXTRAS)}
    extras = {name: getattr(row, name) for name in _ITEM_EXTRAS}
    return {"item": Item(row.word, tuple(json.loads(row.examples)), **extras), **fields}


def _row_to_vote(row: Any) -> Vote:
    return Vote(
        **_matchup_fields(row),
        battle_id=row.battle_id,
        vote=row.vote,
        annotator=row.annotator,
        judge=row.judge,
        created_at=_utc(row.created_at),
    )


def _sqlite_engine(url: str | URL, settings: StoreSettings) -> Engine:
    engine = create_engine(url, connect_args={"timeout": settings.busy_timeout_s})

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # busy_timeout first, so switching to WAL also waits for other writers
        cursor.execute(f"PRAGMA busy_timeout = {int(settings.busy_timeout_s * 1000)}")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute(f"PRAGMA synchronous = {settings.sqlite_synchronous}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    return engine


# Columns a table of this name must have to be the store's own: a database that already
# holds a "votes" table of another program is refused, not altered (`_add_missing_columns`)
_KEY_COLUMNS = {
    "battles": {"id", "word", "learner_a", "learner_b", "annotator"},
    "votes": {"battle_id", "vote", "annotator", "judge"},
}


def _check_schema(engine: Engine, create: bool) -> None:
    """Refuse a database whose battles/votes tables are someone else's, and, unless
    `create`, one that holds no vote store at all (reading must not create one)."""
    found = inspect(engine)
    tables = set(found.get_table_names())
    for table, needed in _KEY_COLUMNS.items():
        if table in tables:
            missing = needed - {column["name"] for column in found.get_columns(table)}
            if missing:
                raise ValueError(
                    f"this database's {table!r} table is not a vote store's (it has no "
                    f"{sorted(missing)[0]!r} column): give the votes a database of their own"
                )
    if not create and not set(_KEY_COLUMNS) <= tables:
        raise ValueError("this database holds no vote store (no battles and votes tables)")


def _check_sqlite_file(path: Path, create: bool) -> None:
    """`_check_schema` on a SQLite file opened read-only: the store's own connections switch
    a file to WAL and add tables, which a file that is refused must not get."""
    uri = f"file:{quote(str(path))}"  # a '?' or '#' in a file name is not the URI's
    url = URL.create("sqlite", database=uri, query={"mode": "ro", "uri": "true"})
    engine = create_engine(url)
    try:
        _check_schema(engine, create)
    except DatabaseError as err:  # a file that is no database ("file is not a database")
        raise StoreUnavailable(
            f"The vote store cannot open the database: it is not one ({err.orig})."
        ) from err
    finally:
        engine.dispose()


def _create_tables(engine: Engine) -> None:
    # two processes opening a fresh database may race to create tables; the loser retries once
    try:
        _metadata.create_all(engine)
    except (OperationalError, ProgrammingError) as err:
        log.info("retrying table creation after %s", err.orig)
        _metadata.create_all(engine)
    _add_missing_columns(engine)


def _column_names(engine: Engine, table: Table) -> set[str]:
    return {column["name"] for column in inspect(engine).get_columns(table.name)}


def _add_missing_columns(engine: Engine) -> None:
    """Bring a store created by an earlier version up to date: ADD COLUMN, nullable, once."""
    for table in (battles, votes):
        for name in sorted(set(_ADDED) - _column_names(engine, table)):
            kind = table.c[name].type.compile(engine.dialect)
            try:
                with engine.begin() as conn:
                    conn.execute(sql_text(f"ALTER TABLE {table.name} ADD COLUMN {name} {kind}"))
                log.info("vote store: added column %s.%s", table.name, name)
            except (OperationalError, ProgrammingError):
                if name not in _column_names(engine, table):  # not a racing process's doing
                    raise


class VoteStore:
    """Battles and votes in one database; safe to share between threads."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @classmethod
    def open(
        cls, target: str | Path, settings: StoreSettings | None = None, create: bool = True
    ) -> VoteStore:
        """Open (creating if needed, unless not `create`) a store at a SQLite path or a
        database URL."""
        settings = settings or StoreSettings()
        text: str | URL = str(target)
        checked = False  # the schema, once: read-only for a SQLite file that exists
        if "://" not in text:
            path = Path(text).expanduser().resolve()
            if path.is_file():  # looked at read-only first: a refused file stays as it was
                _check_sqlite_file(path, create)
                checked = True
            path.parent.mkdir(parents=True, exist_ok=True)
            # URL.create, not f"sqlite:///{path}": a URL string would decode %2e%2e%2f to ../
            text = URL.create("sqlite", database=str(path))
        try:  # a malformed URL or an unknown driver; the URL may hold a password: not echoed
            backend = make_url(text).get_backend_name()
            if backend == "sqlite":
                engine = _sqlite_engine(text, settings)
            else:
                engine = create_engine(text, pool_pre_ping=True)
        except (ArgumentError, ImportError) as err:
            raise ValueError(
                "the vote store target is neither a SQLite path nor a database URL with an "
                f"installed driver ({type(err).__name__})"
            ) from err
        try:
            with _available("open the database"):
                if not checked:
                    _check_schema(engine, create)
                _create_tables(engine)
        except ValueError:
            engine.dispose()
            raise
        log.info("vote store open at %s", make_url(text).render_as_string(hide_password=True))
        return cls(engine)

    def close(self) -> None:
        """Release the store's connections."""
        self.engine.dispose()

    def create_battle(self, matchup: Matchup, annotator: str, judge: Judge = "human") -> Battle:
        """Record a battle shown to `annotator`; its id is unguessable."""
        _check(judge, JUDGES, "judge", ValueError)
        battle = _new_battle(matchup, annotator, judge, datetime.now(timezone.utc))
        with _available("save the battle"), self.engine.begin() as conn:
            conn.execute(insert(battles), [_battle_row(battle)])
        return battle

    def record_vote(self, battle_id: str, vote: VoteValue, annotator: str) -> Vote:
        """Append the one vote a battle may take; raise VoteRefused otherwise."""
        _check(vote, VOTE_VALUES, "vote", VoteRefused)
        if not isinstance(battle_id, str) or len(battle_id) > 64:  # ids are 22 characters
            raise VoteRefused(f"unknown battle {_quoted(battle_id)}")
        now = datetime.now(timezone.utc)
        copied = [battles.c[name] for name in _COPIED]
        source = select(
            battles.c.id,
            *copied,
            literal(vote),
            battles.c.annotator,
            battles.c.judge,
            literal(now, DateTime(timezone=True)),
        ).where(battles.c.id == battle_id, battles.c.annotator == annotator)
        columns = ["battle_id", *_COPIED, "vote", "annotator", "judge", "created_at"]
        # one INSERT ... SELECT: the first statement of the transaction is a write, so SQLite
        # takes the write lock (waiting on busy_timeout) instead of upgrading a read snapshot
        try:
            with _available("record the vote"), self.engine.begin() as conn:
                statement = insert(votes).from_select(columns, source).returning(*votes.c)
                row = conn.execute(statement).one_or_none()  # None: no battle matched
        except IntegrityError as err:
            raise VoteRefused(f"battle {_quoted(battle_id)} already has a vote") from err
        if row is None:
            raise VoteRefused(self._why_not(battle_id))
        return _row_to_vote(row)

    def _why_not(self, battle_id: str) -> str:
        battle = self.get_battle(battle_id)
        if battle is None:
            return f"unknown battle {_quoted(battle_id)}"
        return f"battle {_quoted(battle_id)} was shown to another annotator"

    def get_battle(self, battle_id: str) -> Battle | None:
        """The battle with this id, or None."""
        with _available("read battles"), self.engine.connect() as conn:
            row = conn.execute(select(battles).where(battles.c.id == battle_id)).one_or_none()
        if row is None:
            return None
        return Battle(
            **_matchup_fields(row),
            id=row.id,
            annotator=row.annotator,
            judge=row.judge,
            created_at=_utc(row.created_at),
        )

    def record_auto_votes(self, records: Sequence[AutoVote]) -> int:
        """Write battles and verdicts of an automatic judge in one transaction."""
        for record in records:
            _check(record.vote, VOTE_VALUES, "vote", VoteRefused)
        now = datetime.now(timezone.utc)
        battle_rows, vote_rows = [], []
        for record in records:
            battle = _new_battle(record, record.annotator, "auto", now)
            row = _battle_row(battle)
            battle_rows.append(row)
            vote_rows.append({**_without(row, "id"), "battle_id": battle.id, "vote": record.vote})
        with _available("record automatic votes"), self.engine.begin() as conn:
            if battle_rows:
                conn.execute(insert(battles), battle_rows)
                conn.execute(insert(votes), vote_rows)
        log.info("recorded %d automatic votes", len(records))
        return len(records)

    def votes(self, judge: Judge | None = None) -> list[Vote]:
        """All votes in the order they were recorded, optionally of one kind of judge."""
        query = select(votes).order_by(votes.c.id)
        if judge is not None:
            _check(judge, JUDGES, "judge", ValueError)
            query = query.where(votes.c.judge == judge)
        with _available("read votes"), self.engine.connect() as conn:
            return [_row_to_vote(row) for row in conn.execute(query)]

    def vote_on(self, battle_id: str) -> Vote | None:
        """The vote a battle took, or None."""
        with _available("read votes"), self.engine.connect() as conn:
            row = conn.execute(select(votes).where(votes.c.battle_id == battle_id)).one_or_none()
        return None if row is None else _row_to_vote(row)

    def count_votes(self, judge: Judge | None = None, annotator: str | None = None) -> int:
        """How many votes are stored, optionally of one kind of judge or one annotator."""
        query = select(func.count()).select_from(votes)
        if judge is not None:
            _check(judge, JUDGES, "judge", ValueError)
            query = query.where(votes.c.judge == judge)
        if annotator is not None:
            query = query.where(votes.c.annotator == annotator)
        with _available("count votes"), self.engine.connect() as conn:
            return int(conn.execute(query).scalar_one())

    def repeat_candidate(self, annotator: str, among: Collection[Item]) -> Vote | None:
        """A random human vote by someone else, on a battle not shown again yet and not itself
        a repeat, whose item is one of `among` (the arena's prepared items: a person's own
        word and sentences are never shown to anyone else): the matchup to show `annotator`
        for inter-annotator agreement."""
        among = set(among)
        if not among:
            return None
        repeated = select(battles.c.repeat_of).where(battles.c.repeat_of.is_not(None))
        query = (
            select(votes)
            .where(
                votes.c.judge == "human",
                votes.c.annotator != annotator,
                votes.c.repeat_of.is_(None),
                votes.c.battle_id.not_in(repeated),
                votes.c.word.in_(sorted({item.word for item in among})),
            )
            .order_by(func.random())
            .limit(_REPEAT_DRAWS)
        )
        with _available("read votes"), self.engine.connect() as conn:
            rows = conn.execute(query).all()
        # the word alone is not enough: anyone may type a prepared word with sentences of
        # their own, so the whole item (word, sentences, answer) must be the prepared one
        found = (vote for vote in map(_row_to_vote, rows) if vote.item in among)
        return next(found, None)


def _new_battle(matchup: Matchup, annotator: str, judge: Judge, now: datetime) -> Battle:
    if matchup.learner_a == matchup.learner_b:
        raise ValueError(f"a battle needs two different learners, got {matchup.learner_a!r} twice")
    if matchup.auto_vote is not None:
        _check(matchup.auto_vote, VOTE_VALUES, "automatic verdict", ValueError)
    fields = {name: getattr(matchup, name) for name in ("item", *_SHARED[2:], *_MATCHUP_EXTRAS)}
    token = secrets.token_urlsafe(16)
    return Battle(**fields, id=token, annotator=annotator, judge=judge, created_at=now)


def _without(mapping: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in mapping.items() if k not in keys}


def _battle_row(battle: Battle) -> dict[str, Any]:
    row = _without(asdict(battle), "item")
    row["word"] = battle.item.word
    row["examples"] = json.dumps(list(battle.item.examples), ensure_ascii=False)
    row |= {name: getattr(battle.item, name) for name in _ITEM_EXTRAS}
    return row
