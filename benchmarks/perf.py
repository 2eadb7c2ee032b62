"""Speed and memory, measured side by side in one run so the ratios compare like with like.

- learner latency for 1, 3 and 5 sentences (after one warm-up call per learner, which fills
  per-process caches such as the cache learner's background store);
- definitions for all learners: one batched generation vs one generation per learner;
- model load: cold (GGUF -> fp32 conversion into a temporary cache dir) vs the cached copy;
- the kNN store (Grave et al. 2017; Khandelwal et al. 2020) at 10^4 and 10^5 (10^6 with
  --big) clustered random vectors of the LM's width: exact vs IVF-PQ build time, query
  time, bytes per vector, recall@k of IVF-PQ against exact search;
- ratings: online Elo and the bootstrapped Bradley-Terry leaderboard (100 rounds) at 10^4
  and 10^5 (10^6 with --big) synthetic votes.
"""

from __future__ import annotations

import logging
import os
import resource
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager

import numpy as np

from backends.definitions import define
from backends.inputs import Example
from backends.pipeline import load_lm
from benchmarks.results import Result
from benchmarks.runs import STAND_IN, RunOptions, describe_config, learn_each

log = logging.getLogger(__name__)

SENTENCES = (  # made-up usages of the nonce, for latency only
    f"The {STAND_IN} perched on the fence and sang until dawn.",
    f"A hungry {STAND_IN} pecked at the seeds we left on the porch.",
    f"We watched a {STAND_IN} build its nest under the roof.",
    f"Every spring the {STAND_IN} returns from the south.",
    f"The children fed bread crumbs to a small grey {STAND_IN}.",
)
KNN_K = 16  # neighbours per query, the cache learner's default
KNN_QUERIES = 256
PERF_NEW_TOKENS = 16  # definition length in the batched-vs-serial comparison


def timed(fn: Callable, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return time.perf_counter() - start, value


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def perf_row(
    subject: str, shots: int | None, n: int, metrics: dict, config: dict | None = None, *, case: str
) -> Result:
    """A perf row: `subject` is what was measured (a learner, the LM, an index kind, the
    process), `case` what was timed."""
    return Result(subject, shots, n, metrics, config or {}, case=case, kind="perf")


def learner_latency(lm, options: RunOptions) -> list[Result]:
    rows = []
    for name in options.learners:
        warm, _ = timed(learn_each, lm, (name,), STAND_IN, [Example(SENTENCES[0])], options)
        config = describe_config(name, options)
        rows.append(perf_row(name, 1, 1, {"seconds": warm}, config, case="learn, first call"))
        for shots in (1, 3, 5):
            examples = [Example(s) for s in SENTENCES[:shots]]
            seconds, _ = timed(learn_each, lm, (name,), STAND_IN, examples, options)
            rows.append(perf_row(name, shots, 1, {"seconds": seconds}, config, case="learn"))
    return rows + latency_ratios(rows, "token_tuning", "college")


def latency_ratios(rows: list[Result], slow: str, fast: str) -> list[Result]:
    """`slow`/`fast` learn time on the same examples (CoLLEGe's claim: one encoder pass
    instead of an optimisation), when both learners were measured."""
    seconds = {(r.learner, r.shots): r.metrics["seconds"] for r in rows if r.case == "learn"}
    return [
        perf_row(
            f"{slow}/{fast}",
            shots,
            1,
            {"ratio": seconds[slow, shots] / seconds[fast, shots]},
            case="learn speed-up",
        )
        for shots in (1, 3, 5)
        if (slow, shots) in seconds and (fast, shots) in seconds
    ]


def definition_batching(lm, options: RunOptions) -> list[Result]:
    examples = [Example(s) for s in SENTENCES[:3]]
    embeddings = learn_each(lm, options.learners, STAND_IN, examples, options)
    batched, _ = timed(define, lm, embeddings, PERF_NEW_TOKENS)
    serial, _ = timed(lambda: [define(lm, [e], PERF_NEW_TOKENS) for e in embeddings])
    label, n = "all", len(embeddings)
    config = {"max_new_tokens": PERF_NEW_TOKENS}
    return [
        perf_row(label, 3, n, {"seconds": batched}, config, case="define, one batch"),
        perf_row(label, 3, n, {"seconds": serial}, config, case="define, one by one"),
        perf_row(
            label,
            3,
            n,
            {"ratio": serial / batched},
            config,
            case="define speed-up (serial/batched)",
        ),
    ]


@contextmanager
def cache_dir_at(path: str):
    """Point NONCE_CACHE_DIR at `path` for the duration (settings are read per call)."""
    before = os.environ.get("NONCE_CACHE_DIR")
    os.environ["NONCE_CACHE_DIR"] = path
    try:
        yield
    finally:
        if before is None:
            del os.environ["NONCE_CACHE_DIR"]
        else:
            os.environ["NONCE_CACHE_DIR"] = before


def model_load(options: RunOptions) -> list[Result]:
    from backends.models import LM_PRESETS, convert, load_causal_lm
    from backends.settings import load_settings

    name = options.lm or load_settings().lm
    cached, _ = timed(load_causal_lm, name, options.device)  # uncached: pipeline.load_lm caches
    rows = [perf_row(name, None, 1, {"seconds": cached}, case="load LM, cached fp32")]
    if options.skip_cold or name not in LM_PRESETS:
        return rows
    with tempfile.TemporaryDirectory(prefix="nonce-cold-") as tmp, cache_dir_at(tmp):
        converting, _ = timed(convert, LM_PRESETS[name])
        loading, _ = timed(load_causal_lm, name, options.device)
    cold = converting + loading
    rows += [
        perf_row(
            name, None, 1, {"seconds": cold, "convert_s": converting}, case="load LM, cold (GGUF)"
        ),
        perf_row(name, None, 1, {"ratio": cold / cached}, case="load speed-up (cold/cached)"),
    ]
    return rows


def hidden_like(n: int, dim: int, seed: int, latent: int = 32) -> np.ndarray:
    """[n, dim] float32 vectors like LM hidden states: a low intrinsic dimension (`latent`),
    256 clusters in it, mapped into `dim` by one fixed random matrix, plus a little noise."""
    rng = np.random.default_rng(seed)
    basis = rng.standard_normal((latent, dim)).astype(np.float32)  # [latent, dim]
    centres = rng.standard_normal((256, latent)).astype(np.float32)
    points = centres[rng.integers(0, 256, n)] + 0.5 * rng.standard_normal((n, latent))
    noise = 0.1 * rng.standard_normal((n, dim))
    return (points.astype(np.float32) @ basis + noise).astype(np.float32)


def knn_store(dim: int, sizes: tuple[int, ...], seed: int) -> list[Result]:
    from backends.knn_store import KnnStore, StoreConfig

    rows = []
    for n in sizes:
        # queries come from the same distribution as the keys, but are not stored
        keys, queries = np.split(hidden_like(n + KNN_QUERIES, dim, seed), [n])
        found, measured = {}, {}
        for kind in ("flat", "ivfpq"):
            build, store = timed(KnnStore, keys, np.arange(n), StoreConfig(kind=kind))
            query, (_, ids) = timed(store.search, queries, KNN_K)
            found[kind] = ids
            measured[kind] = {
                "build_s": build,
                "query_ms": 1000 * query / KNN_QUERIES,
                "bytes_per_vector": store.bytes_per_vector(),
            }
            del store
        hits = [len(set(a) & set(b)) / KNN_K for a, b in zip(found["flat"], found["ivfpq"])]
        measured["flat"]["recall_at_k"] = 1.0
        measured["ivfpq"]["recall_at_k"] = float(np.mean(hits))
        config = {"dim": dim, "k": KNN_K, "queries": KNN_QUERIES}
        for kind, values in measured.items():
            rows.append(perf_row(kind, None, n, values, config, case="knn store"))
        ratio = {
            "query_speedup": measured["flat"]["query_ms"] / measured["ivfpq"]["query_ms"],
            "memory_ratio": measured["flat"]["bytes_per_vector"]
            / measured["ivfpq"]["bytes_per_vector"],
        }
        rows.append(perf_row("flat/ivfpq", None, n, ratio, config, case="knn store ratios"))
        log.info("knn store at %d vectors measured", n)
    return rows


def synthetic_votes(n: int, seed: int) -> list[tuple[str, str, str]]:
    """n matches among 6 learners with fixed latent strengths; 20% ties."""
    rng = np.random.default_rng(seed)
    names = ["centroid", "token_tuning", "prompting", "definition_reader", "cache", "college"]
    strength = np.linspace(-1, 1, len(names))
    a = rng.integers(0, len(names), n)
    b = (a + rng.integers(1, len(names), n)) % len(names)
    p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
    draw = rng.random(n)
    outcome = np.where(draw < 0.2, "tie", np.where(rng.random(n) < p_a, "a", "b"))
    return [(names[x], names[y], str(o)) for x, y, o in zip(a, b, outcome)]


def ratings(sizes: tuple[int, ...], seed: int) -> list[Result]:
    from demo.ratings import elo, leaderboard

    rows = []
    for n in sizes:
        matches = synthetic_votes(n, seed)
        online, _ = timed(elo, matches)
        board, _ = timed(leaderboard, matches, 100, seed)
        metrics = {"elo_s": online, "leaderboard_s": board}
        rows.append(perf_row("6 learners", None, n, metrics, {"rounds": 100}, case="ratings"))
    return rows


def run_perf(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    rows = model_load(options)
    rows += learner_latency(lm, options)
    rows += definition_batching(lm, options)
    rows += knn_store(lm.dim, options.knn_sizes, options.seed)
    rows += ratings(options.vote_sizes, options.seed)
    rows.append(perf_row("process", None, 1, {"peak_rss_mb": peak_rss_mb()}, case="peak memory"))
    return rows
