"""Additive / centroid learner (Lazaridou, Marelli & Baroni 2017).

The new word's vector is the mean of the LM's embeddings of the other words around it,
the "Additive" baseline of Lampinen & McClelland (2017) and of CoLLEGe (Teehan et al. 2024).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from backends.function_words import FUNCTION_WORDS
from backends.inputs import Example
from backends.learners.base import Learner, NonceEmbedding, example_ids, like_a_row, row_stats
from backends.nonce_lm import NonceLM, inflected_pattern


@dataclass(frozen=True)
class CentroidConfig:
    # Drop function words and punctuation before averaging (Lazaridou et al. sum content
    # words only).
    content_words_only: bool = True
    # Scale what is distinctive in the mean to a typical row's spread (see like_a_row).
    match_norm: bool = True


def context_token_ids(lm: NonceLM, ids: list[int], content_only: bool) -> list[int]:
    """Ordinary vocabulary ids in an example, minus specials (and function words/punctuation)."""
    special = set(lm.tokenizer.all_special_ids)
    keep = []
    for i in ids:
        if i >= lm.vocab_size or i in special:
            continue
        text = lm.tokenizer.decode([i]).strip().lower()
        if content_only and (not any(c.isalnum() for c in text) or text in FUNCTION_WORDS):
            continue
        keep.append(i)
    return keep


def centroid_vectors(
    lm: NonceLM, word: str, examples: list[Example], config: CentroidConfig = CentroidConfig()
) -> tuple[torch.Tensor, torch.Tensor]:
    """(input, output) centroids of the context tokens; falls back to all tokens if none left."""
    nonce = lm.vocab_size
    # An ending typed after the word ("wiggins": the nonce, then "s") is not a word around it.
    whole = inflected_pattern(word)
    examples = [Example(whole.sub(word, e.text)) for e in examples]
    ids = [
        i
        for seq in example_ids(lm, word, examples, nonce)
        for i in context_token_ids(lm, seq, config.content_words_only)
    ]
    if not ids:
        ids = [
            i
            for seq in example_ids(lm, word, examples, nonce)
            for i in context_token_ids(lm, seq, content_only=False)
        ]
    if not ids:
        raise ValueError(f"the examples for {word!r} hold no words besides it to average")
    index = torch.tensor(ids, device=lm.device)
    with torch.no_grad():
        vin = lm.input_matrix[index].mean(0)  # [d]
        vout = lm.output_matrix[index].mean(0)  # [d]
    if config.match_norm:
        vin = like_a_row(vin, row_stats(lm, "input"))
        vout = like_a_row(vout, row_stats(lm, "output"))
    return vin, vout


class CentroidLearner(Learner):
    name = "centroid"
    paper = "Lazaridou, Marelli & Baroni 2017 (Additive)"

    def __init__(self, config: CentroidConfig = CentroidConfig()):
        self.config = config

    def _learn(self, lm, word, examples, definition):
        vin, vout = centroid_vectors(lm, word, examples, self.config)
        return NonceEmbedding(self.name, word, vin, vout)
