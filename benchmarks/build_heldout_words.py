"""Choose the words of the held-out DefGen splits: `python -m benchmarks.build_heldout_words`.

Every earlier "held-out" file was scored while choices were made, so it is dev now. The
words here are drawn fresh, before any run, from WordNet words no other file of the
project uses: common ones (SemCor tag count of the first sense at least `MIN_FIRST_COUNT`),
each in its most frequent part of speech, with the first sense's gloss as the reference.
Two splits are drawn: `a` is scored once per shipped change; `b` waits, unread, for the day
`a` has informed a choice and so becomes dev (docs/benchmarks.md, "Held out").

The sentences that use each word are written by hand afterwards into
`benchmarks/sets/heldout/defgen.heldout-<split>.jsonl`; this script only fixes the words.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

from backends import lexicon
from backends.function_words import FUNCTION_WORDS
from backends.shared_data import SETS_DIR, chimera_source_words, excluded_words

SEED = 20261207
HELDOUT_DIR = SETS_DIR / "heldout"
WORDS_FILE = HELDOUT_DIR / "words.json"
# Per split: nouns, verbs, adjectives, adverbs (roughly DefGen dev's mix, adverbs added).
QUOTAS = {"n": 60, "v": 30, "a": 22, "r": 8}
SPLITS = ("a", "b")
MIN_FIRST_COUNT = 8  # SemCor tags of the first sense: a word a general reader knows
MIN_TOTAL_COUNT = 20  # SemCor tags over all its senses: not a word of one specialist text
MAX_SENSES = 8  # fewer senses: a reference gloss a reader can match


def words_in_use() -> set[str]:
    """Every word another file of the project names: benchmark sets, the arena's pool,
    the ready examples, the shared dev data and the Chimera source words."""
    used = set(excluded_words()) | chimera_source_words()
    for path in SETS_DIR.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            used.update(c["word"] for c in row.get("candidates", []))
            used.add(row.get("word", ""))
    assets = Path(__file__).resolve().parents[1] / "assets"
    for line in (assets / "arena_items.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        used.update({row.get("answer", ""), row["word"]})
    for example in json.loads((assets / "examples.json").read_text(encoding="utf-8")):
        used.add(example.get("real_word", ""))
    return {w.lower() for w in used if w}


def candidates(pos: str, used: set[str]) -> list[tuple[str, str, str]]:
    """(word, first synset's name, its gloss) for eligible words whose most frequent part
    of speech is `pos`, in sorted order."""
    wn = lexicon.wordnet()
    found = []
    for word in sorted({n.lower() for s in wn.all_synsets(pos) for n in s.lemma_names()}):
        if not (word.isalpha() and 4 <= len(word) <= 14) or word in used:
            continue
        shares = lexicon.class_shares(word)
        if not shares or max(shares, key=shares.get) != pos:
            continue
        synsets = wn.synsets(word, pos)
        if not synsets or len(synsets) > MAX_SENSES:
            continue
        first = synsets[0]
        # the word as a lowercase lemma of its first sense: not a name ("Laos", "Russian")
        lemma = next((lm for lm in first.lemmas() if lm.name() == word), None)
        gloss = first.definition().split(";")[0].strip()
        if lemma is None or lemma.count() < MIN_FIRST_COUNT or word in gloss.lower().split():
            continue
        total = sum(lm.count() for s in synsets for lm in s.lemmas() if lm.name() == word)
        if total < MIN_TOTAL_COUNT or word in FUNCTION_WORDS or "number" in gloss:
            continue
        found.append((word, first.name(), gloss))
    return found


def draw(seed: int = SEED) -> dict[str, list[dict]]:
    """Split -> its words, each {word, pos, synset, definition}; no word in two splits."""
    used = words_in_use()
    rng = random.Random(seed)
    splits: dict[str, list[dict]] = {name: [] for name in SPLITS}
    for pos, quota in QUOTAS.items():
        pool = candidates(pos, used)
        rng.shuffle(pool)
        for i, name in enumerate(SPLITS):
            for word, synset, gloss in pool[i * quota : (i + 1) * quota]:
                splits[name].append(
                    {"word": word, "pos": pos, "synset": synset, "definition": gloss}
                )
    return splits


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=WORDS_FILE)
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    splits = draw()
    args.out.write_text(json.dumps({"seed": SEED, "splits": splits}, indent=1) + "\n")
    print(f"wrote {args.out}: " + ", ".join(f"{k} {len(v)}" for k, v in splits.items()))


if __name__ == "__main__":
    main()
