"""Does the int8 output layer change definitions? Greedy DefGen definitions with the fp32
layer and with the int8 shortlist (backends/int8_head.py), item by item, side by side in
one process: the share that match word for word, and the time each took.

Each learner learns under each layer, since the CoLLEGe learner's LM reader scores its
candidates' right contexts through the int8 layer when it is on (`NonceLM.target_logprobs`):
for it, `learn` is the reading and `matching` covers the vector's change as well as
decoding's. Other learners learn the same vector either way."""

from __future__ import annotations

import logging
import time

from backends.definitions import define
from backends.pipeline import load_lm
from benchmarks.data import load_defgen
from benchmarks.perf import decoding_with, output_layers, perf_row
from benchmarks.results import Result
from benchmarks.runs import STAND_IN, RunOptions, examples_for, learn_each

log = logging.getLogger(__name__)


def run_int8_head(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    items = load_defgen(options.data[0])[options.offset :][: options.limit]
    learners = options.learners[:1]  # one learner's definitions: the layer is what varies
    layers = dict(output_layers(lm))
    if "int8" not in layers:
        raise ValueError("the int8 output layer is a CPU kernel: run with --device cpu")
    rows = []
    for shots in options.shots:
        texts, define_s, learn_s = {}, {}, {}
        for label, layer in layers.items():
            with decoding_with(lm, layer):
                start = time.perf_counter()
                embeddings = [
                    learn_each(lm, learners, STAND_IN, examples_for(i.examples[:shots]), options)[0]
                    for i in items
                ]
                learn_s[label] = time.perf_counter() - start
                start = time.perf_counter()
                texts[label] = [define(lm, [e], options.max_new_tokens)[0].text for e in embeddings]
                define_s[label] = time.perf_counter() - start
            log.info(
                "%s, k=%d: learnt in %.1f s, %d definitions in %.1f s",
                label, shots, learn_s[label], len(items), define_s[label],
            )  # fmt: skip
        rows += compare(items, shots, learners[0], texts, learn_s, define_s, options)
    return rows


def compare(items, shots, learner, texts, learn_s, define_s, options) -> list[Result]:
    """The rows of one number of shots: each layer's times, then int8 against fp32."""
    same = [a == b for a, b in zip(texts["fp32"], texts["int8"])]
    config = {"learner": learner, "max_new_tokens": options.max_new_tokens}
    differing = [
        {"word": i.word, "fp32": a, "int8": b}
        for i, a, b, s in zip(items, texts["fp32"], texts["int8"], same)
        if not s
    ]
    n = len(items)
    first = options.offset + 1
    which = f"({learner}, items {first}-{first + n - 1})"  # the table's rows say what they cover
    rows = []
    for label in define_s:
        seconds = (("define", define_s[label]), ("learn", learn_s[label]))
        rows += [
            perf_row(f"{label} {which}", shots, n, {"seconds": s}, config, case=case)
            for case, s in seconds
        ]
    rows.append(
        perf_row(
            f"int8/fp32 {which}",
            shots,
            n,
            {"matching": sum(same) / n, "ratio": define_s["fp32"] / define_s["int8"]},
            {**config, "differing": differing},
            case="define, int8 head vs fp32 (speed-up)",
        )
    )
    rows.append(
        perf_row(
            f"int8/fp32 {which}",
            shots,
            n,
            {"ratio": learn_s["fp32"] / max(learn_s["int8"], 1e-9)},
            config,
            case="learn, int8 head vs fp32 (speed-up)",
        )
    )
    return rows
