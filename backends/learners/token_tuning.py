"""Token tuning (TT-N): gradient steps on only the new token's vectors, the LM frozen.

Lampinen & McClelland (2017), "One-shot and few-shot learning of word embeddings": start
from the centroid (or zero), then minimise the LM's cross-entropy on the example sentences
plus 0.01 * L2 on the new embedding, updating nothing but the new token's input and output
vectors. Replaying sentences *without* the word (their 100 negative sentences) keeps the
word's base rate from inflating. CoLLEGe (Teehan et al. 2024) uses N = 1, 2 steps as TT-N.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import torch

from backends.learners.base import Learner, NonceEmbedding, example_ids
from backends.learners.centroid import centroid_vectors
from backends.nonce_lm import NonceLM, NonceSlot

log = logging.getLogger(__name__)

MAX_STEPS = 500  # a cap so one request cannot hold the CPU for minutes


@dataclass(frozen=True)
class TokenTuningConfig:
    # Gradient steps; the paper trains 100 epochs, CoLLEGe's TT-N uses 1-2 steps.
    steps: int = 20
    # Adam learning rate (paper: 0.01; CoLLEGe: 1e-3 / 3e-4).
    lr: float = 0.01
    # Weight of the L2 penalty on the new vectors (paper: 0.01).
    l2: float = 0.01
    # Start from the centroid of the context (paper) or from zero.
    init: Literal["centroid", "zero"] = "centroid"
    # Nonce-free sentences mixed into each step, against base-rate inflation (0 = off).
    replay_per_step: int = 2
    # Size of the replay pool (the paper's 100 negative sentences).
    replay_pool: int = 100
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.steps, int) or isinstance(self.steps, bool):
            raise ValueError(f"steps={self.steps!r:.40}: give a whole number 0..{MAX_STEPS}")
        if not 0 <= self.steps <= MAX_STEPS:
            raise ValueError(f"steps={self.steps}: choose 0..{MAX_STEPS}")
        if not 0 < self.lr <= 1:
            raise ValueError(f"lr={self.lr}: choose a value in (0, 1]")


@lru_cache(maxsize=1)
def replay_sentences(n: int = 100) -> tuple[str, ...]:
    """Nonce-free sentences: the first `n` WordNet usage examples, a fixed, varied pool."""
    from backends.lexicon import wordnet

    out = []
    for synset in wordnet().all_synsets():
        out.extend(e for e in synset.examples() if len(e.split()) >= 5)
        if len(out) >= n:
            break
    return tuple(out[:n])


def example_loss(lm: NonceLM, seqs: list[list[int]], slot: NonceSlot) -> torch.Tensor:
    """Mean next-token cross-entropy over every predicted token of `seqs`."""
    logprobs = lm.token_logprobs(seqs, slot)
    return -torch.cat(logprobs).mean()


class TokenTuningLearner(Learner):
    name = "token_tuning"
    paper = "Lampinen & McClelland 2017 (token tuning); CoLLEGe's TT-N baseline"

    def __init__(self, config: TokenTuningConfig = TokenTuningConfig()):
        self.config = config

    def _init_vectors(self, lm, word, examples):
        if self.config.init == "centroid":
            return centroid_vectors(lm, word, examples)
        zero = torch.zeros(lm.dim, device=lm.device)
        return zero, zero.clone()

    def _learn(self, lm, word, examples, definition):
        cfg = self.config
        vin, vout = (
            v.detach().clone().requires_grad_(True) for v in self._init_vectors(lm, word, examples)
        )
        slot = NonceSlot(vin[None], vout[None])
        seqs = example_ids(lm, word, examples, lm.vocab_size)
        pool = (
            [lm.encode(s) for s in replay_sentences(cfg.replay_pool)] if cfg.replay_per_step else []
        )
        rng = random.Random(cfg.seed)
        optimizer = torch.optim.Adam([vin, vout], lr=cfg.lr)
        with torch.no_grad():
            before = float(example_loss(lm, seqs, slot))
        for _ in range(cfg.steps):
            batch = seqs + rng.sample(pool, min(cfg.replay_per_step, len(pool)))
            loss = example_loss(lm, batch, slot) + cfg.l2 * (vin.pow(2).sum() + vout.pow(2).sum())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        with torch.no_grad():
            after = float(example_loss(lm, seqs, slot))
        log.info(
            "token tuning %r: example loss %.3f -> %.3f in %d steps", word, before, after, cfg.steps
        )
        info = {"loss_before": before, "loss_after": after, "steps": cfg.steps}
        return NonceEmbedding(self.name, word, vin.detach(), vout.detach(), info=info)
