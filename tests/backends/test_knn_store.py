"""The kNN store behind the cache learner: which index a size gets, that a large store is
built as configured, and that its approximate neighbours are sane on clustered vectors."""

from dataclasses import replace

import faiss
import numpy as np
import pytest

from backends.knn_store import KnnStore, StoreConfig, sub_quantisers
from backends.learners.cache import CacheConfig, CacheLearner
from tests.backends.test_learners import EXAMPLES

faiss.omp_set_num_threads(1)  # OpenMP spin-waits are ruinous on a shared CPU


def clustered(n: int, dim: int = 64, seed: int = 0) -> np.ndarray:
    """[n, dim] like hidden states: 50 clusters in an 8-d subspace, plus a little noise."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((8, dim))
    centres = rng.standard_normal((50, 8))
    points = centres[rng.integers(0, 50, n)] + 0.4 * rng.standard_normal((n, 8))
    return (points @ basis + 0.05 * rng.standard_normal((n, dim))).astype(np.float32)


SMALL = StoreConfig(
    large_from=2000, large_kind="ivfpqr", nlist=16, pq_m=8, refine_m=16, k_factor=4, nprobe=8
)


def test_size_picks_the_index_and_a_large_one_is_built_as_configured():
    keys = clustered(3000)
    assert KnnStore(keys[:1999], np.arange(1999), SMALL).kind == "flat"
    store = KnnStore(keys, np.arange(3000), SMALL)
    index = store.index
    assert store.kind == "ivfpqr" and isinstance(index, faiss.IndexIVFPQR)
    assert (index.nlist, index.nprobe, index.k_factor) == (16, 8, 4)
    assert (index.pq.M, index.refine_pq.M) == (8, 16)
    assert sub_quantisers(640, 32) == 32 and sub_quantisers(640, 96) == 80


def test_the_large_store_finds_most_exact_neighbours_with_their_cosines():
    keys, queries = np.split(clustered(5100, seed=1), [5000])
    exact = KnnStore(keys, np.arange(5000), StoreConfig(kind="flat"))
    approx = KnnStore(keys, np.arange(5000), SMALL)
    true_sims, true_ids = exact.search(queries, 10)
    sims, ids = approx.search(queries, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids, true_ids)])
    assert recall > 0.8
    assert sims[:, 0] == pytest.approx(true_sims[:, 0], abs=0.02)  # cosines, not distances
    assert not np.allclose(np.linalg.norm(keys, axis=1), 1)  # copied, not normalised
    KnnStore(keys, np.arange(5000), StoreConfig(kind="flat"), copy=False)
    assert np.allclose(np.linalg.norm(keys, axis=1), 1)  # given away: normalised in place


def test_a_words_store_and_the_shared_background_find_what_one_store_of_both_finds():
    from backends.learners.cache import WORD, WordStore

    keys, queries = np.split(clustered(1030, seed=3), [1000])
    flat = StoreConfig(kind="flat")
    union = KnnStore(keys, np.r_[np.full(10, WORD), np.arange(10, 1000)], flat)
    split = WordStore(
        KnnStore(keys[:10], np.full(10, WORD), flat), KnnStore(keys[10:], np.arange(10, 1000), flat)
    )
    assert len(split) == 1000 and split.kind == "flat"
    for got, want in zip(split.search(queries, 16), union.search(queries, 16)):
        np.testing.assert_array_equal(got, want)
    only = WordStore(None, None).search(queries, 16)  # nothing stored: no neighbours
    assert only[0].shape == only[1].shape == (30, 0)


def test_every_words_cache_shares_one_background_store(tiny_lm):
    from backends.learners.cache import background_store

    # a copy per word held 4.5 MB for each cached word at the defaults
    config = CacheConfig()
    shared = background_store(tiny_lm, config.background_sentences, config.store)
    for _ in range(2):  # two learns, one background
        store = CacheLearner(config).learn(tiny_lm, "wug", EXAMPLES).make_hook.args[0]
        own, background = store.stores
        assert background is shared and own.kind == "flat"
        assert len(store) == len(own) + len(shared) and set(own.values) == {-2}  # WORD


def test_the_cache_learner_uses_the_large_index_past_its_threshold(tiny_lm, tmp_path):
    store = StoreConfig(large_from=100, nlist=4, pq_m=4, disk_nprobe=4, disk_dir=tmp_path)
    emb = CacheLearner(CacheConfig(store=store)).learn(tiny_lm, "wug", EXAMPLES)
    assert emb.info["index"] == "ivfpq+disk" and emb.info["store_size"] >= 100
    assert emb.info["p_word_with_store"] > emb.info["p_word_without_store"]


DISK = StoreConfig(kind="ivfpq+disk", nlist=16, pq_m=8, disk_nprobe=4, shortlist=64)


def test_the_disk_store_orders_its_candidates_exactly_as_exact_search_would(tmp_path):
    keys, queries = np.split(clustered(3050, seed=2), [3000])
    store = KnnStore(keys, np.arange(3000), replace(DISK, disk_dir=tmp_path))
    assert isinstance(store.index, faiss.IndexIVFPQFastScan) and store.index.nprobe == 4
    sims, rows = store.search(queries, 10)  # values are the rows here
    candidates = store.candidates(queries)  # [50, 64]: what the re-ranking saw
    unit = keys / np.linalg.norm(keys, axis=1, keepdims=True)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    for query, found, cosines, seen in zip(q, rows, sims, candidates):
        seen = seen[seen >= 0]
        exact = unit[seen] @ query
        assert list(found) == list(seen[np.argsort(-exact, kind="stable")[:10]])
        assert cosines == pytest.approx(np.sort(exact)[::-1][:10], abs=1e-5)


def test_the_disk_store_owns_a_file_of_its_keys_in_the_given_folder(tmp_path):
    keys = clustered(3000, seed=3)
    store = KnnStore(keys, np.arange(3000), replace(DISK, disk_dir=tmp_path))
    (path,) = tmp_path.iterdir()
    assert store.disk_path == path and path.name.startswith("knn-keys-")
    assert store.disk_bytes_per_vector() == pytest.approx(4 * 64, rel=0.05)  # fp32 + header
    assert store.bytes_per_vector() < 64  # RAM: 8 bytes of code, an id, the cells
    assert np.allclose(np.linalg.norm(np.load(path), axis=1), 1)
    store.close()
    assert not path.exists()
    with pytest.raises(RuntimeError, match="closed"):
        store.search(keys[:1], 5)
    half = KnnStore(keys, np.arange(3000), replace(DISK, disk_dir=tmp_path, disk_dtype="float16"))
    assert np.load(half.disk_path).dtype == np.float16
    del half  # collected: its file goes with it
    assert list(tmp_path.iterdir()) == []


def test_small_stores_stay_exact_and_write_no_file(tmp_path):
    config = StoreConfig(large_from=2000, disk_dir=tmp_path)
    store = KnnStore(clustered(500), np.arange(500), config)
    assert store.kind == "flat" and store.disk_path is None and store.disk_bytes_per_vector() == 0
    assert list(tmp_path.iterdir()) == []
    assert StoreConfig().large_kind == "ivfpq+disk"
    with pytest.raises(ValueError, match="ivfpq\\+disk"):
        KnnStore(clustered(10), np.arange(10), StoreConfig(kind="hnsw"))
