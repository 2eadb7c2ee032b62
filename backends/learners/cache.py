"""Unbounded neural cache (Grave, Joulin & Cissé 2017) / kNN-LM (Khandelwal et al. 2020).

Non-parametric: store the LM's final hidden state just before each occurrence of the new
word, keyed to the word, next to a background store of (hidden state, next token) pairs from
ordinary text. When generating or scoring, look up the k nearest stored states and mix

    p(w | h) = (1 - lambda) * p_LM(w | h) + lambda * p_kNN(w | h),
    p_kNN(w | h) = sum_{i in kNN(h), w_i = w} exp(theta * cos(h, h_i)) / Z.

The background store is a constant of the LM, built once and shared by every word's cache
(`WordStore`): a word adds only its own few states.

The word's input vector (needed to read it in the prompt) is the centroid. Its output
vector is zero: as in Grave et al., the parametric softmax knows nothing of a word it
has not been trained on (a logit of 0), and all of the word's probability comes from
the store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np
import torch

from backends.knn_store import KnnStore, StoreConfig
from backends.learners.base import Learner, NonceEmbedding, example_ids, stored_path
from backends.learners.centroid import centroid_vectors
from backends.nonce_lm import NonceLM, NonceSlot

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CacheConfig:
    # Interpolation weight of the kNN distribution (Grave et al. tune it on validation data).
    lam: float = 0.25
    # Neighbours retrieved per query.
    k: int = 16
    # Kernel sharpness theta on cosine similarity.
    theta: float = 10.0
    # Background sentences (WordNet usage examples) whose (state, next token) pairs are stored.
    background_sentences: int = 200
    store: StoreConfig = StoreConfig()

    def __post_init__(self):
        if not 0 <= self.lam <= 1:
            raise ValueError(f"lam={self.lam}: choose a value in [0, 1]")
        if not 1 <= self.k <= 1024:
            raise ValueError(f"k={self.k}: choose 1..1024")


@torch.no_grad()
def states_before(lm: NonceLM, seqs: list[list[int]], slot: NonceSlot | None):
    """Keys and values: the final hidden state at t-1 and the token at t, for every t >= 1."""
    ids, mask = lm.pad(seqs, left=False)
    hidden = lm.hidden(ids, mask, slot).last_hidden_state  # [B, T, d]
    keys, values = [], []
    for row, seq in enumerate(seqs):
        keys.append(hidden[row, : len(seq) - 1].float().cpu().numpy())
        values.append(np.asarray(seq[1:]))
    return np.concatenate(keys), np.concatenate(values)


@lru_cache(maxsize=2)
def background_pairs(lm: NonceLM, n_sentences: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys [m, d], next tokens [m]) over ordinary text: the cache's background store.

    A constant of the LM, so it is computed once and kept in the cache folder."""
    from backends.learners.token_tuning import replay_sentences

    if n_sentences == 0:
        return np.zeros((0, lm.dim), np.float32), np.zeros(0, np.int64)
    path = stored_path(lm, f"background-{n_sentences}.npz")
    if path.exists():
        with np.load(path) as saved:
            return saved["keys"], saved["values"]
    seqs = [lm.encode(s) for s in replay_sentences(n_sentences)]
    parts = [states_before(lm, seqs[i : i + 16], None) for i in range(0, len(seqs), 16)]
    keys, values = np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    path.parent.mkdir(parents=True, exist_ok=True)
    partial_path = path.with_suffix(".tmp.npz")
    np.savez(partial_path, keys=keys, values=values)
    partial_path.replace(path)  # readers never see a half-written file
    return keys, values


@lru_cache(maxsize=2)
def background_store(lm: NonceLM, n_sentences: int, config: StoreConfig) -> KnnStore | None:
    """The background's store, built once per LM, size and store config and shared by every
    word's cache (`WordStore`): a copy in each word's own store held 4.5 MB per cached word
    (1,750 keys at the defaults), and a large background wrote its file of keys per word."""
    keys, values = background_pairs(lm, n_sentences)
    return KnnStore(keys, values, config) if len(keys) else None


class WordStore:
    """One word's cache: the states that preceded the word (an exact store of its few keys,
    whatever `StoreConfig` the background takes) searched together with the shared
    background store. Each gives its k nearest and the k best of both are kept: for exact
    search the neighbours and cosines one store of their union gives (among exact ties the
    word's keys come first, where a union may order them otherwise); over an approximate
    background, the word's own states are never missed."""

    def __init__(self, own: KnnStore | None, background: KnnStore | None):
        self.stores = [store for store in (own, background) if store is not None]

    def __len__(self) -> int:
        return sum(len(store) for store in self.stores)

    @property
    def kind(self) -> str:
        """The background's index (the word's own store is always exact)."""
        return self.stores[-1].kind if self.stores else "flat"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """As `KnnStore.search`, over the word's states and the background together."""
        found = [store.search(queries, k) for store in self.stores]
        if not found:  # nothing stored: no neighbours
            return np.zeros((len(queries), 0), np.float32), np.zeros((len(queries), 0), np.int64)
        if len(found) == 1:
            return found[0]
        sims = np.concatenate([f[0] for f in found], axis=1)
        values = np.concatenate([f[1] for f in found], axis=1)
        best = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(sims, best, 1), np.take_along_axis(values, best, 1)


# The word's own entries are stored under this placeholder; the hook maps it to whatever
# nonce id the word holds in the batch it is generated in.
WORD = -2


def knn_hook(store: KnnStore | WordStore, config: CacheConfig, nonce_id: int):
    """The LogitHook mixing p_kNN into the LM's distribution, for the word at `nonce_id`."""

    def hook(hidden: torch.Tensor, logprobs: torch.Tensor) -> torch.Tensor:
        sims, values = store.search(hidden.detach().float().cpu().numpy(), config.k)
        values = np.where(values == WORD, nonce_id, values)
        weights = torch.softmax(torch.from_numpy(config.theta * sims), dim=-1)  # [N, k]
        weights = weights.masked_fill(torch.from_numpy(values < 0), 0.0)
        p_knn = torch.zeros_like(logprobs)
        p_knn.scatter_add_(
            1, torch.from_numpy(values.clip(0)).to(logprobs.device), weights.to(logprobs)
        )
        mixed = (1 - config.lam) * logprobs.exp() + config.lam * p_knn
        return mixed.clamp(min=1e-30).log()

    return hook


@torch.no_grad()
def word_probability(lm: NonceLM, seqs: list[list[int]], slot: NonceSlot, hook) -> tuple:
    """Mean probability of the new word where it occurs in `seqs`: the LM alone, and with
    `hook` mixing in the store. One forward pass; logits only at those positions."""
    nonce = lm.vocab_size
    ids, mask = lm.pad(seqs, left=False)
    hidden = lm.hidden(ids, mask, slot).last_hidden_state  # [B, T, d]
    alone, mixed = [], []
    for row, seq in enumerate(seqs):
        before = [t for t in range(len(seq) - 1) if seq[t + 1] == nonce]
        if before:
            h = hidden[row, before]  # [m, d], the states that predict the word
            logprobs = torch.log_softmax(lm.logits(h, slot).float(), dim=-1)
            alone.append(logprobs[:, nonce].exp())
            mixed.append(hook(h, logprobs)[:, nonce].exp())
    if not alone:
        return 0.0, 0.0
    return float(torch.cat(alone).mean()), float(torch.cat(mixed).mean())


class CacheLearner(Learner):
    name = "cache"
    paper = "Grave, Joulin & Cisse 2017 (unbounded cache); Khandelwal et al. 2020 (kNN-LM)"

    def __init__(self, config: CacheConfig = CacheConfig()):
        self.config = config

    def _learn(self, lm, word, examples, definition):
        vin, _ = centroid_vectors(lm, word, examples)
        nonce = lm.vocab_size  # the id this word holds while its examples are read
        seqs = example_ids(lm, word, examples, nonce)
        keys, values = states_before(lm, seqs, NonceSlot(vin[None], vin[None]))
        word_keys = keys[values == nonce]  # states that preceded the word
        vout = torch.zeros_like(vin)
        own = None
        if len(word_keys):
            own = KnnStore(word_keys, np.full(len(word_keys), WORD), StoreConfig(kind="flat"))
        background = background_store(lm, self.config.background_sentences, self.config.store)
        store = WordStore(own, background)
        make_hook = partial(knn_hook, store, self.config)
        slot = NonceSlot(vin[None], vout[None])
        before, after = word_probability(lm, seqs, slot, make_hook(nonce))
        info = {
            "stored_word_states": len(word_keys),
            "store_size": len(store),
            "index": store.kind,
            "p_word_without_store": before,
            "p_word_with_store": after,
            # What the card shows: the store's effect, as a definition may not show it (the
            # word may not appear in its own definition, and p_kNN puts most mass there).
            "note": (
                f"The kNN store holds {len(word_keys)} state(s) that preceded the word; where "
                f"the word occurs in its examples it raises the word's probability from "
                f"{before:.2g} (the LM alone) to {after:.2g}."
            ),
        }
        return NonceEmbedding(self.name, word, vin, vout, make_hook=make_hook, info=info)
