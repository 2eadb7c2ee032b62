"""How often the college learner's reading is right, by how sure it looks: a calibration
table for the card's "read as" line, measured on words no benchmark uses.

The weights the card shows ("read as: anvil 100%") are the reading's mixture weights, which
the defining reader sharpens on purpose (`training/reader_weights.py`, `sharpen`: a weighted
mean of rows blurs towards no word when spread), so they are no probability: on DefGen dev
at k = 3, 177 of 200 readings put 99% or more on one word and 61% of those were the word. A
reader of the card needs the frequency instead (Guo et al. 2017 call the gap
miscalibration; a reliability table is the plain measure of it). So the shipped learner
reads held-out WordNet words, drawn as `training.reader_weights` draws its own but past the
words its weights were fitted on, at k = 1, 2 and 3 usages; per k and per band of the top
weight, the table counts the readings and those whose first word is the hidden one (its
WordNet headword).

    python -m training.reading_calibration --skip 100 --per-pos 60 --threads 2

writes `reading_calibration.json` beside the generator (the table, and every reading it
counted), which `CollegeLearner` reads to say how often readings as sure were right.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from backends.arguments import file_to_write, whole_number

log = logging.getLogger(__name__)

SHOTS = (1, 2, 3)


def same_word(read: str, word: str) -> bool:
    """Whether the reading's first word is the hidden one, up to its inflection."""
    from backends.lexicon import headword

    return read == word or headword(read) == headword(word)


def synonyms(read: str, word: str, pos: str) -> bool:
    """Whether the reading's first word shares a WordNet synset of `pos` with the hidden one
    (kept beside each reading; the table counts the word itself only)."""
    from backends import lexicon

    wordnet = lexicon.wordnet()
    kinds = ("a", "s") if pos == "a" else (pos,)
    own = {s for s in wordnet.synsets(lexicon.headword(word)) if s.pos() in kinds}
    return any(s in own for s in wordnet.synsets(lexicon.headword(read)))


def table(readings: list[dict]) -> dict[str, list[list[int]]]:
    """Per k (as a string): per band of the top weight (`SURE_EDGES`), [readings, right]."""
    from backends.learners.college import SURE_EDGES, sure_band

    counts = {str(k): [[0, 0] for _ in range(len(SURE_EDGES) + 1)] for k in SHOTS}
    for r in readings:
        cell = counts[str(r["k"])][sure_band(r["weight"])]
        cell[0] += 1
        cell[1] += int(r["right"])
    return counts


def read_words(learner, lm, words, shots=SHOTS) -> list[dict]:
    """The shipped learner's first reading of each word at each k, and whether it is right."""
    from backends.inputs import Example
    from training.reader_weights import STAND_IN

    readings, start = [], time.time()
    for i, (word, pos, texts) in enumerate(words):
        for k in shots:
            if len(texts) < k:
                continue
            found = learner.learn(lm, STAND_IN, [Example(t) for t in texts[:k]])
            read_as = found.info.get("read_as")
            if not read_as:  # no context to read: the card shows no reading either
                continue
            top, weight = read_as[0]
            right = same_word(top, word)
            readings.append({"word": word, "pos": pos, "k": k, "read": top} | {
                "weight": round(float(weight), 4), "right": right,
                "synonym": right or synonyms(top, word, pos)})  # fmt: skip
        if i % 20 == 0:
            log.info("%d/%d words, %.0f s", i, len(words), time.time() - start)
    return readings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m training.reading_calibration", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--per-pos", type=whole_number(1), default=60, help="words per part of speech"
    )
    parser.add_argument(
        "--skip",
        type=whole_number(0),
        default=100,
        help="words per part of speech to pass over first (those the reader's weights were "
        "fitted on: training.reader_weights --per-pos 100,100,100)",
    )
    parser.add_argument("--threads", type=whole_number(0), default=0, help="0 = torch's default")
    parser.add_argument(
        "--out", type=file_to_write, default=None, help="default: beside the generator"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    import torch

    from backends.learners import load_learner
    from backends.learners.college import READING_CALIBRATION, SURE_EDGES
    from backends.pipeline import load_lm
    from training.reader_weights import training_words

    if args.threads:
        torch.set_num_threads(args.threads)
    learner = load_learner("college")
    lm = load_lm("gemma-3-270m", "cpu")
    drawn = training_words(dict.fromkeys("nva", args.skip + args.per_pos))
    by_pos: dict[str, list] = {}
    for entry in drawn:  # in draw order per part of speech: the first `skip` were fitted on
        by_pos.setdefault(entry[1], []).append(entry)
    words = [w for entries in by_pos.values() for w in entries[args.skip :]]
    readings = read_words(learner, lm, words)
    record = {
        "what": "per k, per band of the reading's top weight: [readings, first word right]",
        "edges": list(SURE_EDGES),
        "by_k": table(readings),
        "words": len(words),
        "command": "python -m training.reading_calibration " + " ".join(sys.argv[1:]),
        "readings": readings,
    }
    out = args.out or learner.path / READING_CALIBRATION
    out.write_text(json.dumps(record, indent=1) + "\n")
    for k, cells in record["by_k"].items():
        shown = ", ".join(f"{n} read, {right} right" for n, right in cells)
        log.info("k=%s: %s", k, shown)
    log.info("wrote %s", out)


if __name__ == "__main__":
    main()
