"""Does a faster kernel change definitions? Greedy DefGen definitions with a reference
kernel and a faster one, item by item, side by side in one process: the share that match
word for word, and the time each took. Four pairs are measured:

- `int8`: the LM's output layer in fp32 against the int8 shortlist (backends/int8_head.py);
- `packed`: the body's linear layers plain against oneDNN's packed weights
  (backends/packed_linear.py);
- `steps`: each token decoded through transformers' forward against the lean step
  (backends/decode_step.py), replayed as a CUDA graph on a GPU;
- `half`: the lean step reading the blocks' weights in fp32 against fp16
  (backends/half_body.py).

The first three pairs decode with fp32 weights throughout (no fp16 step), so each
measures its own kernel alone.

Each learner learns under each kernel, since the CoLLEGe learner's LM reader scores its
candidates through both (`NonceLM.target_logprobs`, and every forward pass without a
gradient): for it, `learn` is the reading and `matching` covers the vector's change as
well as decoding's. The oracle's definitions (the real word, no learning) are compared
too: the kernel's effect on decoding alone."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import AbstractContextManager

from backends.definitions import define, define_known
from backends.pipeline import load_lm
from benchmarks.data import load_defgen
from benchmarks.perf import decoding_with, half_body, output_layers, perf_row
from benchmarks.results import Result
from benchmarks.runs import STAND_IN, RunOptions, examples_for, learn_each

log = logging.getLogger(__name__)

Variants = dict[str, Callable[[], AbstractContextManager]]  # label -> "run under it"


def run_int8_head(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    layers = dict(output_layers(lm))
    if "int8" not in layers:
        raise ValueError("the int8 output layer is a CPU kernel: run with --device cpu")
    variants = {
        label: (lambda layer=layer: decoding_with(lm, layer, half=None))
        for label, layer in layers.items()
    }
    # one learner's definitions: the layer is what varies
    return run_pair(lm, options, variants, options.learners[:1], "int8 head vs fp32")


def run_packed_linears(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    if lm.packed is None:
        lm.use_packed_linears()  # raises on CUDA, where the plain layers are the fast ones
    variants = {
        label: (lambda on=on: decoding_with(lm, lm.head_int8, packed=on, half=None))
        for label, on in (("plain", False), ("packed", True))
    }
    return run_pair(lm, options, variants, options.learners, "packed linears vs plain")


def run_lean_steps(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    graphs = lm.device.type == "cuda"  # the shipped step on each device
    lean = "lean step, CUDA graph" if graphs else "lean step"
    variants = {
        label: (
            lambda on=on: decoding_with(lm, lm.head_int8, lean=on, graphs=on and graphs, half=None)
        )
        for label, on in (("transformers step", False), (lean, True))
    }
    return run_pair(lm, options, variants, options.learners, "lean step vs transformers")


def run_half_body(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    if lm.device.type != "cpu":
        raise ValueError("the fp16 decoding weights are a CPU kernel: run with --device cpu")
    half = half_body(lm)
    variants = {
        label: (lambda weights=weights: decoding_with(lm, lm.head_int8, lean=True, half=weights))
        for label, weights in (("fp32 weights", None), ("fp16 weights", half))
    }
    return run_pair(lm, options, variants, options.learners, "fp16 step weights vs fp32")


def run_pair(lm, options: RunOptions, variants: Variants, learners, what: str) -> list[Result]:
    """Every learner's definitions (and the oracle's) under each of the two variants."""
    items = load_defgen(options.data[0])[options.offset :][: options.limit]
    # Warm-up, untimed: the first learning loads the learners' own models and the LM's
    # memoised constants, which would otherwise be charged to whichever variant runs first.
    learn_each(lm, learners, STAND_IN, examples_for(items[0].examples[:1]), options)
    rows = []
    for shots in options.shots:
        texts, define_s, learn_s = {}, {}, {}
        for label, under in variants.items():
            with under():
                start = time.perf_counter()
                embeddings = [
                    learn_each(lm, learners, STAND_IN, examples_for(i.examples[:shots]), options)
                    for i in items
                ]
                learn_s[label] = time.perf_counter() - start
                start = time.perf_counter()
                texts[label] = {
                    name: [define(lm, [e[j]], options.max_new_tokens)[0].text for e in embeddings]
                    for j, name in enumerate(learners)
                }
                define_s[label] = time.perf_counter() - start
                if len(learners) > 1:  # the oracle: decoding alone, once is enough
                    texts[label]["oracle"] = [
                        define_known(lm, [i.word], options.max_new_tokens)[0].text for i in items
                    ]
            log.info(
                "%s, k=%d: learnt in %.1f s, %d definitions in %.1f s",
                label, shots, learn_s[label], len(items), define_s[label],
            )  # fmt: skip
        rows += compare(items, shots, texts, learn_s, define_s, options, what)
    return rows


def compare(items, shots, texts, learn_s, define_s, options, what: str) -> list[Result]:
    """The rows of one number of shots: each variant's times, then the second against the
    first (the reference), per learner."""
    slow, fast = list(texts)
    n = len(items)
    first = options.offset + 1
    span = f"items {first}-{first + n - 1}"
    names = list(texts[slow])
    config = {"learners": names, "max_new_tokens": options.max_new_tokens}
    rows = []
    for label in define_s:
        seconds = (("define", define_s[label]), ("learn", learn_s[label]))
        rows += [
            perf_row(f"{label} ({span})", shots, n, {"seconds": s}, config, case=case)
            for case, s in seconds
        ]
    for name in names:
        pairs = list(zip(items, texts[slow][name], texts[fast][name]))
        differing = [{"word": i.word, slow: a, fast: b} for i, a, b in pairs if a != b]
        rows.append(
            perf_row(
                f"{fast}/{slow} ({name}, {span})",
                shots,
                n,
                {"matching": 1 - len(differing) / n},
                {**config, "differing": differing},
                case=f"define, {what}",
            )
        )
    for case, times in (("define", define_s), ("learn", learn_s)):
        rows.append(
            perf_row(
                f"{fast}/{slow} ({span})",
                shots,
                n,
                {"ratio": times[slow] / max(times[fast], 1e-9)},
                config,
                case=f"{case}, {what} (speed-up)",
            )
        )
    return rows
