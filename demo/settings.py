"""Settings for the web app: one frozen dataclass, and the one place that reads its environment."""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from backends.arguments import read_number, read_whole
from backends.settings import env_flag
from backends.settings import load_settings as load_library_settings
from demo.sampling import ArenaSampling

T = TypeVar("T")

ASSETS = Path(__file__).resolve().parent.parent / "assets"


def _default_cache_dir() -> Path:
    return load_library_settings().cache_dir


@dataclass(frozen=True)
class RateLimit:
    """A token bucket: `burst` actions at once, refilled at `per_minute`."""

    per_minute: float = 30.0  # sustained actions per annotator per minute
    burst: int = 10  # actions allowed back to back before the rate applies


@dataclass(frozen=True)
class DemoSettings:
    # Where votes and converted models live (NONCE_CACHE_DIR, shared with backends).
    cache_dir: Path = field(default_factory=_default_cache_dir)
    # Vote store: a SQLite path or a database URL (NONCE_DB); empty = cache_dir/votes.sqlite.
    db: str = ""
    # Learners ticked on the Learn tab at first (NONCE_LEARN_LEARNERS); empty = every one.
    learn_learners: tuple[str, ...] = ()
    # Learners the arena pits against each other (NONCE_ARENA_LEARNERS); empty = every one
    # that reads example sentences (a battle gives no definition for the definition reader).
    arena_learners: tuple[str, ...] = ()
    # Token tuning steps in arena battles (NONCE_ARENA_TT_STEPS): the library's default
    # (TokenTuningConfig.steps, not imported: it would load torch with the settings), as on
    # the Learn tab and in the benchmarks, so the arena judges the token tuning they measure.
    arena_tt_steps: int = 4
    # Prepared arena items, one JSON object per line: {"word", "examples": [...]}.
    arena_items: Path = ASSETS / "arena_items.jsonl"
    # Ready examples for the Learn tab.
    examples: Path = ASSETS / "examples.json"
    # Per-annotator limits on new battles and on votes (NONCE_BATTLES_PER_MIN, NONCE_VOTES_PER_MIN).
    battle_limit: RateLimit = RateLimit()
    vote_limit: RateLimit = RateLimit()
    # The same per client address, so rotating ids from one machine gains nothing
    # (NONCE_ADDRESS_BATTLES_PER_MIN, NONCE_ADDRESS_VOTES_PER_MIN; default: one person's).
    address_battle_limit: RateLimit = RateLimit()
    address_vote_limit: RateLimit = RateLimit()
    # Take the client address from X-Forwarded-For's first hop: only behind a proxy that sets
    # it, as a Space's does (NONCE_TRUST_FORWARDED; default on when SPACE_ID is set).
    trust_forwarded: bool = False
    # Exports of the whole vote table per client address (NONCE_EXPORTS_PER_MIN), and how
    # many export files the app keeps on disk at once (Gradio serves its own copy).
    export_limit: RateLimit = RateLimit(per_minute=6, burst=3)
    export_files_kept: int = 4
    # Learn clicks per client address (NONCE_LEARNS_PER_MIN). Learn runs one click at a time
    # and a click holds the LM for seconds (a minute with 100 token-tuning steps on a CPU),
    # so one client looping over the API would keep everyone else waiting; a person, who
    # waits for each click, stays far below it.
    learn_limit: RateLimit = RateLimit(per_minute=12, burst=6)
    # Events waiting in Gradio's queue at most (NONCE_QUEUE_SIZE): beyond it a request is
    # refused at once ("queue is full") instead of piling up memory and waiting time.
    queue_size: int = 256
    # Concurrency of events that set none (page load, tab select); 1 is Gradio's default.
    default_concurrency: int = 1
    # Gradio's cache of served files (exports, plots): every `[0]` s, delete those older than
    # `[1]` s.
    delete_cache: tuple[int, int] = (600, 600)
    # Mirror every vote to this Hugging Face dataset repo (owner/name) every
    # `hub_every_minutes` (NONCE_HUB_DATASET, NONCE_HUB_EVERY_MINUTES); empty = off. Needs a
    # write token in HF_TOKEN; the files wait in cache_dir/hub-mirror between pushes.
    hub_dataset: str = ""
    hub_every_minutes: float = 5.0
    # Salt hashed into annotator ids, so stored ids cannot be matched to logins (NONCE_ID_SALT).
    id_salt: str = "nonce-arena"
    # Key that signs browser ids (NONCE_ID_SECRET); empty = random per process, so browsers get
    # new ids after a restart. Set a long random one where votes should keep their annotator.
    id_secret: str = ""
    # Share of pool battles that show someone else's judged battle again, unchanged, so the
    # leaderboard can report inter-annotator agreement (NONCE_REPEAT_SHARE).
    repeat_share: float = 0.1
    # Share of prepared-word battles where one side is the LM itself defining the real word
    # after the same sentences with that word in them (DefGen's `oracle_in_context`), shown
    # as anonymously as a learner: a ceiling for people to judge the learners against
    # (NONCE_ARENA_ORACLE_SHARE; 0: off, the default, so the learners' own battles are not
    # thinned).
    arena_oracle_share: float = 0.0
    # Learned embeddings kept per (item, learner, LM, config), so battles skip re-learning.
    embedding_cache_size: int = 512
    # How each battle's two definitions are sampled (NONCE_ARENA_TEMPERATURE, NONCE_ARENA_TOP_K).
    arena_sampling: ArenaSampling = ArenaSampling()
    # Bootstrap resamples behind the leaderboard's 95% intervals.
    leaderboard_rounds: int = 100
    # Cheap events (battles from the cache, votes, leaderboard) served in parallel.
    event_concurrency: int = 16
    # Tokens generated per definition.
    max_new_tokens: int = 32
    # Show "Sign in with Hugging Face" (on a Space with hf_oauth: true).
    hf_login: bool = False
    # Learn the first ready example once in the background at launch, so the first person
    # to press Learn does not wait for the LM and the learners to load (NONCE_WARM_UP).
    warm_up: bool = True

    @property
    def db_target(self) -> str:
        return self.db or str(self.cache_dir / "votes.sqlite")

    def with_(self, **changes) -> DemoSettings:
        """A copy with some fields changed (tests use it for small limits and paths)."""
        return replace(self, **changes)


def _env(name: str, default: str = "") -> str:
    return os.environ.get(name, "").strip() or default


def _read(name: str, default: float, read: Callable[[str], T]) -> T:
    """A NONCE_* number as `read` (backends.arguments) takes it, the variable named when it
    is not one (a NaN included: a rate limit of NaN limited nothing)."""
    raw = _env(name, str(default))
    try:
        return read(raw)
    except ValueError as err:
        raise ValueError(f"{name}={raw[:40]!r}: {err}") from None


def _whole(name: str, default: int, low: int, high: int | None = None) -> int:
    return _read(name, default, lambda text: read_whole(text, low, high))


def _rate(name: str, base: RateLimit) -> RateLimit:
    return RateLimit(per_minute=_positive(name, base.per_minute), burst=base.burst)


def _positive(name: str, default: float, high: float = math.inf) -> float:
    return _read(name, default, lambda text: read_number(text, 0.0, high, above=True))


def _share(name: str, default: float) -> float:
    return _read(name, default, lambda text: read_number(text, 0.0, 1.0))


def _names(name: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in _env(name).split(",") if n.strip())


def load_demo_settings() -> DemoSettings:
    """Read NONCE_* (and the Space's SPACE_ID/OAUTH_CLIENT_ID) environment variables once."""
    base = DemoSettings()
    return DemoSettings(
        cache_dir=base.cache_dir,
        db=_env("NONCE_DB"),
        learn_learners=_names("NONCE_LEARN_LEARNERS"),
        arena_learners=_names("NONCE_ARENA_LEARNERS"),
        # 500: token tuning's MAX_STEPS (not imported: it would load torch with the settings)
        arena_tt_steps=_whole("NONCE_ARENA_TT_STEPS", base.arena_tt_steps, 0, 500),
        repeat_share=_share("NONCE_REPEAT_SHARE", base.repeat_share),
        arena_oracle_share=_share("NONCE_ARENA_ORACLE_SHARE", base.arena_oracle_share),
        arena_sampling=ArenaSampling(
            temperature=_positive("NONCE_ARENA_TEMPERATURE", base.arena_sampling.temperature, 5.0),
            top_k=_whole("NONCE_ARENA_TOP_K", base.arena_sampling.top_k, 0),
            max_new_tokens=base.max_new_tokens,
        ),
        battle_limit=_rate("NONCE_BATTLES_PER_MIN", base.battle_limit),
        vote_limit=_rate("NONCE_VOTES_PER_MIN", base.vote_limit),
        address_battle_limit=_rate("NONCE_ADDRESS_BATTLES_PER_MIN", base.address_battle_limit),
        address_vote_limit=_rate("NONCE_ADDRESS_VOTES_PER_MIN", base.address_vote_limit),
        export_limit=_rate("NONCE_EXPORTS_PER_MIN", base.export_limit),
        learn_limit=_rate("NONCE_LEARNS_PER_MIN", base.learn_limit),
        hub_dataset=_env("NONCE_HUB_DATASET"),
        hub_every_minutes=_positive("NONCE_HUB_EVERY_MINUTES", base.hub_every_minutes),
        queue_size=_whole("NONCE_QUEUE_SIZE", base.queue_size, 1),
        trust_forwarded=env_flag("NONCE_TRUST_FORWARDED", default=bool(_env("SPACE_ID"))),
        id_salt=_env("NONCE_ID_SALT", base.id_salt),
        id_secret=_env("NONCE_ID_SECRET"),
        hf_login=bool(_env("SPACE_ID") and _env("OAUTH_CLIENT_ID")),
        warm_up=env_flag("NONCE_WARM_UP", default=base.warm_up),
    )
