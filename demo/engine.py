"""The app's one door to the LM: load it with progress, run learners one request at a time,
remember the embedding each (item, learner, LM, config) produced, and sample battles from them.

The LM's nonce slot is shared state, so every call into it holds one lock; the Gradio queue
also runs Learn one at a time, and the lock keeps arena battles from overlapping it. At
launch a warm-up can learn one example in the background, a step at a time, giving way to
any person's request that waits for the lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from backends.definitions import ORACLE_IN_CONTEXT
from backends.inputs import check_examples
from backends.learners.token_tuning import TokenTuningConfig
from backends.models import LM_PRESETS, converted_dir
from backends.settings import Device, load_settings, resolve_device
from demo.gpu import gpu, on_zero_gpu
from demo.sampling import define_sampled
from demo.store import Item

if TYPE_CHECKING:  # the pipeline (transformers, faiss, scikit-learn) loads on first use
    from backends.decoding import Decoding
    from backends.learners.base import NonceEmbedding
    from backends.pipeline import LearnResult

log = logging.getLogger(__name__)

Progress = Callable[..., object]  # progress(fraction, desc=...) — gr.Progress or a no-op

_LM_LOCK = threading.Lock()
_loaded: set[tuple[str, str]] = set()
# People's requests waiting for the LM: the launch-time warm-up gives way to them.
_people_waiting = 0
_waiting_count = threading.Lock()


@contextmanager
def lm_turn():
    """Hold the LM for a person's request, counted among those waiting until it has it."""
    global _people_waiting
    with _waiting_count:
        _people_waiting += 1
    try:
        _LM_LOCK.acquire()
    finally:
        with _waiting_count:
            _people_waiting -= 1
    try:
        yield
    finally:
        _LM_LOCK.release()


# ZeroGPU holds a GPU for at most this long around a call (a shorter claim is queued sooner).
# Measured on an H100 (benchmarks/results/perf-gpu-h100.json): a Learn click with all six
# learners takes 2.1 s, a process's first about 10 s by its parts (the LM's load 3.2 s, token
# tuning's replay states 3.4 s, college's encoder 1.8 s); token tuning costs ~0.09 s a step, so the
# page's 100-step maximum adds ~9 s. On an H200 with the lean step's CUDA graph
# (perf-gpu-lean-h200.json) a click took 0.92 s, a first about 7 s by its parts (the LM's
# load 2.9 s, token tuning's first call 2.4 s, college's 1.8 s). On today's code, an H200
# (perf-gpu-h200-f65b7d0.json): a click 1.20 s, a first about 10.5 s by its parts (the LM's
# load 3.1 s, token tuning's first call 3.3 s, college's 2.4 s), token tuning ~0.09 s a step:
# with the page's 100-step maximum about 20 s, so these stay upper bounds. Measured again
# on another H200 (perf-gpu-h200-c4c0a2d.json): a click 1.05 s, a real word 0.17 s more.
# A battle is two learners and one short sampled batch.
LEARN_GPU_SECONDS = 30
BATTLE_GPU_SECONDS = 20


def no_progress(*_args, **_kwargs) -> None:
    return None


def lm_name(name: str | None) -> str:
    return name or load_settings().lm


def set_up_lm(name: str | None, device: Device, progress: Progress = no_progress) -> None:
    """Load the LM, telling the person when this is the slow first time."""
    name, where = lm_name(name), resolve_device(device)
    if (name, where) in _loaded:
        return
    preset = LM_PRESETS.get(name)
    first = preset is not None and not (converted_dir(preset) / "config.json").exists()
    what = "converting" if first else "loading"
    wait = "about a minute, once per machine" if first else "a few seconds"
    progress(0.02, desc=f"Setting up {name} on {where}: {what} the model ({wait})…")
    from backends.pipeline import load_lm

    with lm_turn():
        load_lm(name, device)
    _loaded.add((name, where))


@gpu(duration=LEARN_GPU_SECONDS)
def run_learn(
    word: str,
    examples: Sequence[str],
    learners: Sequence[str],
    *,
    definition: str | None = None,
    lm: str | None = None,
    device: Device = "auto",
    configs: dict | None = None,
    max_new_tokens: int = 32,
    on_step=None,
    real_word: str | None = None,
) -> LearnResult:
    """backends.pipeline.learn under the LM lock (GPU-bound on a ZeroGPU Space)."""
    from backends.pipeline import learn

    with lm_turn():
        return learn(
            word,
            list(examples),
            list(learners),
            definition=definition,
            lm=lm,
            device=device,
            configs=configs,
            max_new_tokens=max_new_tokens,
            on_step=on_step,
            real_word=real_word,
        )


DEFAULT_TT_STEPS = TokenTuningConfig().steps


def learner_configs(tt_steps: int) -> dict:
    """The configs a request sets: token tuning's step count (few keep a battle cheap)."""
    return {"token_tuning": TokenTuningConfig(steps=tt_steps)}


@dataclass(frozen=True)
class CacheKey:
    item: Item
    learner: str
    lm: str
    config: str  # repr of the learner's config; "" for the defaults


class EmbeddingCache:
    """A bounded, thread-safe map CacheKey -> learned embedding (least recently used out).

    Battles sample new definitions every time, but the embedding a learner builds from an
    item's sentences is the same each time (and costs seconds for token tuning): kept here."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[CacheKey, NonceEmbedding] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: CacheKey) -> NonceEmbedding | None:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
            return self._data.get(key)

    def put(self, key: CacheKey, embedding: NonceEmbedding) -> None:
        with self._lock:
            self._data[key] = embedding
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)


def cache_key(item: Item, learner: str, lm: str | None, configs: dict | None) -> CacheKey:
    config = (configs or {}).get(learner)
    return CacheKey(item, learner, lm_name(lm), "" if config is None else repr(config))


def remember(cache: EmbeddingCache, result: LearnResult, item: Item, configs: dict | None):
    """Keep every embedding of a Learn run for later battles on the same item."""
    for row in result.results:
        cache.put(cache_key(item, row.learner, result.lm, configs), row.embedding)


@gpu(duration=BATTLE_GPU_SECONDS)
def run_battle(
    item: Item,
    learners: Sequence[str],
    *,
    lm: str | None,
    configs: dict | None,
    decoding: Decoding,
    max_new_tokens: int,
    cache: EmbeddingCache,
    mark_cut: int | None = None,
) -> dict[str, str]:
    """Each learner's embedding of the item (cached, or learned now), then one batch of
    definitions decoded as the battle says (seeded sampling; `mark_cut`: which cut ones are
    shown so, `define_sampled`'s); under the LM lock (GPU-bound on a ZeroGPU Space)."""
    from backends.learners import load_learner
    from backends.pipeline import load_lm

    with lm_turn():
        nonce_lm = load_lm(lm)
        checked = check_examples(item.word, list(item.examples))
        names = [name for name in learners if name != ORACLE_IN_CONTEXT]
        embeddings = []
        for name in names:
            key = cache_key(item, name, lm, configs)
            embedding = cache.get(key)
            if embedding is None:
                learner = load_learner(name, (configs or {}).get(name))
                embedding = learner.learn(nonce_lm, item.word, checked)
                cache.put(key, embedding)
            embeddings.append(embedding)
        sampled = define_sampled(nonce_lm, embeddings, decoding, max_new_tokens, mark_cut)
        texts = dict(zip(names, sampled, strict=True))
        if ORACLE_IN_CONTEXT in learners:
            texts[ORACLE_IN_CONTEXT] = oracle_definition(
                nonce_lm, item, decoding, max_new_tokens, mark_cut
            )
    return {name: texts[name] for name in learners}


def oracle_definition(
    nonce_lm, item: Item, decoding: Decoding, max_new_tokens: int, mark_cut: int | None = None
) -> str:
    """The arena's ceiling: the LM defining a prepared item's real word (`answer`) after the
    item's sentences with that word in the made-up one's place, set before the probe as
    college sets its examples, and banned from its own word (DefGen's `oracle_in_context`);
    sampled as the battle says, as the learners' definitions are. Where it still writes the
    word (an inflection, 'the news of newspapers', or a word of several tokens, 'a "naphtha
    compound"'), the made-up word is shown in its place, with the same ending (birds ->
    blicks): the voter is not told the answer nor which side knew it, and the text reads as
    a learner's that names its new word, degenerate to the judge as that is."""
    from backends.pipeline import define_in_context
    from backends.word_forms import with_made_up_word

    if not item.answer:
        raise ValueError(f"{item.word!r} has no real word behind it: the oracle cannot play")
    texts = list(item.examples)
    found = define_in_context(nonce_lm, item.word, texts, item.answer, max_new_tokens, decoding)
    return with_made_up_word(found.marked(mark_cut), item.answer, item.word)


def run_map(result: LearnResult, space: str) -> tuple[list, str]:
    """backends.pipeline.map_points (t-SNE) under the LM lock: it reads the LM's index."""
    from backends.pipeline import map_points

    with lm_turn():
        return map_points(result, space)  # type: ignore[arg-type]


def warm_up(
    word: str,
    examples: Sequence[str],
    learners: Sequence[str],
    *,
    lm: str | None = None,
    device: Device = "auto",
) -> int:
    """Load the LM, learn `word` with each learner in turn as a Learn click would (the
    page's token-tuning steps), then draw its map, so that what a process loads on first
    use (the LM, the college encoder, token tuning's replay states, the neighbour indexes,
    the t-SNE code, the WordNet words a real word is ranked among) is loaded before the
    first person presses Learn. One step at a time under the LM lock, and none once a
    person's request is waiting for the LM: the person then loads what is left, as without
    a warm-up. Returns the steps done, of len(learners) + 3."""
    from backends.pipeline import learn, load_lm, map_points
    from backends.reference import lemma_matrix

    configs = learner_configs(DEFAULT_TT_STEPS)
    result = None
    steps = len(learners) + 3
    for step in range(steps):
        with _LM_LOCK:
            if _people_waiting:
                return step
            if step == 0:
                load_lm(lm, device)
                _loaded.add((lm_name(lm), resolve_device(device)))
            elif step <= len(learners):
                name = learners[step - 1]
                result = learn(word, list(examples), [name], lm=lm, device=device, configs=configs)
            elif step == len(learners) + 1:
                if result is not None:
                    map_points(result, "input")
            else:  # the ready examples name their real word: its rank needs these
                lemma_matrix(load_lm(lm, device))
    return steps


def warm_up_in_background(
    word: str, examples: Sequence[str], learners: Sequence[str], *, lm: str | None = None
) -> threading.Thread | None:
    """`warm_up` on a daemon thread, started now; None where it is skipped: on a ZeroGPU
    Space no GPU is held at launch, so a warm-up there would load onto the wrong device. A
    click during the warm-up waits for its current step at most; a failed warm-up is logged
    and only leaves the first click to load what it needs, as it would have."""
    if on_zero_gpu():
        log.info("warm-up skipped: a ZeroGPU Space holds a GPU only inside a request")
        return None

    def work() -> None:
        start, steps = time.perf_counter(), len(learners) + 3
        try:
            done = warm_up(word, examples, learners, lm=lm)
        except Exception as err:  # noqa: BLE001 - any failure here must not stop the app
            log.warning(
                "warm-up failed (%s: %s); the first Learn click loads instead",
                type(err).__name__,
                err,
            )
            return
        seconds = time.perf_counter() - start
        if done < steps:
            log.info(
                "warm-up gave way to a person after %d of %d steps, %.1f s", done, steps, seconds
            )
        else:
            log.info("warmed up in %.1f s (%s on %r)", seconds, ", ".join(learners), word)

    thread = threading.Thread(target=work, name="warm-up", daemon=True)
    thread.start()
    return thread
