"""Does the int8 output layer change definitions? Greedy DefGen definitions with the fp32
layer and with the int8 shortlist (backends/int8_head.py), item by item, side by side in
one process: the share that match word for word, and the time each took."""

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

SHOTS = 3  # every example of a DefGen item


def run_int8_head(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    items = load_defgen(options.data[0])[: options.limit]
    learners = options.learners[:1]  # one learner's definitions: the layer is what varies
    embeddings = [
        learn_each(lm, learners, STAND_IN, examples_for(item.examples[:SHOTS]), options)[0]
        for item in items
    ]
    texts, seconds = {}, {}
    layers = dict(output_layers(lm))
    if "int8" not in layers:
        raise ValueError("the int8 output layer is a CPU kernel: run with --device cpu")
    for label, layer in layers.items():
        with decoding_with(lm, layer):
            start = time.perf_counter()
            texts[label] = [define(lm, [e], options.max_new_tokens)[0].text for e in embeddings]
            seconds[label] = time.perf_counter() - start
        log.info("%s: %d definitions in %.1f s", label, len(items), seconds[label])
    same = [a == b for a, b in zip(texts["fp32"], texts["int8"])]
    config = {"learner": learners[0], "max_new_tokens": options.max_new_tokens}
    differing = [
        {"word": i.word, "fp32": a, "int8": b}
        for i, a, b, s in zip(items, texts["fp32"], texts["int8"], same)
        if not s
    ]
    return [
        perf_row(label, SHOTS, len(items), {"seconds": seconds[label]}, config, case="define")
        for label in seconds
    ] + [
        perf_row(
            "int8/fp32",
            SHOTS,
            len(items),
            {"matching": sum(same) / len(same), "ratio": seconds["fp32"] / seconds["int8"]},
            {**config, "differing": differing},
            case="define, int8 head vs fp32 (speed-up)",
        )
    ]
