"""A faiss key-value store of (hidden state, next token) pairs for the unbounded cache.

Grave, Joulin & Cissé (2017) keep every past (h_t, w_{t+1}) pair and look up the nearest
ones; Khandelwal et al. (2020, kNN-LM) do the same at the scale of a whole corpus. Small
stores use an exact inner-product index; large ones an IVF-PQ index (coarse quantiser +
product-quantised codes), trading a little recall for memory and speed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import faiss
import numpy as np

IndexKind = Literal["auto", "flat", "ivfpq"]


@dataclass(frozen=True)
class StoreConfig:
    # "auto": exact below `ivfpq_from` vectors, IVF-PQ at or above.
    kind: IndexKind = "auto"
    ivfpq_from: int = 100_000
    # IVF-PQ: number of coarse cells (0 = about sqrt(n)), sub-quantisers, cells probed.
    nlist: int = 0
    pq_m: int = 32
    nprobe: int = 16
    # k-means trains on a sample: 40 points per cell (faiss warns below 39), and at least
    # 10 000 so each PQ sub-quantiser's 256 centroids see ~39 points. Training on all
    # 10^5 keys took 12 minutes on one core for no better recall.
    train_per_cell: int = 40
    train_min: int = 10_000
    seed: int = 0


class KnnStore:
    """Keys are L2-normalised, so inner product = cosine similarity."""

    def __init__(self, keys: np.ndarray, values: np.ndarray, config: StoreConfig = StoreConfig()):
        keys = np.ascontiguousarray(keys, dtype=np.float32)  # [n, d]
        faiss.normalize_L2(keys)
        self.values = np.asarray(values, dtype=np.int64)  # [n] token ids
        self.kind = config.kind
        if self.kind == "auto":
            self.kind = "ivfpq" if len(keys) >= config.ivfpq_from else "flat"
        self.index = self._build(keys, config)

    def _build(self, keys: np.ndarray, config: StoreConfig):
        n, dim = keys.shape
        if self.kind == "flat":
            index = faiss.IndexFlatIP(dim)
        elif self.kind == "ivfpq":
            nlist = config.nlist or max(1, int(np.sqrt(n)))
            m = config.pq_m if dim % config.pq_m == 0 else 16
            index = faiss.IndexIVFPQ(
                faiss.IndexFlatIP(dim), dim, nlist, m, 8, faiss.METRIC_INNER_PRODUCT
            )
            size = min(n, max(config.train_per_cell * nlist, config.train_min))
            sample = np.random.default_rng(config.seed).choice(n, size, replace=False)
            index.train(keys[np.sort(sample)])
            index.nprobe = config.nprobe
        else:
            raise ValueError(f"unknown index kind {self.kind!r}: expected auto, flat or ivfpq")
        index.add(keys)
        return index

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """[q, d] queries -> ([q, k] cosine similarities, [q, k] token ids; -1 where none)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        faiss.normalize_L2(queries)
        sims, rows = self.index.search(queries, min(k, len(self)))
        values = np.where(rows >= 0, self.values[np.clip(rows, 0, None)], -1)
        return sims, values

    def bytes_per_vector(self) -> float:
        """Index memory per stored vector (codes and ids; not counting the value array)."""
        return len(faiss.serialize_index(self.index)) / max(1, len(self))
