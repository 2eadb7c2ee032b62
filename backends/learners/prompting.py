"""Prompting baseline (CoLLEGe, Teehan et al. 2024, section 4).

The new token knows nothing by itself: it gets a random embedding of the LM's average
norm, and the example sentences are put in the prompt before the question, so everything
the LM learns about the word it learns in context.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import torch

from backends.learners.base import Learner, NonceEmbedding, mean_norms, rescale


@dataclass(frozen=True)
class PromptingConfig:
    # Seed of the random vector, mixed with the word so each word gets its own.
    seed: int = 0
    # Text placed between the examples and the definition prompt.
    separator: str = "\n"


class PromptingLearner(Learner):
    name = "prompting"
    paper = "Teehan, Lake & Ren 2024 (CoLLEGe), in-context prompting baseline"
    learns_a_vector = False  # a random vector: what it learns is in the prompt

    def __init__(self, config: PromptingConfig = PromptingConfig()):
        self.config = config

    def _learn(self, lm, word, examples, definition):
        generator = torch.Generator().manual_seed(self.config.seed + zlib.crc32(word.encode()))
        norm_in, norm_out = mean_norms(lm)
        vin = rescale(torch.randn(lm.dim, generator=generator), norm_in).to(lm.device)
        vout = rescale(torch.randn(lm.dim, generator=generator), norm_out).to(lm.device)
        prefix = self.config.separator.join(ex.text for ex in examples) + self.config.separator
        return NonceEmbedding(self.name, word, vin, vout, prompt_prefix=prefix)
