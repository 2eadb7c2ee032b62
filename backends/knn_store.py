"""A faiss key-value store of (hidden state, next token) pairs for the unbounded cache.

Grave, Joulin & Cissé (2017) keep every past (h_t, w_{t+1}) pair and look up the nearest
ones; Khandelwal et al. (2020, kNN-LM) do the same at the scale of a whole corpus. Small
stores use an exact inner-product index. Large ones use IVF-PQ-R (Jégou et al. 2011,
"Searching in one billion vectors"): a coarse quantiser picks cells, short PQ codes of
each key's residual rank the keys in them, and a second, finer PQ code of what the first
one missed re-ranks a short list. On the LM's real hidden states, plain IVF-PQ's
recall@10 stays near 0.5 (benchmarks/RESULTS.md) and hardly moves with more probed cells:
the error is in the codes, not in the cells, so the bytes go to the re-ranking code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import faiss
import numpy as np

IndexKind = Literal["auto", "flat", "ivfpq", "ivfpqr"]


@dataclass(frozen=True)
class StoreConfig:
    # "auto": exact below `large_from` vectors, `large_kind` at or above.
    kind: IndexKind = "auto"
    large_from: int = 100_000
    large_kind: IndexKind = "ivfpqr"
    # Coarse cells (0 = about sqrt(n)) and cells probed per query.
    nlist: int = 0
    nprobe: int = 32
    # Bytes of the first PQ code per key (one 8-bit sub-quantiser each), and, for
    # IVF-PQ-R, of the re-ranking code. 32 + 80 + an 8-byte id is 120 bytes a key, under
    # 1/20 of the 2560 bytes an exact fp32 key of width 640 takes.
    pq_m: int = 32
    refine_m: int = 80
    # IVF-PQ-R re-ranks k_factor * k candidates; 32 instead of 8 gained ~0.01 of recall
    # at twice the query time (trials on 2 x 10^4 LM states).
    k_factor: int = 8
    # k-means trains on a sample: 40 points per cell (faiss warns below 39), and at least
    # 10 000 so each PQ sub-quantiser's 256 centroids see ~39 points. Training on all
    # 10^5 keys took 12 minutes on one core for no better recall.
    train_per_cell: int = 40
    train_min: int = 10_000
    seed: int = 0


def sub_quantisers(dim: int, m: int) -> int:
    """The largest count <= m that divides `dim` (PQ splits a vector into equal parts)."""
    return max(c for c in range(1, m + 1) if dim % c == 0)


class KnnStore:
    """Keys are L2-normalised, so inner product = cosine similarity."""

    def __init__(
        self,
        keys: np.ndarray,
        values: np.ndarray,
        config: StoreConfig = StoreConfig(),
        copy: bool = True,
    ):
        # [n, d], normalised in place: a copy, unless the caller gives its own float32 array
        # away (copy=False; at 10^6 keys of width 640 a copy is 2.6 GB).
        keys = np.array(keys, dtype=np.float32, order="C") if copy else np.asarray(keys)
        if keys.dtype != np.float32 or not keys.flags.c_contiguous:
            raise ValueError("copy=False needs a C-contiguous float32 array of keys")
        faiss.normalize_L2(keys)
        self.values = np.asarray(values, dtype=np.int64)  # [n] token ids
        self.kind = config.kind
        if self.kind == "auto":
            self.kind = config.large_kind if len(keys) >= config.large_from else "flat"
        self.index = self._build(keys, config)

    def _build(self, keys: np.ndarray, config: StoreConfig):
        n, dim = keys.shape
        if self.kind == "flat":
            index = faiss.IndexFlatIP(dim)
            index.add(keys)
            return index
        if self.kind not in ("ivfpq", "ivfpqr"):
            raise ValueError(
                f"unknown index kind {self.kind!r}: expected auto, flat, ivfpq or ivfpqr"
            )
        nlist = config.nlist or max(1, int(np.sqrt(n)))
        m = sub_quantisers(dim, config.pq_m)
        # On unit vectors L2 ranks as cosine does; faiss's IVF-PQ-R exists only for L2, and
        # L2 lets IVF-PQ precompute its per-cell tables.
        coarse = faiss.IndexFlatL2(dim)  # faiss's wrapper keeps it alive with the index
        if self.kind == "ivfpq":
            index = faiss.IndexIVFPQ(coarse, dim, nlist, m, 8)
        else:
            refine = sub_quantisers(dim, config.refine_m)
            index = faiss.IndexIVFPQR(coarse, dim, nlist, m, 8, refine, 8)
            index.k_factor = config.k_factor
        size = min(n, max(config.train_per_cell * nlist, config.train_min))
        sample = np.random.default_rng(config.seed).choice(n, size, replace=False)
        index.train(keys[np.sort(sample)])
        index.nprobe = config.nprobe
        index.add(keys)
        return index

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """[q, d] queries -> ([q, k] cosine similarities, [q, k] token ids; -1 where none)."""
        # A copy: the caller's array may be a view of the LM's hidden states.
        queries = np.array(queries, dtype=np.float32, order="C")
        faiss.normalize_L2(queries)
        sims, rows = self.index.search(queries, min(k, len(self)))
        if self.kind != "flat":
            sims = 1 - sims / 2  # squared L2 between unit vectors -> cosine
        values = np.where(rows >= 0, self.values[np.clip(rows, 0, None)], -1)
        return sims, values

    def bytes_per_vector(self) -> float:
        """Index memory per stored vector (codes and ids; not counting the value array)."""
        return len(faiss.serialize_index(self.index)) / max(1, len(self))
