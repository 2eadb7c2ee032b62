"""One request, end to end: examples -> each learner -> nonce embeddings -> one batched
generation of definitions -> faiss neighbours (and, on demand, a t-SNE map)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

import torch

from backends.decoding import Decoding
from backends.definitions import (
    DEFAULT_DECODING,
    ORACLE,
    ORACLE_IN_CONTEXT,
    Definition,
    define,
    define_known,
)
from backends.inputs import (
    Example,
    check_definition,
    check_examples,
    check_neighbours,
    check_real_word,
    check_word,
)
from backends.learners import NonceEmbedding, load_learner, parse_learners
from backends.learners.college import examples_prefix
from backends.models import load_causal_lm
from backends.neighbours import Neighbour, Space, vocabulary_index
from backends.nonce_lm import NonceLM
from backends.projection import MapPoint, neighbourhood_map
from backends.reference import rank_among_lemmas, reference_vectors, unit
from backends.settings import Device, load_settings, resolve_device
from backends.word_forms import names_word, with_real_word

log = logging.getLogger(__name__)

REAL_WORD = "the real word"  # how maps and cards name the word a learner aims at


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
class KnownWord:
    """The real word a person says the new one stands for, as the LM already knows it: the
    ceiling a learner aims at, as the benchmarks' oracle rows measure it."""

    word: str
    # ORACLE: its own definition, same probe and decoding; ORACLE_IN_CONTEXT: the same after
    # the examples with it in the new word's place (as shown)
    definitions: dict[str, str]
    # which of them say the word itself, or an inflection of it, as its own bans let through
    # ('a "sneeze" or ...'): a definition the benchmarks count as degenerate
    says_itself: dict[str, bool]
    vector: torch.Tensor  # its reference vector: the mean input row of its tokens
    # learner -> cosine of its input vector to `vector`, for learners whose vector holds what
    # they learned (`Learner.learns_a_vector`; not prompting's random one)
    similarity: dict[str, float]
    # learner -> the word's rank among WordNet's lemmas by cosine to that vector (1 = none is
    # nearer: Definitional Nonce's measure), out of `ranked_among`
    rank: dict[str, int]
    ranked_among: int


@dataclass
class LearnResult:
    word: str
    lm: str
    device: str
    results: list[LearnerResult]
    timings: dict[str, float]
    known: KnownWord | None = None  # with a real word given: what the learners aim at


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
    real_word: str | None = None,
) -> LearnResult:
    """Validate, learn with every requested learner, define all in one batch, find neighbours.

    `real_word`, when given, is the word the new one stands for: the result then holds what
    the LM says of it and how near each learner's vector came to it (`KnownWord`).
    `on_step(what, i, n)` is told before each of the n steps (each learner, the batched
    definitions, then the real word's), so a caller can show progress."""
    word = check_word(word)
    checked = check_examples(word, examples)
    definition = check_definition(definition)
    real_word = check_real_word(real_word, word)
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
    progress_steps = len(names) + 1 + bool(real_word)
    for i, (name, learner) in enumerate(zip(names, learners)):
        if on_step:
            on_step(name, i, progress_steps)
        embeddings.append(learner.learn(nonce_lm, word, checked, definition))
    if on_step:
        on_step("definitions", len(names), progress_steps)
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
    known = None
    if real_word:
        if on_step:
            on_step("real_word", len(names) + 1, progress_steps)
        start = time.perf_counter()
        with_vectors = [e for e, learner in zip(embeddings, learners) if learner.learns_a_vector]
        known = known_word(nonce_lm, word, checked, real_word, with_vectors, max_new_tokens)
        timings["real_word"] = time.perf_counter() - start
    return LearnResult(word, nonce_lm.name, str(nonce_lm.device), results, timings, known)


def known_word(
    lm: NonceLM,
    word: str,
    examples: list[Example],
    real_word: str,
    embeddings: list[NonceEmbedding],
    max_new_tokens: int = 32,
) -> KnownWord:
    """What the LM says of `real_word`, alone and after the examples with it in `word`'s
    place (college's layout, as DefGen's oracle rows), and each of `embeddings`' input
    vector's cosine to its reference vector and the word's rank among WordNet's lemmas by
    cosine to that vector (the word-vector benchmarks' measures)."""
    [alone] = define_known(lm, [real_word], max_new_tokens)
    texts = [e.text for e in examples]
    in_context = define_in_context(lm, word, texts, real_word, max_new_tokens)
    vector = torch.from_numpy(reference_vectors(lm, [real_word])[0])
    target = unit(vector)
    similarity = {e.learner: float(unit(e.input_vector) @ target) for e in embeddings}
    ranks, ranked_among = rank_among_lemmas(
        lm, [e.input_vector for e in embeddings], real_word, vector.numpy()
    )
    rank = {e.learner: r for e, r in zip(embeddings, ranks)}
    definitions = {ORACLE: alone.shown, ORACLE_IN_CONTEXT: in_context.shown}
    says_itself = {name: names_word(text, real_word) for name, text in definitions.items()}
    return KnownWord(real_word, definitions, says_itself, vector, similarity, rank, ranked_among)


def define_in_context(
    lm: NonceLM,
    word: str,
    texts: list[str],
    real_word: str,
    max_new_tokens: int = 32,
    decoding: Decoding = DEFAULT_DECODING,
) -> Definition:
    """The LM defining `real_word` after the sentences `texts` with it in the made-up
    `word`'s place, set before the probe as college sets its examples, banned from its own
    word: DefGen's `oracle_in_context`, the Learn tab's real-word card and the arena's
    oracle side."""
    filled = [Example(with_real_word(word, text, real_word)) for text in texts]
    [found] = define_known(
        lm,
        [real_word],
        max_new_tokens,
        decoding=decoding,
        learner=ORACLE_IN_CONTEXT,
        prefix=examples_prefix(filled),
    )
    return found


def vector_in(embedding: NonceEmbedding, space: Space) -> torch.Tensor:
    return embedding.input_vector if space == "input" else embedding.output_vector


def map_points(
    result: LearnResult, space: Space = "input", k: int = 10, seed: int = 0
) -> tuple[list[MapPoint], str]:
    """t-SNE (or PCA) of every learner's vector with its top-k neighbours in `space`, and
    with a real word given (`result.known`), that word's reference vector with its own."""
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
    if result.known is not None:  # where the learners aim: the real word, among its own
        vector = result.known.vector  # in the output space, the same mean of its output rows
        if space == "output":
            matrix = lm.output_matrix
            vector = torch.from_numpy(reference_vectors(lm, [result.known.word], matrix=matrix)[0])
        name = real_word_label(result.known.word)
        found = index.search(vector, k)[0]
        learned[name], neighbours[name] = vector.numpy(), found[:k]
        rows[name] = index.vectors_of([n.token_id for n in found[:k]])
    return neighbourhood_map(learned, neighbours, rows, seed=seed)


def real_word_label(word: str) -> str:
    """The real word's name on a map, beside the learners' names."""
    return f"{REAL_WORD}: {word}"


def is_real_word_label(name: str) -> bool:
    """Whether a map's group is the real word's (`real_word_label`), not a learner's."""
    return name.startswith(f"{REAL_WORD}: ")
