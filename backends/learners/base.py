"""What every learner returns, and the pieces of input handling they share."""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import torch

from backends.inputs import Example, check_examples
from backends.nonce_lm import LogitHook, NonceLM
from backends.settings import load_settings


@dataclass
class NonceEmbedding:
    """A learned new token: the same shape of result for every learner."""

    learner: str
    word: str
    input_vector: torch.Tensor  # [d], a row for the LM's embedding matrix
    output_vector: torch.Tensor  # [d], a row for the LM head
    # Text put before the definition prompt (prompting: the example sentences).
    prompt_prefix: str = ""
    # Given the id the word holds in a batch, a hook that rewrites next-token
    # probabilities at generation and scoring time (the kNN cache).
    make_hook: Callable[[int], LogitHook] | None = None
    seconds: float = 0.0
    # Learner-specific measurements worth showing (losses before/after, store size, ...).
    info: dict = field(default_factory=dict)
    # The vectors its definition is written from where they are not the vectors above:
    # (weight, input vector, output vector) per word the learner read the new word as
    # (college's LM reader), when it read more than one, whose mixture writes it
    # (`NonceLM.generate`'s `mixture`; their weighted mean the LM reads as no word at all);
    # or one entry, a sharper reading of the same evidence (college from three examples
    # up, `CollegeConfig.fitted_from`). Empty: the vectors above.
    readings: list[tuple[float, torch.Tensor, torch.Tensor]] = field(default_factory=list)
    # The definition probe where it is not CoLLEGe's ('The word "{word}" is defined as'):
    # college names the class the examples use the word in ('The verb "{word}" ...').
    probe: str = ""


class Learner(ABC):
    """Builds a NonceEmbedding for a word from 1..K example sentences that use it."""

    name: ClassVar[str]
    paper: ClassVar[str]
    # Whether the example sentences are what it learns from. The arena shows sentences and
    # no definition, so by default it pits only these learners against each other.
    reads_examples: ClassVar[bool] = True
    # Whether its input vector holds what it learned: not where the vector is random and
    # the examples go into the prompt (prompting), so a cosine to the real word means nothing.
    learns_a_vector: ClassVar[bool] = True

    def check_lm(self, lm: NonceLM) -> None:
        """Raise ValueError, with what to do instead, if this learner cannot teach `lm`
        (called for every learner of a request before any of them learns). Most learners
        work with any causal LM; one with trained weights for one LM says otherwise."""
        return None

    def learn(
        self, lm: NonceLM, word: str, examples: list[Example], definition: str | None = None
    ) -> NonceEmbedding:
        self.check_lm(lm)
        if isinstance(examples, str):
            examples = [examples]
        if not all(isinstance(e, Example) for e in examples):
            # called with plain sentences, as `pipeline.learn` takes them: checked the same way
            examples = check_examples(word, [getattr(e, "text", e) for e in examples])
        start = time.perf_counter()
        result = self._learn(lm, word, examples, definition)
        result.seconds = time.perf_counter() - start
        return result

    @abstractmethod
    def _learn(
        self, lm: NonceLM, word: str, examples: list[Example], definition: str | None
    ) -> NonceEmbedding: ...


def mean_norms(lm: NonceLM) -> tuple[float, float]:
    """Average L2 norm of the LM's input and output embedding rows (what a new row should match)."""

    @torch.no_grad()
    def compute():
        return (
            float(lm.input_matrix.norm(dim=-1).mean()),
            float(lm.output_matrix.norm(dim=-1).mean()),
        )

    return lm.memo("mean_norms", compute)


def rescale(vector: torch.Tensor, norm: float) -> torch.Tensor:
    """Give `vector` the L2 norm `norm` (a mean of rows is shorter than any one row)."""
    return vector * (norm / vector.norm().clamp(min=1e-8))


@dataclass(frozen=True)
class RowStats:
    """Where an embedding matrix's rows sit: their mean, and how far a row lies from it."""

    mean_row: torch.Tensor  # [d], the direction every row shares
    spread: float  # mean L2 distance of a row from mean_row


def row_stats(lm: NonceLM, space: str) -> RowStats:
    """RowStats of the input ("input") or output ("output") matrix, computed once per LM."""

    @torch.no_grad()
    def compute() -> RowStats:
        matrix = (lm.input_matrix if space == "input" else lm.output_matrix).float()
        mean_row = matrix.mean(0)
        spread = float((matrix - mean_row).norm(dim=-1).mean())
        return RowStats(mean_row.to(lm.input_matrix.dtype), spread)

    return lm.memo(("row_stats", space), compute)


def like_a_row(vector: torch.Tensor, stats: RowStats) -> torch.Tensor:
    """Keep the shared component, scale what is distinctive to a typical row's spread.

    A mean of many rows is mostly the shared direction; rescaling it whole would amplify
    that direction, which every hidden state scores highly, and the LM would then say the
    new word everywhere. Scaling only the deviation places it where real tokens sit."""
    deviation = vector - stats.mean_row.to(vector)
    return stats.mean_row.to(vector) + rescale(deviation, stats.spread)


def example_ids(lm: NonceLM, word: str, examples: list[Example], nonce_id: int) -> list[list[int]]:
    """Each example tokenised with the word as the nonce id."""
    return [lm.encode(ex.text, word, nonce_id) for ex in examples]


def stored_path(lm: NonceLM, label: str) -> Path:
    """Where a per-LM constant (states computed once) is kept in the cache folder."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in lm.name)
    # The name alone could be a reused folder name; a digest of the weights tells models apart.
    digest = hashlib.sha256(lm.input_matrix[:64].detach().cpu().numpy().tobytes()).hexdigest()[:12]
    return load_settings().cache_dir / "stores" / f"{name}-{digest}-{label}"
