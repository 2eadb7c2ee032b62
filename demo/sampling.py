"""The arena's definitions, sampled per battle: the same text rarely recurs, so a definition
cannot be recognised from an earlier battle and tied to its learner.

Temperature and top-k sampling (Fan et al. 2018) through the library's decoding controls
(backends/decoding.py: the word banned from its own definition, no repeated word trigram, a
content word said once, plain text only), seeded per battle; the whole decoding is stored
with every vote, so each battle can be regenerated.

    sampling = ArenaSampling(temperature=0.8, top_k=40)
    texts = define_sampled(lm, embeddings, sampling, seed=1234)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch and the LM load on first use, never at import
    from backends.decoding import Decoding
    from backends.learners.base import NonceEmbedding
    from backends.nonce_lm import NonceLM


@dataclass(frozen=True)
class ArenaSampling:
    """How a battle's two definitions are sampled (the settings' part; the seed is per battle)."""

    temperature: float = 0.8  # < 1 sharpens the LM's distribution; 0 is refused (greedy)
    top_k: int = 40  # sample among the k likeliest tokens only (0: all of them)
    max_new_tokens: int = 32  # tokens per definition, first sentence kept

    def __post_init__(self) -> None:
        if not 0.0 < self.temperature <= 5.0:
            raise ValueError(f"temperature={self.temperature}: choose in (0, 5]")
        if self.top_k < 0 or self.max_new_tokens < 1:
            raise ValueError(f"top_k={self.top_k}, max_new_tokens={self.max_new_tokens}")

    def decoding(self, seed: int) -> Decoding:
        """The library's decoding for one battle: its defaults, this sampling and `seed`."""
        from backends.decoding import Decoding

        return Decoding(temperature=self.temperature, top_k=self.top_k, seed=seed)

    def as_json(self, seed: int) -> str:
        """What a vote stores: every decoding setting of its battle, seed and length included,
        and which cut definitions were shown with a mark (`mark_cut`, a
        `backends.definitions.MARK_LEVEL`; true, the first level, in older votes)."""
        from backends.definitions import MARK_LEVEL

        record = {**self.decoding(seed).record(), "max_new_tokens": self.max_new_tokens}
        return json.dumps({**record, "mark_cut": MARK_LEVEL}, sort_keys=True)


def replay(stored: str) -> tuple[Decoding, int, int]:
    """A stored battle's decoding, token budget and `mark_cut`, to generate its definitions
    again as they were shown (votes stored before the cut mark replay without it)."""
    from backends.decoding import Decoding

    record = json.loads(stored)
    max_new_tokens = record.pop("max_new_tokens")
    mark_cut = record.pop("mark_cut", False)
    return Decoding.from_record(record), max_new_tokens, mark_cut


def define_sampled(
    lm: NonceLM,
    embeddings: Sequence[NonceEmbedding],
    decoding: Decoding,
    max_new_tokens: int,
    mark_cut: int | None = None,
) -> list[str]:
    """Every embedding's definition, sampled in one batch; the same seed gives the same texts.
    Marked as a person reads them, at `mark_cut` (a `MARK_LEVEL`, true is 1; None: the
    current one): ' …' after one the budget cut, and from level 2 one a line break cut
    inside an open bracket (`Definition.marked`).

    The arena's one call into the library's generation."""
    from backends.definitions import define

    found = define(lm, list(embeddings), max_new_tokens, decoding=decoding)
    return [d.marked(mark_cut) for d in found]
