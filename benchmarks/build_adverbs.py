"""DefGen for adverbs: WordNet adverbs built as DefGen's own items are
(`benchmarks.build_wordnet_sets`): `python -m benchmarks.build_adverbs`.

DefGen holds nouns, verbs and adjectives only, yet people make up adverbs ("She zimbly
opened the door so as not to wake the baby."), and the CoLLEGe learner names the class it
reads a word as in its definition probe. These two small files measure that probe on
adverbs: `defgen.adverbs.dev.jsonl` (30 items, choices are made on it) and
`defgen.adverbs.test.jsonl` (the next 30, run once a choice is made). Usages, eligibility
(which 134 adverbs meet), the first-sense gloss and the masking are DefGen's; the draw is a
seeded shuffle of the eligible adverbs. Deterministic.

The words are not in `split.json`: nothing trained here reads adverbs as targets (the
reader's weights are fitted on nouns, verbs and adjectives), though the generator's
corpus, built from every WordNet lemma, may hold their sentences; the generator only
proposes candidates for the LM to read.
"""

from __future__ import annotations

import logging
import random
from pathlib import Path

from backends.shared_data import SETS_DIR
from benchmarks.build_wordnet_sets import SEED, build_defgen, draw_words
from benchmarks.data import write_jsonl

N_DEV, N_TEST = 30, 30


def build(out_dir: Path = SETS_DIR, seed: int = SEED) -> dict[str, int]:
    """Write defgen.adverbs.dev.jsonl and defgen.adverbs.test.jsonl into `out_dir`."""
    dev, _, test = draw_words("r", random.Random(seed), (N_DEV, 0, N_TEST))  # no Cloze
    write_jsonl(out_dir / "defgen.adverbs.dev.jsonl", build_defgen(dev, "r"))
    write_jsonl(out_dir / "defgen.adverbs.test.jsonl", build_defgen(test, "r"))
    return {"dev": len(dev), "test": len(test)}


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    print(build())


if __name__ == "__main__":
    main()
