"""One request, end to end: examples -> each learner -> nonce embeddings -> one batched
generation of definitions -> faiss neighbours (and, on demand, a t-SNE map)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from backends.definitions import define
from backends.inputs import check_definition, check_examples, check_neighbours, check_word
from backends.learners import NonceEmbedding, load_learner, parse_learners
from backends.models import load_causal_lm
from backends.neighbours import Neighbour, Space, vocabulary_index
from backends.nonce_lm import NonceLM
from backends.projection import MapPoint, neighbourhood_map
from backends.settings import Device, load_settings, resolve_device

log = logging.getLogger(__name__)


def load_lm(name: str | None = None, device: Device = "auto") -> NonceLM:
    """The frozen LM with its nonce slot, loaded once per process (and per device)."""
    return _load_lm(name or load_settings().lm, resolve_device(device))


@lru_cache(maxsize=4)
def _load_lm(name: str, device: str) -> NonceLM:
    settings = load_settings()
    threads = settings.cpu_threads
    if threads > 0:  # on a shared CPU, fewer threads than cores avoids thrashing
        torch.set_num_threads(threads)
    model, tokenizer = load_causal_lm(name, device)
    lm = NonceLM(model, tokenizer, name)
    lm.lean_steps = settings.lean_steps
    if settings.int8_head and device == "cpu":
        try:
            lm.use_int8_head()
        except (RuntimeError, AttributeError, NotImplementedError) as err:
            # fbgemm's int8 kernels are missing from some torch builds: decode in fp32.
            log.warning("int8 output layer unavailable (%s); decoding with the fp32 layer", err)
    if settings.packed_linears and device == "cpu":
        try:
            lm.use_packed_linears()
        except (RuntimeError, AttributeError, NotImplementedError) as err:
            # oneDNN is missing from some torch builds: the plain layers give the same results.
            log.warning("packed linear layers unavailable (%s); using the plain ones", err)
    if settings.half_body and settings.lean_steps and device == "cpu":  # only the step reads it
        try:
            lm.use_half_body()
        except (RuntimeError, AttributeError, NotImplementedError) as err:
            # fbgemm (x86 only) is missing from some torch builds: decode with fp32 weights.
            log.warning("fp16 decoding weights unavailable (%s); decoding with fp32 ones", err)
    return lm


@dataclass
class LearnerResult:
    learner: str
    definition: str  # as shown: `Definition.shown`
    neighbours: dict[str, list[Neighbour]]  # space -> top-k
    embedding: NonceEmbedding
    timings: dict[str, float] = field(default_factory=dict)  # seconds


@dataclass
class LearnResult:
    word: str
    lm: str
    device: str
    results: list[LearnerResult]
    timings: dict[str, float]


def learn(
    word: str,
    examples: list[str],
    learners: str | list[str] = "all",
    definition: str | None = None,
    lm: str | None = None,
    device: Device = "auto",
    k: int = 10,
    spaces: tuple[Space, ...] = ("input", "output"),
    configs: dict | None = None,
    max_new_tokens: int = 32,
    on_step: Callable[[str, int, int], None] | None = None,
) -> LearnResult:
    """Validate, learn with every requested learner, define all in one batch, find neighbours.

    `on_step(what, i, n)` is told before each of the n steps (each learner, then the
    batched definitions), so a caller can show progress."""
    word = check_word(word)
    checked = check_examples(word, examples)
    definition = check_definition(definition)
    k = check_neighbours(k)
    names = parse_learners(learners)
    timings: dict[str, float] = {}
    start = time.perf_counter()
    nonce_lm = load_lm(lm, device)
    timings["load_lm"] = time.perf_counter() - start
    learners = [load_learner(name, (configs or {}).get(name)) for name in names]
    for learner in learners:  # a learner that cannot teach this LM refuses before any learns
        learner.check_lm(nonce_lm)
    embeddings = []
    for i, (name, learner) in enumerate(zip(names, learners)):
        if on_step:
            on_step(name, i, len(names) + 1)
        embeddings.append(learner.learn(nonce_lm, word, checked, definition))
    if on_step:
        on_step("definitions", len(names), len(names) + 1)
    start = time.perf_counter()
    definitions = define(nonce_lm, embeddings, max_new_tokens=max_new_tokens)
    timings["define_batched"] = time.perf_counter() - start
    results = []
    for emb, defn in zip(embeddings, definitions):
        start = time.perf_counter()
        found = {s: vocabulary_index(nonce_lm, s).search(vector_in(emb, s), k)[0] for s in spaces}
        results.append(
            LearnerResult(
                emb.learner,
                defn.shown,
                found,
                emb,
                {"learn": emb.seconds, "neighbours": time.perf_counter() - start},
            )
        )
    return LearnResult(word, nonce_lm.name, str(nonce_lm.device), results, timings)


def vector_in(embedding: NonceEmbedding, space: Space) -> torch.Tensor:
    return embedding.input_vector if space == "input" else embedding.output_vector


def map_points(
    result: LearnResult, space: Space = "input", k: int = 10, seed: int = 0
) -> tuple[list[MapPoint], str]:
    """t-SNE (or PCA) of every learner's vector with its top-k neighbours in `space`."""
    lm = load_lm(result.lm, "cuda" if result.device.startswith("cuda") else "cpu")  # cached
    index = vocabulary_index(lm, space)
    learned, neighbours, rows = {}, {}, {}
    for r in result.results:
        vector = vector_in(r.embedding, space).float()
        if not vector.any():  # no direction (the cache's output vector): nowhere on a map
            continue
        learned[r.learner] = vector.cpu().numpy()
        found = r.neighbours.get(space) or index.search(vector, k)[0]
        neighbours[r.learner] = found[:k]
        rows[r.learner] = index.vectors_of([n.token_id for n in found[:k]])
    return neighbourhood_map(learned, neighbours, rows, seed=seed)
