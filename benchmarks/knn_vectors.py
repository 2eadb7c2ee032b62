"""Vectors for measuring the cache's kNN store: synthetic, or the LM's own hidden states.

The store holds final hidden states of the LM (Grave et al. 2017; Khandelwal et al. 2020),
so an index is best judged on those: their distribution (a few very large coordinates, a
low intrinsic dimension, many near-duplicates for frequent contexts) is what IVF and PQ
have to cut up. Producing them costs a forward pass per token (about 200 states a second
on one CPU thread for Gemma 3 270M), so they are computed once per LM and kept in the
cache folder; past that size, `tiled` stretches them with perturbed copies (and says so).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np

from backends.nonce_lm import NonceLM

log = logging.getLogger(__name__)

PASSAGE_TOKENS = 64  # WordNet entries joined into passages of about this length
BATCH = 16  # passages per forward pass


def hidden_like(n: int, dim: int, seed: int, latent: int = 32) -> np.ndarray:
    """[n, dim] float32 vectors like LM hidden states: a low intrinsic dimension (`latent`),
    256 clusters in it, mapped into `dim` by one fixed random matrix, plus a little noise."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((latent, dim)).astype(np.float32)  # [latent, dim]
    centres = rng.standard_normal((256, latent)).astype(np.float32)
    points = centres[rng.integers(0, 256, n)] + 0.5 * rng.standard_normal((n, latent))
    noise = 0.1 * rng.standard_normal((n, dim))
    return (points.astype(np.float32) @ basis + noise).astype(np.float32)


def wordnet_passages(lm: NonceLM):
    """Token-id passages of running text: WordNet glosses and usage examples in synset
    order, joined until a passage holds about PASSAGE_TOKENS tokens."""
    from backends.lexicon import wordnet

    text: list[str] = []
    for synset in wordnet().all_synsets():
        text.append(synset.definition().capitalize() + ".")
        text.extend(e.capitalize() + "." for e in synset.examples())
        if sum(len(t) for t in text) >= 4 * PASSAGE_TOKENS:  # about 4 characters a token
            yield lm.encode(" ".join(text))[: 2 * PASSAGE_TOKENS]
            text = []


def lm_states(lm: NonceLM, n: int, path: Path) -> np.ndarray:
    """[n, d] float32 final hidden states of `lm` over WordNet text (every position that
    predicts a next token, as the cache stores them), cached at `path` (.npy)."""
    if path.exists():
        states = np.load(path, mmap_mode="r")
        if len(states) >= n:
            return np.asarray(states[:n])
    from backends.learners.cache import states_before

    out = np.empty((n, lm.dim), np.float32)
    filled, batch = 0, []
    for passage in wordnet_passages(lm):
        batch.append(passage)
        if len(batch) < BATCH:
            continue
        keys, _ = states_before(lm, batch, None)  # [positions, d]
        take = min(len(keys), n - filled)
        out[filled : filled + take] = keys[:take]
        filled, batch = filled + take, []
        log.info("LM states: %d of %d", filled, n)
        if filled == n:
            break
    if filled < n:
        raise RuntimeError(f"WordNet text gave only {filled} states; asked for {n}")
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp.npy")
    np.save(partial, out)
    partial.replace(path)  # readers never see a half-written file
    return out


def tiled(states: np.ndarray, n: int, seed: int, scale: float = 0.5) -> np.ndarray:
    """[n, d]: `states` followed by perturbed copies of it, to reach sizes too costly to
    compute. A copy adds Gaussian noise of `scale` times each coordinate's spread, so
    copies sit near their source without being duplicates. An approximation: say so
    wherever it is used."""
    rng = np.random.default_rng(seed)
    out = np.empty((n, states.shape[1]), np.float32)
    m = min(n, len(states))
    out[:m] = states[:m]
    spread = scale * states.std(0)  # [d]
    for start in range(m, n, len(states)):
        rows = min(len(states), n - start)
        noise = rng.standard_normal((rows, states.shape[1]), dtype=np.float32)
        out[start : start + rows] = states[:rows] + noise * spread
    return out
