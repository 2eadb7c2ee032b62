"""Build the DefGen and Cloze development sets and the word-level split from WordNet 3.0
alone (tasks after CoLLEGe, Teehan, Lake & Ren 2024): `python -m benchmarks.build_wordnet_sets`.

How the sets are made (deterministic: fixed seed, WordNet's own order, sorted pools):

1. Usages. For every noun, verb and adjective synset, each WordNet example sentence is
   a usage of a synset lemma when one of its word tokens has that lemma as its Morphy
   base form for the synset's part of speech ("geese" → goose, "barked" → bark). The
   word is masked at every such token; a usage is dropped if, once masked, the word still
   shows (a derived or hyphenated form, e.g. "happily" for happy, "dog-eared" for dog).
2. Eligible words: lowercase alphabetic single-word lemmas of ≥ 3 letters, ≤ 10 senses
   in that part of speech, SemCor tag count ≥ 2 over those senses ("reasonably common"),
   ≥ 3 usages of which ≥ 1 is of the first (most frequent) sense, and a first-sense gloss
   that does not contain the word. A word is taken in its most frequent part of speech only.
3. DefGen (`defgen.dev.jsonl`): 80 nouns, 60 verbs, 60 adjectives drawn by the seeded
   shuffle. examples = up to 3 usages with "<nonce>" in place of the word, first-sense
   usages first (k-shot runs use the first k); definition = the first-sense gloss.
4. Cloze (`cloze.dev.jsonl`): 60 + 45 + 45 further words (none shared with DefGen) as
   targets. Each item blanks ("___") the longest usage of its target; the five candidates are
   the target and 4 other cloze targets of the same part of speech sharing no synset
   with it, each shown by 1-3 of its own other usages with "<nonce>"; shuffled.
5. Split (`split.json`): every DefGen and Cloze word. Together with the Chimera probes
   and Definitional Nonce gold words (`backends.shared_data.excluded_words()`) these are the
   words no training (e.g. a CoLLEGe generator) may use.
"""

from __future__ import annotations

import json
import logging
import random
from pathlib import Path

from backends import lexicon
from backends.shared_data import BLANK, SETS_DIR
from backends.usages import Pool, Usage, definition, fill, find_usages, is_eligible, ordered
from benchmarks.data import (
    PLACEHOLDER,
    ClozeCandidate,
    ClozeItem,
    DefGenItem,
    write_jsonl,
)

log = logging.getLogger(__name__)

SEED = 0  # one seed for every draw, so a rebuild gives the same files
# part of speech → (DefGen dev, Cloze dev, DefGen test)
POS_QUOTAS = {"n": (80, 60, 40), "v": (60, 45, 30), "a": (60, 45, 30)}
MAX_SHOTS = 3  # examples kept per DefGen item and per Cloze candidate
N_CANDIDATES = 5  # target + 4 distractors, as in GRE-style sentence completion


def build_defgen(pool: Pool, pos: str) -> list[DefGenItem]:
    """DefGen items for the words of `pool` (word → its sense-ordered usages)."""
    return [
        DefGenItem(word, [fill(u, PLACEHOLDER) for u in usages[:MAX_SHOTS]], definition(word, pos))
        for word, usages in pool.items()
    ]


def shares_synset(a: str, b: str, pos: str) -> bool:
    """Whether two words are synonyms in some sense (then both would fit the blank)."""
    synsets = lexicon.wordnet().synsets
    return bool(set(synsets(a, pos)) & set(synsets(b, pos)))


def blank_and_shown(usages: list[Usage]) -> tuple[Usage, list[Usage]]:
    """The usage to blank (the longest, so the gap has the most context; the earliest of
    equals) and the usages to show (the others, in sense order)."""
    blanked = max(usages, key=lambda u: len(u.template.split()))
    return blanked, [u for u in usages if u is not blanked]


def build_cloze(pool: Pool, pos: str, rng: random.Random) -> list[ClozeItem]:
    """One Cloze item per target of `pool`, distractors drawn from the same pool."""
    items = []
    for target, usages in pool.items():
        blanked, shown = blank_and_shown(usages)
        others = [w for w in pool if w != target and not shares_synset(w, target, pos)]
        words = [target, *rng.sample(others, N_CANDIDATES - 1)]
        rng.shuffle(words)
        candidates = []
        for word in words:
            own = shown if word == target else pool[word]
            examples = [
                fill(u, PLACEHOLDER) for u in own[:MAX_SHOTS] if u.template != blanked.template
            ]
            candidates.append(ClozeCandidate(word, examples))
        items.append(ClozeItem(fill(blanked, BLANK), candidates, words.index(target)))
    return items


def draw_words(
    pos: str, rng: random.Random, quotas: tuple[int, int, int]
) -> tuple[Pool, Pool, Pool]:
    """Eligible words of `pos`, seeded-shuffled, split into DefGen, Cloze and test pools.

    The test pool takes the words after the dev pools in the same shuffle, so adding it
    left the dev files byte for byte as they were."""
    usages = find_usages(pos)
    eligible = sorted(w for w, us in usages.items() if is_eligible(w, pos, us))
    log.info("%s: %d words with usages, %d eligible", pos, len(usages), len(eligible))
    rng.shuffle(eligible)
    n_defgen, n_cloze, n_test = quotas
    if len(eligible) < sum(quotas):
        raise RuntimeError(f"only {len(eligible)} eligible {pos} words, need {sum(quotas)}")
    ordered_usages = {w: ordered(w, pos, usages[w]) for w in eligible[: sum(quotas)]}
    words = list(ordered_usages)
    cuts = (0, n_defgen, n_defgen + n_cloze, n_defgen + n_cloze + n_test)
    return tuple(
        {w: ordered_usages[w] for w in words[start:end]} for start, end in zip(cuts, cuts[1:])
    )


def build(out_dir: Path = SETS_DIR, seed: int = SEED) -> dict[str, int]:
    """Write defgen.dev.jsonl, defgen.test.jsonl, cloze.dev.jsonl and split.json into
    `out_dir`; return sizes. The test file is held out: nothing is tuned on it."""
    rng = random.Random(seed)
    defgen: list[DefGenItem] = []
    cloze: list[ClozeItem] = []
    test: list[DefGenItem] = []
    for pos, quotas in POS_QUOTAS.items():
        defgen_pool, cloze_pool, test_pool = draw_words(pos, rng, quotas)
        defgen += build_defgen(defgen_pool, pos)
        cloze += build_cloze(cloze_pool, pos, rng)
        test += build_defgen(test_pool, pos)
    write_jsonl(out_dir / "defgen.dev.jsonl", defgen)
    write_jsonl(out_dir / "defgen.test.jsonl", test)
    write_jsonl(out_dir / "cloze.dev.jsonl", cloze)
    words = {item.word for item in defgen + test}
    words |= {c.word for item in cloze for c in item.candidates}
    write_split(out_dir / "split.json", words)
    return {"defgen": len(defgen), "test": len(test), "cloze": len(cloze), "eval_words": len(words)}


def write_split(path: Path, words: set[str]) -> None:
    """The word-level split: words that evaluation uses and training must not."""
    split = {
        "eval_words": sorted(words),
        "note": (
            "Words of the WordNet DefGen dev and test sets and the Cloze dev set "
            "(benchmarks/build_wordnet_sets.py). "
            "No training may use them; backends.shared_data.excluded_words() adds the Chimera "
            "probes and Definitional Nonce gold words of shared/data."
        ),
    }
    path.write_text(json.dumps(split, indent=1) + "\n", encoding="utf-8")


def main() -> None:
    """CLI entry point: build the sets and print their sizes."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    sizes = build()
    print(f"wrote {SETS_DIR}: {sizes}")


if __name__ == "__main__":
    main()
