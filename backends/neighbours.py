"""Nearest vocabulary neighbours of a learned vector, by cosine similarity, with faiss.

Only whole-word tokens are indexed (a leading word boundary and letters only), so the
neighbours are words a person can read rather than sub-word fragments and punctuation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import faiss
import numpy as np
import torch

from backends.nonce_lm import NonceLM

Space = Literal["input", "output"]


@dataclass(frozen=True)
class Neighbour:
    token: str
    token_id: int
    similarity: float


def is_whole_word(piece: str) -> bool:
    """True for word-start tokens of 3+ letters: ' lizard', not 'ard', ' st' or '.'."""
    if not piece.startswith(" "):
        return False
    body = piece[1:]
    # Three letters at least: two-letter word-start pieces are mostly fragments (st, ch, gr).
    return len(body) >= 3 and body.isalpha() and "\ufffd" not in body


def piece_texts(tokenizer, pieces: list[str | None]) -> list[str]:
    """Each vocabulary piece as the text it stands for, its leading space kept.

    SentencePiece vocabularies (Gemma) mark a word start with "▁"; byte-level BPE ones
    (SmolLM2, GPT-2) with "Ġ" and spell other bytes as stand-in characters, so those are
    decoded through the tokenizer's own byte table."""
    sample = [p for p in pieces[:5000] if p]
    if sum(p.startswith("▁") for p in sample) >= sum(p.startswith("Ġ") for p in sample):
        return [(p or "").replace("▁", " ") for p in pieces]
    return [tokenizer.convert_tokens_to_string([p]) if p else "" for p in pieces]


class VocabularyIndex:
    """Exact cosine index over the whole-word rows of one embedding matrix."""

    def __init__(self, lm: NonceLM, space: Space):
        if space not in ("input", "output"):
            raise ValueError(f"unknown space {space!r}: expected input or output")
        kept = [
            (i, text)
            for i, text in enumerate(piece_texts(lm.tokenizer, lm.pieces()))
            if is_whole_word(text)
        ]
        self.ids = np.array([i for i, _ in kept], dtype=np.int64)
        self.tokens = [w.strip() for _, w in kept]
        matrix = lm.input_matrix if space == "input" else lm.output_matrix
        with torch.no_grad():
            rows = matrix[torch.from_numpy(self.ids).to(matrix.device)].float().cpu().numpy()
        faiss.normalize_L2(rows)
        self.vectors = rows  # [n_words, d], unit length
        self.index = faiss.IndexFlatIP(rows.shape[1])
        self.index.add(rows)
        self._row_of = {int(token_id): row for row, token_id in enumerate(self.ids)}

    def vectors_of(self, token_ids: list[int]) -> np.ndarray:
        """Unit vectors of indexed tokens, [len(token_ids), d]."""
        return self.vectors[[self._row_of[t] for t in token_ids]]

    def search(self, vectors: torch.Tensor, k: int = 10) -> list[list[Neighbour]]:
        """[q, d] (or [d]) -> per query the k most similar whole-word tokens."""
        if not 1 <= k <= 1000:
            raise ValueError(f"k={k}: choose 1..1000")
        queries = vectors.detach().float().cpu().numpy().reshape(-1, self.vectors.shape[1]).copy()
        empty = np.linalg.norm(queries, axis=1) == 0  # a zero vector has no direction
        faiss.normalize_L2(queries)
        sims, rows = self.index.search(queries, k)
        return [
            []
            if none
            else [Neighbour(self.tokens[r], int(self.ids[r]), float(s)) for s, r in zip(srow, rrow)]
            for none, srow, rrow in zip(empty, sims, rows)
        ]


_INDEXES: dict[tuple[int, str], VocabularyIndex] = {}


def vocabulary_index(lm: NonceLM, space: Space = "input") -> VocabularyIndex:
    """Built once per LM and space (a few seconds for Gemma's 262k-token vocabulary)."""
    key = (id(lm), space)
    if key not in _INDEXES:
        if space == "output" and lm.tied and (id(lm), "input") in _INDEXES:
            _INDEXES[key] = _INDEXES[(id(lm), "input")]  # tied: the same matrix
        else:
            _INDEXES[key] = VocabularyIndex(lm, space)
    return _INDEXES[key]
