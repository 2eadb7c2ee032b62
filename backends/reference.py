"""Word reference vectors in the LM's input-embedding space, and cosine similarity.

As the benchmarks define it: for a known word w, the reference vector is the mean of the LM's
input embeddings of the tokens of " w". CoLLEGe training pulls generated vectors towards
it and the benchmarks grade learners against it, so it lives in the library both use. The
candidate matrix (all WordNet single-word lemmas, Definitional Nonce's candidates) is
computed once per LM and cached as float16.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import torch

from backends.nonce_lm import NonceLM
from backends.settings import load_settings

log = logging.getLogger(__name__)

CANDIDATES_VERSION = 1  # bump when the reference-vector definition changes


@torch.no_grad()
def reference_vectors(
    lm: NonceLM, words: list[str], batch: int = 4096, matrix: torch.Tensor | None = None
) -> np.ndarray:
    """[len(words), d] float32: mean input embedding (or rows of `matrix`, e.g. the output
    matrix) of the tokens of " w" for each w."""
    matrix = lm.input_matrix if matrix is None else matrix
    out = np.zeros((len(words), lm.dim), dtype=np.float32)
    for start in range(0, len(words), batch):
        chunk = words[start : start + batch]
        ids = lm.tokenizer([" " + w for w in chunk], add_special_tokens=False)["input_ids"]
        flat = torch.tensor([i for seq in ids for i in seq], device=lm.device)
        offsets = torch.tensor([0, *np.cumsum([len(s) for s in ids])[:-1]], device=lm.device)
        # EmbeddingBag's mean over each word's tokens: [len(chunk), d]
        means = torch.nn.functional.embedding_bag(flat, matrix, offsets, mode="mean")
        out[start : start + len(chunk)] = means.float().cpu().numpy()
    return out


def normalise(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), so a dot product is a cosine."""
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def unit(vector: np.ndarray | torch.Tensor) -> np.ndarray:
    """A [d] vector (numpy or torch, any device) as float32 numpy of unit length."""
    if isinstance(vector, torch.Tensor):
        vector = vector.detach().float().cpu().numpy()
    vector = np.asarray(vector, dtype=np.float32)
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def cosines(vector: np.ndarray | torch.Tensor, matrix: np.ndarray) -> np.ndarray:
    """Cosine of one [d] vector with every row of a [n, d] matrix -> [n]."""
    return normalise(matrix.astype(np.float32, copy=False)) @ unit(vector)


def _cache_file(lm: NonceLM) -> Path:
    safe = re.sub(r"[^\w.-]+", "_", lm.name)
    # kept under "benchmarks" so the matrices already cached there stay valid
    folder = load_settings().cache_dir / "benchmarks" / safe
    return folder / f"lemma-vectors-v{CANDIDATES_VERSION}-V{lm.vocab_size}.npz"


# (LM name, vocabulary size) -> (lemmas, [n, d] unit rows): the lemma part of the candidates,
# kept once read, as the Learn tab ranks a real word among them on every click that names one
_LEMMAS: dict[tuple[str, int], tuple[list[str], np.ndarray]] = {}


def lemma_matrix(lm: NonceLM) -> tuple[list[str], np.ndarray]:
    """(sorted WordNet single-word lemmas, [n, d] unit reference vectors).

    Cached under the cache dir, keyed by LM name and vocabulary size, and in memory."""
    from backends.lexicon import single_word_lemmas

    key = (lm.name, lm.vocab_size)
    if key in _LEMMAS:
        return _LEMMAS[key]
    path = _cache_file(lm)
    if path.exists():
        cached = np.load(path)
        lemmas, matrix = list(cached["words"]), cached["vectors"].astype(np.float32)
    else:
        lemmas = single_word_lemmas()
        matrix = reference_vectors(lm, lemmas)
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, words=np.array(lemmas), vectors=matrix.astype(np.float16))
        log.info("cached %d lemma reference vectors at %s", len(lemmas), path)
    _LEMMAS[key] = lemmas, normalise(matrix)  # shared by every caller: none writes to it
    return _LEMMAS[key]


def candidate_matrix(lm: NonceLM, extra_words: list[str]) -> tuple[list[str], np.ndarray]:
    """(sorted words, [n, d] unit rows): WordNet single-word lemmas ∪ `extra_words`, lowercased
    (Definitional Nonce's candidates)."""
    lemmas, matrix = lemma_matrix(lm)
    extra = sorted({w.lower() for w in extra_words} - set(lemmas))
    if not extra:
        return lemmas, matrix
    return lemmas + extra, np.concatenate([matrix, normalise(reference_vectors(lm, extra))])


def rank_among_lemmas(
    lm: NonceLM, vectors: list[torch.Tensor], word: str, reference: np.ndarray
) -> tuple[list[int], int]:
    """Definitional Nonce's measure for a word a person names: per vector, 1 + how many
    WordNet lemmas other than `word` are nearer it by cosine than `reference` (`word`'s
    reference vector, as typed) is; and how many lemmas could be (the rank's worst).

    A rank, not the raw cosine, because every word's reference vector shares a few large
    directions (Mu & Viswanath 2018): a vector made of them has a high cosine to every
    word, the real one included, and is ranked among them as it deserves."""
    lemmas, matrix = lemma_matrix(lm)
    others = np.array([w != word.lower() for w in lemmas])
    ranks = []
    for vector in vectors:
        query = unit(vector)
        sims = matrix @ query
        ranks.append(1 + int(np.sum(others & (sims > float(unit(reference) @ query)))))
    return ranks, int(others.sum()) + 1
