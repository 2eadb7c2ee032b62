"""What every task run shares: its options, the made-up nonce strings, and learning a word
with each chosen learner under the benchmark's documented settings."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

from backends.inputs import Example
from backends.learners import NonceEmbedding, load_learner
from backends.learners.token_tuning import TokenTuningConfig
from backends.nonce_lm import NonceLM
from benchmarks.data import with_nonce

log = logging.getLogger(__name__)

# The stand-in word: the blank / <nonce> is filled with made-up strings WordNet does not
# know (checked in tests), so no learner can look the real word up (definition_reader
# reads WordNet glosses).
STAND_IN = "dax"
# Cloze needs one per candidate; each is read only from its own examples.
CLOZE_NONCES = ("dax", "wug", "blicket", "toma", "fep")


@dataclass(frozen=True)
class RunOptions:
    """Parsed command-line options, shared by every task."""

    data: tuple[Path, ...]
    learners: tuple[str, ...]
    lm: str | None = None  # LM preset; None: the settings' default
    device: str = "auto"
    shots: tuple[int, ...] = (1, 2, 3)
    limit: int | None = None  # first N items per data file (after `offset`)
    offset: int = 0  # items skipped first: a held-out range is `--offset 110`
    # Token tuning in benchmark runs: the app's default steps and Lampinen & McClelland's
    # lr 0.01 (a step costs about 0.5 s per item of three sentences on 2 CPU cores).
    tt_steps: int = TokenTuningConfig().steps
    tt_lr: float = 0.01
    max_new_tokens: int = 32  # definition length cap (generation stops at a sentence end)
    seed: int = 0
    db: str | None = None  # tournament: vote store path or URL
    tie_margin: float = 0.01  # tournament: |F1 difference| at or below which it is a tie
    skip_cold: bool = False  # perf: skip the ~70 s GGUF conversion
    big: bool = False  # perf: add the 10^6 sizes
    decode_only: bool = False  # perf: only definitions and decoding (fp32 vs int8 head)
    knn_only: bool = False  # perf: only the kNN store rows (and the process's peak memory)
    skip_knn: bool = False  # perf: leave out the kNN store and the ratings (CPU-only work)
    knn_sizes: tuple[int, ...] = (10_000, 100_000)
    vote_sizes: tuple[int, ...] = (10_000, 100_000)
    workers: int = 1  # defgen: processes generating definitions, each a share of the items


def learner_config(name: str, options: RunOptions):
    """The config a benchmark run uses for a learner (None: the learner's defaults)."""
    if name == "token_tuning":
        return TokenTuningConfig(steps=options.tt_steps, lr=options.tt_lr)
    return None


def describe_config(name: str, options: RunOptions) -> dict:
    """The learner's effective settings, for the result record."""
    learner = load_learner(name, learner_config(name, options))
    config = getattr(learner, "config", None)
    settings = dataclasses.asdict(config) if dataclasses.is_dataclass(config) else {}
    settings = {key: _plain(value) for key, value in settings.items()}
    if name == "token_tuning":
        settings["label"] = f"TT-{options.tt_steps}"
    return settings


def _plain(value):
    """A config value as JSON can hold it (a path as its text, nested dicts alike)."""
    if isinstance(value, dict):
        return {key: _plain(v) for key, v in value.items()}
    return str(value) if isinstance(value, Path) else value


def examples_for(texts: list[str], nonce: str = STAND_IN) -> list[Example]:
    """Sentences with their `___` / `<nonce>` filled by the made-up string."""
    return [Example(with_nonce(text, nonce)) for text in texts]


def learn_each(
    lm: NonceLM, learners: tuple[str, ...], word: str, examples: list[Example], options: RunOptions
) -> list[NonceEmbedding]:
    """One embedding of `word` per learner, in the given order (no definition is given)."""
    missing = [i + 1 for i, ex in enumerate(examples) if word not in ex.text]
    if missing:
        log.debug("example(s) %s do not contain %r; learners read them as context", missing, word)
    return [
        load_learner(name, learner_config(name, options)).learn(lm, word, examples)
        for name in learners
    ]


def limited(items: list, limit: int | None, offset: int = 0) -> list:
    """Items `offset` .. `offset + limit` (all from `offset` on when `limit` is None)."""
    return items[offset:] if limit is None else items[offset : offset + limit]
