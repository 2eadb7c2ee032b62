"""A faiss key-value store of (hidden state, next token) pairs for the unbounded cache.

Grave, Joulin & Cissé (2017) keep every past (h_t, w_{t+1}) pair and look up the nearest
ones; Khandelwal et al. (2020, kNN-LM) do the same at the scale of a whole corpus. Small
stores use an exact inner-product index. Large ones keep only compressed codes in RAM:

- IVF-PQ-R (Jégou et al. 2011, "Searching in one billion vectors"): a coarse quantiser
  picks cells, short PQ codes of each key's residual rank the keys in them, and a second,
  finer PQ code of what the first one missed re-ranks a short list. On the LM's real
  hidden states its recall@10 stalls near 0.75 (benchmarks/RESULTS.md): the ten nearest
  neighbours lie within a few hundredths of cosine of each other, finer than the codes
  resolve.
- IVF-PQ + disk (the default when large): Jégou et al.'s IVFADC re-ranking done with the
  keys themselves. Fast-scan IVF-PQ codes (André et al. 2015's 4-bit SIMD scan) pick a
  long short list, and the exact cosines of those candidates, read from the full keys
  in a memory-mapped file, order it; Khandelwal et al. likewise re-read full-precision
  keys to re-score their approximate neighbours. RAM holds the codes; the file holds
  the keys, and a query reads only its candidates' rows of it.
"""

from __future__ import annotations

import mmap
import os
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import faiss
import numpy as np

IndexKind = Literal["auto", "flat", "ivfpq", "ivfpqr", "ivfpq+disk"]
KINDS: tuple[str, ...] = get_args(IndexKind)
# Queries whose candidates are gathered at once: 8 x 512 x 640 fp32 = 10 MB stays in cache
# (64 at a time took twice as long; the re-rank is bound by reading the rows).
RERANK_BATCH = 8


@dataclass(frozen=True)
class StoreConfig:
    # "auto": exact below `large_from` vectors, `large_kind` at or above.
    kind: IndexKind = "auto"
    large_from: int = 100_000
    large_kind: IndexKind = "ivfpq+disk"
    # Coarse cells (0 = about sqrt(n)) and cells probed per query. IVF-PQ + disk probes
    # `disk_nprobe`: its candidates need only reach the short list, but from more cells.
    nlist: int = 0
    nprobe: int = 32
    disk_nprobe: int = 64
    # Bytes of the first PQ code per key (one 8-bit sub-quantiser each), and, for
    # IVF-PQ-R, of the re-ranking code. 32 + 80 + an 8-byte id is 120 bytes a key, under
    # 1/20 of the 2560 bytes an exact fp32 key of width 640 takes.
    pq_m: int = 32
    refine_m: int = 80
    # IVF-PQ-R re-ranks k_factor * k candidates; 32 instead of 8 gained ~0.01 of recall
    # at twice the query time (trials on 2 x 10^4 LM states).
    k_factor: int = 8
    # IVF-PQ + disk: candidates per query re-ranked exactly from the file of keys (at 10^6
    # LM states, 256 / 512 reached recall@10 0.90 / 0.94), the file's number type (float16
    # halves it and lost ~0.001 of recall, but numpy's conversion back cut 1312 queries/s
    # to 931), and its folder (None: the system's temporary folder). The file belongs to
    # the store: removed when the store is closed or collected.
    shortlist: int = 512
    disk_dtype: Literal["float32", "float16"] = "float32"
    disk_dir: Path | None = None
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
        if self.kind not in KINDS[1:]:
            raise ValueError(f"unknown index kind {self.kind!r}: expected one of {KINDS}")
        self.shortlist = config.shortlist
        self.disk: np.ndarray | None = None  # [n, d] memory-mapped keys (ivfpq+disk only)
        self.disk_path: Path | None = None
        self._remove_file = None
        if self.kind == "ivfpq+disk":
            self.disk_path = write_keys(keys, config)
            self._remove_file = weakref.finalize(self, remove_file, self.disk_path)
            self.disk = map_keys(self.disk_path)
        self.index = self._build(keys, config)

    def _build(self, keys: np.ndarray, config: StoreConfig):
        n, dim = keys.shape
        if self.kind == "flat":
            index = faiss.IndexFlatIP(dim)
            index.add(keys)
            return index
        nlist = config.nlist or max(1, int(np.sqrt(n)))
        m = sub_quantisers(dim, config.pq_m)
        # On unit vectors L2 ranks as cosine does; faiss's IVF-PQ-R exists only for L2, and
        # L2 lets IVF-PQ precompute its per-cell tables.
        coarse = faiss.IndexFlatL2(dim)  # faiss's wrapper keeps it alive with the index
        if self.kind == "ivfpq":
            index = faiss.IndexIVFPQ(coarse, dim, nlist, m, 8)
        elif self.kind == "ivfpqr":
            refine = sub_quantisers(dim, config.refine_m)
            index = faiss.IndexIVFPQR(coarse, dim, nlist, m, 8, refine, 8)
            index.k_factor = config.k_factor
        else:
            # The same bytes as 8-bit IVF-PQ (2 x m 4-bit codes), scanned with SIMD table
            # look-ups: at 10^6 keys 3-4x faster for a short list as good once re-ranked.
            # faiss's default codes the keys, not their residuals: residuals gained ~0.01 of
            # recall at 10^5 for 3x the scan time.
            index = faiss.IndexIVFPQFastScan(coarse, dim, nlist, sub_quantisers(dim, 2 * m), 4)
        size = min(n, max(config.train_per_cell * nlist, config.train_min))
        sample = np.random.default_rng(config.seed).choice(n, size, replace=False)
        index.train(keys[np.sort(sample)])
        index.nprobe = config.disk_nprobe if self.kind == "ivfpq+disk" else config.nprobe
        index.add(keys)
        return index

    def __len__(self) -> int:
        return self.index.ntotal

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """[q, d] queries -> ([q, k] cosine similarities, [q, k] token ids; -1 where none)."""
        queries = unit_rows(queries)
        k = min(k, len(self))
        if self.kind == "ivfpq+disk":
            if self.disk is None:
                raise RuntimeError("this store was closed: its file of keys is gone")
            sims, rows = self._rerank(queries, self._candidates(queries, k), k)
        else:
            sims, rows = self.index.search(queries, k)
            if self.kind != "flat":
                sims = 1 - sims / 2  # squared L2 between unit vectors -> cosine
        values = np.where(rows >= 0, self.values[np.clip(rows, 0, None)], -1)
        return sims, values

    def candidates(self, queries: np.ndarray, k: int = 1) -> np.ndarray:
        """[q, d] queries -> [q, max(k, shortlist)] rows the IVF-PQ + disk store re-ranks
        (-1 where the probed cells held fewer keys)."""
        return self._candidates(unit_rows(queries), k)

    def _candidates(self, queries: np.ndarray, k: int) -> np.ndarray:
        return self.index.search(queries, min(max(k, self.shortlist), len(self)))[1]

    def _rerank(self, queries: np.ndarray, rows: np.ndarray, k: int):
        """The k of each query's candidate rows [q, k'] with the highest exact cosine, read
        from the file of keys: ([q, k] cosines, [q, k] rows), best first."""
        sims = np.empty(rows.shape, np.float32)  # [q, k']
        for start in range(0, len(rows), RERANK_BATCH):
            block = rows[start : start + RERANK_BATCH]  # [b, k']
            keys = self.disk[np.clip(block, 0, None).ravel()]  # [b * k', d]: reads the file
            keys = keys.astype(np.float32, copy=False).reshape(*block.shape, -1)
            query = queries[start : start + RERANK_BATCH, :, None]  # [b, d, 1]
            sims[start : start + RERANK_BATCH] = np.matmul(keys, query)[..., 0]
        sims[rows < 0] = -np.inf
        best = np.argsort(-sims, axis=1, kind="stable")[:, :k]  # ties keep the PQ order
        return np.take_along_axis(sims, best, 1), np.take_along_axis(rows, best, 1)

    def bytes_per_vector(self) -> float:
        """Index memory per stored vector (codes and ids; not counting the value array)."""
        return len(faiss.serialize_index(self.index)) / max(1, len(self))

    def disk_bytes_per_vector(self) -> float:
        """The file of full keys per stored vector (0 when the store keeps none)."""
        return self.disk_path.stat().st_size / max(1, len(self)) if self.disk_path else 0.0

    def close(self) -> None:
        """Unmap and remove the file of keys now (it is also removed when the store is
        garbage-collected, or at exit)."""
        self.disk = None
        if self._remove_file is not None:
            self._remove_file()


def unit_rows(queries: np.ndarray) -> np.ndarray:
    """[q, d] float32 copy scaled to unit length (the caller's array may be a view of the
    LM's hidden states)."""
    queries = np.array(queries, dtype=np.float32, order="C")
    faiss.normalize_L2(queries)
    return queries


def write_keys(keys: np.ndarray, config: StoreConfig, chunk: int = 65_536) -> Path:
    """Unit keys [n, d] -> a new .npy file of them in `config.disk_dtype`, written a chunk at
    a time (no second n x d array in memory), under `config.disk_dir`."""
    handle, name = tempfile.mkstemp(prefix="knn-keys-", suffix=".npy", dir=config.disk_dir)
    os.close(handle)
    path = Path(name)
    try:
        out = np.lib.format.open_memmap(path, "w+", np.dtype(config.disk_dtype), keys.shape)
        for start in range(0, len(keys), chunk):
            out[start : start + chunk] = keys[start : start + chunk]
        out.flush()
        del out
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def map_keys(path: Path) -> np.ndarray:
    """The .npy file's [n, d] array, memory-mapped read-only and marked for random access:
    a query reads a few hundred scattered rows, so the kernel's read-ahead (which np.load's
    memmap leaves on) would fetch many pages for each one it needs."""
    with open(path, "rb") as f:
        fmt = np.lib.format
        one = fmt.read_magic(f) == (1, 0)
        shape, _, dtype = (fmt.read_array_header_1_0 if one else fmt.read_array_header_2_0)(f)
        offset = f.tell()
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # outlives the handle
    if hasattr(mapped, "madvise"):  # POSIX
        mapped.madvise(mmap.MADV_RANDOM)
    return np.frombuffer(mapped, dtype, int(np.prod(shape)), offset).reshape(shape)


def remove_file(path: Path) -> None:
    path.unlink(missing_ok=True)
