"""Speed and memory, measured side by side in one run so the ratios compare like with like.

- learner latency for 1, 3 and 5 sentences (after one warm-up call per learner, which fills
  per-process caches such as the cache learner's background store);
- definitions for all learners: one batched generation vs one generation per learner;
- greedy decoding of one sequence, per token, against the bandwidth floor (weight bytes
  read per token / a large tensor copy's bandwidth timed in the same run), and the output
  layer alone against its own floor;
- model load: cold (GGUF -> fp32 conversion into a temporary cache dir) vs the cached copy;
- the kNN store (Grave et al. 2017; Khandelwal et al. 2020) at 10^4 and 10^5 (10^6 with
  --big) of the LM's own hidden states (benchmarks/knn_vectors.py): exact vs IVF-PQ vs
  IVF-PQ-R build time, query time, bytes per vector, recall@10 and @k against exact search;
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
from dataclasses import replace
from statistics import median
from typing import NamedTuple

import numpy as np
import torch

from backends.decode_step import block_products
from backends.definitions import define
from backends.half_body import step_groups
from backends.inputs import Example
from backends.pipeline import load_lm
from benchmarks.knn_vectors import lm_states, tiled
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
# The README's first example (an anvil behind "florp"): one Learn click as a person makes it.
CLICK_WORD = "florp"
CLICK_SENTENCES = (
    "The blacksmith laid the glowing horseshoe on the florp and struck it with his hammer.",
    "Sparks flew every time the hammer rang against the heavy iron florp.",
    "The old forge still had its florp, worn smooth in the middle from a century of pounding.",
)
CLICK_REPEATS = 3  # clicks timed after the first (which loads and fills per-process caches)
KNN_K = 16  # neighbours per query, the cache learner's default
KNN_QUERIES = 1000  # held-out states (later text than any key)
REAL_STATES = 109_000  # keys computed with the LM (7 minutes on one thread, then cached)
PERF_NEW_TOKENS = 16  # definition length in the batched-vs-serial comparison
# Rounds of the define timings, interleaved, each figure their median: one timing of each
# moved the six-learner batch's ratio by about 20% from run to run on an H200.
DEFINE_ROUNDS = 3


def timed(fn: Callable, *args, **kwargs) -> tuple[float, object]:
    settle()
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    settle()
    return time.perf_counter() - start, value


def settle() -> None:
    """Wait for the GPU's queued kernels, so that a CUDA timing covers the work it launched."""
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()


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


def output_layers(lm) -> list[tuple[str, object]]:
    """The output layers to decode with, side by side: fp32, and on the CPU the int8
    shortlist (backends/int8_head.py), built once and reused."""
    if lm.device.type != "cpu":
        return [("fp32", None)]
    own = lm.head_int8
    if own is None:
        lm.use_int8_head()
        lm.head_int8, own = None, lm.head_int8
    return [("fp32", None), ("int8", own)]


class Kernel(NamedTuple):
    """One way of decoding, measured beside the others: output layer (None: fp32), packed
    body (None: the LM's own setting), and the step (backends/decode_step.py or
    transformers' forward; on CUDA, replayed as a CUDA graph or not)."""

    label: str
    layer: object
    packed: bool | None
    lean: bool = False
    graphs: bool = False
    joint: bool = True  # the packed body's joint q/k/v and gate/up products in the lean step
    half: bool = False  # the lean step reads the blocks' fp16 copies (backends/half_body.py)


def half_body(lm):
    """The LM's fp16 decoding weights, built for the comparison where it has none (the LM
    keeps its own setting)."""
    if lm.half_body is not None:
        return lm.half_body
    from backends.half_body import HalfBody

    return lm.memo("half_body", lambda: HalfBody(lm.model.base_model))


def kernels(lm) -> list[Kernel]:
    """The kernels to decode with, side by side: each output layer with the plain body and
    transformers' step, then the shipped setting: on the CPU the int8 head and packed body
    (backends/packed_linear.py) with and without the lean step, and the lean step reading
    fp16 weights (backends/half_body.py); on CUDA the lean step without and with a CUDA
    graph."""
    layers = output_layers(lm)
    rows = [Kernel(f"{head} head", layer, False) for head, layer in layers]
    if lm.device.type == "cpu":
        if lm.packed is None:  # built for the comparison; the LM keeps its setting (off)
            lm.use_packed_linears()
            lm.packed.on = False
        head, layer = layers[-1]
        rows.append(Kernel(f"{head} head, packed body", layer, True))
        label = f"{head} head, packed body, lean step"
        rows.append(Kernel(f"{label}, products apart", layer, True, lean=True, joint=False))
        rows.append(Kernel(label, layer, True, lean=True))
        rows.append(Kernel(f"{label}, fp16 weights", layer, True, lean=True, half=True))
    else:
        rows.append(Kernel("fp32 head, lean step", None, None, lean=True))
        rows.append(Kernel("fp32 head, lean step, CUDA graph", None, None, True, True))
    return rows


def kernel_config(kernel: Kernel) -> dict:
    return {
        "head": kernel.label.split()[0],
        "packed_body": kernel.packed,
        "step": "lean" if kernel.lean else "transformers",
        "cuda_graph": kernel.graphs,
        "joint_products": kernel.joint if kernel.packed and kernel.lean else None,
        "half_body": kernel.half,
    }


@contextmanager
def decoding_with(
    lm,
    layer,
    packed: bool | None = None,
    lean: bool | None = None,
    graphs: bool | None = None,
    joint: bool | None = None,
    half=False,
):
    """Generate through `layer` (None: fp32) and, where given, with the packed body on or
    off, the lean step or transformers' forward, a CUDA graph or not, the packed body's
    joint products or not, and the lean step reading `half` (a `HalfBody`; None: fp32
    weights; False: the LM's own setting); then give the LM back its own."""
    before, lm.head_int8 = lm.head_int8, layer
    own_half = lm.half_body
    if half is not False:
        lm.half_body = half
    body = lm.packed.on if lm.packed is not None else None
    joined = lm.packed.joint_products if lm.packed is not None else None
    steps = lm.lean_steps, lm.cuda_graphs
    if lm.packed is not None and packed is not None:
        lm.packed.on = packed
    if lm.packed is not None and joint is not None:
        lm.packed.joint_products = joint
    if lean is not None:
        lm.lean_steps = lean
    if graphs is not None:
        lm.cuda_graphs = graphs
    try:
        yield
    finally:
        lm.head_int8, lm.half_body = before, own_half
        lm.lean_steps, lm.cuda_graphs = steps
        if lm.packed is not None:
            lm.packed.on, lm.packed.joint_products = body, joined


def decoding_by(lm, kernel: Kernel):
    half = half_body(lm) if kernel.half else None
    return decoding_with(
        lm, kernel.layer, kernel.packed, kernel.lean, kernel.graphs, kernel.joint, half
    )


def other_prefill(lm, kernel: Kernel, embeddings, texts: list[str]) -> tuple[float, bool, str]:
    """The same batch with its prompts read the other way (`NonceLM.grouping_prompts`: the
    CPU reads them in groups of similar length, a GPU as one padded batch): its seconds,
    whether its definitions are the shipped way's, and what the other way is."""
    grouped = lm.grouping_prompts()
    before, lm.group_prompts = lm.group_prompts, not grouped
    try:
        with decoding_by(lm, kernel):
            seconds, out = timed(define, lm, embeddings, PERF_NEW_TOKENS)
    finally:
        lm.group_prompts = before
    way = "one padded prefill" if grouped else "prompts read in groups"
    return seconds, [d.text for d in out] == texts, way


def definition_batching(lm, options: RunOptions) -> list[Result]:
    """All learners' definitions in one batched generation vs each learner's alone, with
    each output layer: the batch's cost over one learner's is the number to keep near 1.
    Each kernel's timings are taken in `DEFINE_ROUNDS` interleaved rounds (the batch, each
    learner alone, the batch with its prompts read the other way): seconds are each one's
    median over the rounds, ratios the median of each round's own ratio."""
    examples = [Example(s) for s in SENTENCES[:3]]
    embeddings = learn_each(lm, options.learners, STAND_IN, examples, options)
    n, rows, texts = len(embeddings), [], {}
    for each in kernels(lm):
        kernel = each.label
        with decoding_by(lm, each):
            define(lm, embeddings[:1], 2)  # warm-up
        batched, alone, other, same = [], [], [], True
        for _ in range(DEFINE_ROUNDS):
            with decoding_by(lm, each):
                seconds, out = timed(define, lm, embeddings, PERF_NEW_TOKENS)
                batched.append(seconds)
                alone.append([timed(define, lm, [e], PERF_NEW_TOKENS)[0] for e in embeddings])
            texts[kernel] = [d.text for d in out]
            seconds, same_way, way = other_prefill(lm, each, embeddings, texts[kernel])
            other.append(seconds)
            same = same and same_way
        ones = [sum(a) / n for a in alone]  # each round's mean learner alone
        label = f"all ({kernel})"
        config = {"max_new_tokens": PERF_NEW_TOKENS, "rounds": DEFINE_ROUNDS, **kernel_config(each)}

        def row(case: str, metrics: dict, shown: int = n, label=label, config=config) -> Result:
            return perf_row(label, 3, shown, metrics, config, case=case)

        spread = {"min_s": min(batched), "max_s": max(batched)}
        rows += [
            row(f"define, {way}", {"seconds": median(other)}),
            row(
                f"define, batch of all / one learner, {way}",
                {"ratio": median([o / one for o, one in zip(other, ones)]), "same_texts": same},
            ),
            row("define, one batch", {"seconds": median(batched), **spread}),
            row("define, one by one", {"seconds": median([sum(a) for a in alone])}),
            row("define, one learner (mean)", {"seconds": median(ones)}, 1),
            row(
                "define speed-up (serial/batched)",
                {"ratio": median([sum(a) / b for a, b in zip(alone, batched)])},
            ),
            row(
                "define, batch of all / one learner",
                {"ratio": median([b / one for b, one in zip(batched, ones)])},
            ),
            # a batch runs until its longest definition ends: against the learner whose
            # definition alone took longest, what batching itself costs
            row(
                "define, batch of all / slowest learner alone",
                {"ratio": median([b / max(a) for b, a in zip(batched, alone)])},
            ),
        ]
    reference, *faster = list(texts)  # fp32 head, plain body first
    for kernel in faster:
        same = sum(a == b for a, b in zip(texts[reference], texts[kernel])) / n
        rows.append(
            perf_row(
                f"{kernel} / {reference}",
                3,
                n,
                {"matching": same},
                {"definitions": {reference: texts[reference], kernel: texts[kernel]}},
                case="define, batched definitions word for word",
            )
        )
    return rows


def copy_bandwidth(device: torch.device, megabytes: int = 512, repeats: int = 3) -> float:
    """Bytes moved per second (read + written, as STREAM's Copy counts them) by the best of
    `repeats` copies of a `megabytes` tensor on `device` (the CPU: the run's torch threads;
    a GPU: its own memory, where the weights are read from)."""
    src = torch.ones(megabytes * 2**20 // 4, device=device)
    dst = torch.empty_like(src)
    best = min(timed(dst.copy_, src)[0] for _ in range(repeats))
    return 2 * src.numel() * 4 / best


def bytes_per_token(lm) -> tuple[int, int]:
    """(all weight bytes a greedy token reads, those of the output layer): every block
    once and the output layer once (as int8 plus its fp32 outlier columns when that is
    on, and the blocks' linear layers as fp16 when the step reads those); of the input
    embedding only the token's own row, left out."""
    skip = {lm.input_matrix.data_ptr(), lm.output_matrix.data_ptr()}
    body = sum(
        p.numel() * p.element_size() for p in lm.model.parameters() if p.data_ptr() not in skip
    )
    if lm.half_body is not None and lm.lean_steps:
        body += lm.half_body.nbytes - lm.half_body.replaced
    head = lm.output_matrix
    head_bytes = (
        lm.head_int8.nbytes if lm.head_int8 is not None else head.numel() * head.element_size()
    )
    return body + head_bytes, head_bytes


def body_products(lm, lean: bool) -> Callable[[], None]:
    """One token's linear products through the blocks as the step reads them (the lean
    step's fp16 products where it reads those, else its joint q/k/v and gate/up products
    where the packed body has them on), on one row of random input: timed apart from the
    step, they say how much of a token is the body's weights being read and how much is
    everything else."""
    packed, half = (lm.packed, lm.half_body) if lean else (None, None)
    products = []  # (product, its input width)
    for block in lm.model.base_model.layers:
        for group, read in zip(step_groups(block), block_products(block, packed, half)):
            width = group[0].in_features
            products += [(read, width)] if read is not None else [(m, width) for m in group]
    dtype = lm.input_matrix.dtype
    inputs = {w: torch.randn(1, 1, w, device=lm.device, dtype=dtype) for _, w in products}

    def run() -> None:
        with torch.no_grad():
            for product, width in products:
                product(inputs[width])

    return run


def decode_floor(lm) -> list[Result]:
    """Per-token greedy decode latency of one sequence against its floor, with each output
    layer: every weight is read once per token, so it cannot beat (bytes read per token) /
    (measured copy bandwidth)."""
    bandwidth = copy_bandwidth(lm.device)
    prompt = [lm.encode(f'The word "{STAND_IN}" is defined as')]
    hidden = torch.zeros(1, lm.dim, device=lm.device, dtype=lm.input_matrix.dtype)
    rows = []
    for each in kernels(lm):
        kernel = each.label
        with decoding_by(lm, each):
            weights, head_bytes = bytes_per_token(lm)
            lm.generate(prompt, max_new_tokens=2)  # warm-up
            # best of 3 each: the machine is shared, and the difference of two times is small
            one = min(timed(lm.generate, prompt, max_new_tokens=1)[0] for _ in range(3))
            many, out = min(
                (timed(lm.generate, prompt, max_new_tokens=PERF_NEW_TOKENS + 1) for _ in range(3)),
                key=lambda t: t[0],
            )
            with torch.no_grad():
                head, _ = timed(lambda: [lm.logits(hidden, None, True) for _ in range(8)])
            products = body_products(lm, each.lean)
            products()  # warm-up
            body = min(timed(products)[0] for _ in range(3))
        per_token = (many - one) / max(1, len(out[0]) - 1)
        floor = weights / bandwidth
        metrics = {
            "seconds": per_token,
            "floor_s": floor,
            "ratio": per_token / floor,
            "weights_gb": weights / 1e9,
            "copy_gb_per_s": bandwidth / 1e9,
            "head_s": head / 8,
            "head_floor_s": head_bytes / bandwidth,
            # the blocks' products alone, and what is neither they nor the output layer
            "body_s": body,
            "rest_s": per_token - head / 8 - body,
        }
        config = {
            "dtype": str(lm.input_matrix.dtype),
            "device_name": device_name(str(lm.device)),
            "tokens": len(out[0]),
            **kernel_config(each),
        }
        rows.append(
            perf_row(
                lm.name, None, 1, metrics, config, case=f"decode, per token vs floor ({kernel})"
            )
        )
    return rows


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


def knn_sets(lm, sizes: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(key pool, queries, how made): the LM's own final hidden states over WordNet text,
    the last KNN_QUERIES of them (later text) as queries; past the computed pool, perturbed
    copies (`tiled`)."""
    from backends.learners.base import stored_path

    states = lm_states(lm, REAL_STATES + KNN_QUERIES, stored_path(lm, "wordnet-states.npy"))
    pool, queries = states[:-KNN_QUERIES], states[-KNN_QUERIES:]
    source = f"LM hidden states over WordNet glosses and examples ({len(pool)} computed"
    if max(sizes, default=0) > len(pool):
        source += "; larger sizes add copies with Gaussian noise of 0.5 x each coordinate's sd"
    return pool, queries, source + ")"


def recall(found: np.ndarray, exact: np.ndarray, k: int) -> float:
    """Mean share of the exact top-k that the approximate top-k holds."""
    return float(np.mean([len(set(a[:k]) & set(b[:k])) / k for a, b in zip(found, exact)]))


def recall_with_ties(found: np.ndarray, keys: np.ndarray, unit: np.ndarray, tenth: np.ndarray):
    """Mean share of the found top-10 whose exact cosine reaches the exact 10th one (less
    1e-6): a key tied with an exact neighbour counts. The LM's states hold exact duplicates
    (passages that open alike), and exact search itself breaks their ties arbitrarily."""
    rows = np.clip(found[:, :10], 0, None)
    cosines = np.einsum("qkd,qd->qk", keys[rows], unit)  # [q, 10]
    return float(np.mean((cosines >= tenth[:, None] - 1e-6) & (found[:, :10] >= 0)))


DISK_KINDS = {"ivfpq+disk": "float32", "ivfpq+disk fp16": "float16"}


def touched_pages(store, unit: np.ndarray) -> float:
    """Share of the store's file of keys (4 KiB pages) that the queries' candidates lie on."""
    rows = store.candidates(unit).ravel()
    rows = rows[rows >= 0]
    size = store.disk_path.stat().st_size
    row_bytes = store.disk.strides[0]
    first = size - len(store) * row_bytes  # the .npy header
    starts, ends = first + rows * row_bytes, first + (rows + 1) * row_bytes - 1
    pages = np.unique(np.concatenate([starts // 4096, ends // 4096]))
    return len(pages) / -(-size // 4096)


def drop_from_page_cache(path) -> None:
    """Evict the file's pages from the kernel's page cache (this file only; the store has
    not read it yet, so none is mapped)."""
    with open(path, "rb") as f:
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def knn_kind(kind: str, keys: np.ndarray, unit: np.ndarray, exact, tenth, seed: int) -> dict:
    """Build one store over `keys` (unit already: no copy) and time its batched search."""
    from backends.knn_store import KnnStore, StoreConfig

    disk = DISK_KINDS.get(kind)
    settings = StoreConfig(kind="ivfpq+disk" if disk else kind, disk_dtype=disk or "float32")
    build, store = timed(
        KnnStore, keys, np.arange(len(keys)), replace(settings, seed=seed), copy=False
    )
    values: dict = {"build_s": build}
    if disk:
        drop_from_page_cache(store.disk_path)
        values["query_ms_cold"] = 1000 * timed(store.search, unit, KNN_K)[0] / len(unit)
        search = store.search  # cosines from the file: the whole query path
    else:
        search = store.index.search
    seconds, (_, found) = timed(search, unit, KNN_K)
    values |= {
        "query_ms": 1000 * seconds / len(unit),
        "bytes_per_vector": store.bytes_per_vector(),
        "recall_at_10": recall(found, exact, 10),
        "recall_at_k": recall(found, exact, KNN_K),
        "recall_at_10_ties": recall_with_ties(found, keys, unit, tenth),
    }
    if disk:
        values["disk_bytes_per_vector"] = store.disk_bytes_per_vector()
        values["disk_touched"] = touched_pages(store, unit)
    store.close()
    return values


def knn_store(
    pool: np.ndarray, queries: np.ndarray, sizes: tuple[int, ...], seed: int, source: str = ""
) -> list[Result]:
    """Exact search vs IVF-PQ, IVF-PQ-R and IVF-PQ + disk re-ranking (the store's choice
    when large, its file of keys in float32 and float16) at each size."""
    import faiss

    rows, dim = [], pool.shape[1]
    config = {"dim": dim, "k": KNN_K, "queries": len(queries), "vectors": source}
    for n in sizes:
        keys = tiled(pool, n, seed)  # [n, d], our own copy: normalised in place
        faiss.normalize_L2(keys)
        unit = np.array(queries, dtype=np.float32)
        faiss.normalize_L2(unit)
        # Exact search is what IndexFlatIP does (one matrix product); timed without
        # building a second n x d copy of the keys.
        seconds, (sims, exact) = timed(faiss.knn, unit, keys, KNN_K, faiss.METRIC_INNER_PRODUCT)
        measured = {"flat": {"query_ms": 1000 * seconds / len(unit), "bytes_per_vector": 4 * dim}}
        for kind in ("ivfpq", "ivfpqr", *DISK_KINDS):
            measured[kind] = knn_kind(kind, keys, unit, exact, sims[:, 9], seed)
        del keys
        for kind, values in measured.items():
            values["queries_per_s"] = 1000 / values["query_ms"]
            rows.append(perf_row(kind, None, n, values, config, case="knn store"))
        for large in ("ivfpqr", "ivfpq+disk"):
            ratio = {
                "query_speedup": measured["flat"]["query_ms"] / measured[large]["query_ms"],
                "memory_ratio": measured["flat"]["bytes_per_vector"]
                / measured[large]["bytes_per_vector"],
            }
            rows.append(perf_row(f"flat/{large}", None, n, ratio, config, case="knn store ratios"))
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


def learn_click(options: RunOptions) -> list[Result]:
    """A whole Learn click as the app makes it (`backends.pipeline.learn`: every learner at
    the app's defaults, one batched generation, neighbours in both spaces), on the run's
    device and, when that is a GPU, on the same machine's CPU beside it: the first click
    of the process (it fills per-process caches: replay states, the cache's store, the
    reader's prompts), then the median of `CLICK_REPEATS` more."""
    from backends.pipeline import learn
    from backends.settings import resolve_device

    devices = [resolve_device(options.device)]  # type: ignore[arg-type]
    if devices[0] != "cpu":
        devices.append("cpu")
    rows, seconds = [], {}
    click = (CLICK_WORD, list(CLICK_SENTENCES), list(options.learners))
    for device in devices:
        first, _ = timed(learn, *click, lm=options.lm, device=device)
        clicks = [timed(learn, *click, lm=options.lm, device=device) for _ in range(CLICK_REPEATS)]
        repeats = sorted(t for t, _ in clicks)
        seconds[device], result = repeats[len(repeats) // 2], clicks[-1][1]
        metrics = {
            "seconds": seconds[device],
            "first_s": first,
            "min_s": repeats[0],
            "max_s": repeats[-1],
            "define_s": result.timings["define_batched"],  # the last click's
        }
        config = {
            "device": result.device,
            "learn_s": {r.learner: round(r.timings["learn"], 3) for r in result.results},
            "device_name": device_name(result.device),
            "word": CLICK_WORD,
            "definitions": {r.learner: r.definition for r in result.results},
        }
        n, case = len(options.learners), "learn click, all learners"
        rows.append(perf_row("learn click", 3, n, metrics, config, case=case))
    if len(devices) > 1:
        ratio = {"ratio": seconds["cpu"] / seconds[devices[0]]}
        rows.append(perf_row(f"cpu/{devices[0]}", 3, 1, ratio, case="learn click speed-up"))
    return rows


def device_name(device: str) -> str:
    """The GPU's name, or the CPU's core count: what a timing was measured on."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU, {os.cpu_count()} cores, {torch.get_num_threads()} torch threads"


def run_perf(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    return labelled(
        measure(lm, options), device_name(str(lm.device)) if lm.device.type != "cpu" else ""
    )


def labelled(rows: list[Result], gpu: str) -> list[Result]:
    """Rows that ran on a GPU say so in their label (the results tables show it), and a
    learn click's row names where it ran (a GPU run times the same machine's CPU beside it)."""
    for row in rows:
        where = row.config.get("device_name") if row.case.startswith("learn click") else gpu
        if where and "label" not in row.config:
            row.config["label"] = where
    return rows


def measure(lm, options: RunOptions) -> list[Result]:
    rows = []
    if options.decode_only:  # definitions and decoding only, each output layer
        return definition_batching(lm, options) + decode_floor(lm)
    if not options.knn_only:
        rows += model_load(options)
        rows += learner_latency(lm, options)
        rows += definition_batching(lm, options)
        rows += decode_floor(lm)
        rows += learn_click(options)
    if options.skip_knn:  # the store and the ratings run on the CPU whatever the LM's device
        return rows + [process_memory()]
    pool, queries, source = knn_sets(lm, options.knn_sizes, options.seed)
    rows += knn_store(pool, queries, options.knn_sizes, options.seed, source)
    if not options.knn_only:
        rows += ratings(options.vote_sizes, options.seed)
    return rows + [process_memory()]


def process_memory() -> Result:
    """The process's peak resident memory, and on a GPU its peak allocated memory."""
    metrics = {"peak_rss_mb": peak_rss_mb()}
    if torch.cuda.is_initialized():
        metrics["peak_gpu_mb"] = torch.cuda.max_memory_allocated() / 2**20
    return perf_row("process", None, 1, metrics, case="peak memory")
