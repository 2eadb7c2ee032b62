"""Build the arena's prepared pool: real words hidden behind made-up ones in real usage.

Each item takes a word's usage sentences from the CoLLEGe training corpus builder
(`training.corpus`: WordNet 3.0 usage examples, and GCIDE quotations when Debian's
dict-gcide is installed; sentences that use the word rather than define it), never an
evaluation word or an inflection of one (`backends.shared_data.excluded_words`), shows 1 to 3 of
them with the word (and its plain inflections) replaced by a pronounceable made-up word
that is no English word form, and keeps the real word as the item's `answer`, shown after
the vote. Each item also carries the WordNet sense its sentences use: its part of speech
(`pos`, for the boards by part of speech) and its gloss (`reference`, which the automatic
judge reads, as the tournament reads DefGen's). The sense is the one a WordNet usage example
among the sentences illustrates, else the word's commonest (SemCor counts); a word WordNet
lacks (some GCIDE headwords) gives no item, nor does a name: a word the sentences write
with a capital inside a sentence ("the capital of Ghana"), or whose sense WordNet spells
with one or lists as an instance (Odin, Ranunculaceae). A made-up word is a new word, not
a place, a person or a taxon, and a name's gloss often missed the sentences' sense (the
plant "sulla" for the Roman general). The hand-written items already in the file (those
without an answer) stay first.

GCIDE comes from Debian's `dict-gcide` (`make pool` installs it and runs this); without it
the pool is built from WordNet alone and the run says so. The app never reads GCIDE: it
reads the pool file this writes.

    python -m tools.build_arena_pool --count 600 --out assets/arena_items.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from backends.arguments import file_to_write, whole_number

ONSETS = "b bl br d dr f fl fr g gl gr k kl kr l m n p pl pr s sk sl sn sp st t tr v w z".split()
VOWELS = "a e i o u ai ea oo ou".split()
CODAS = ["", "", "b", "d", "g", "k", "l", "m", "n", "p", "r", "t", "x", "nd", "nt", "sk", "ld"]


def made_up_words(rng: random.Random, is_word: Callable[[str], bool]) -> Iterator[str]:
    """Two- or three-syllable nonce words, 5-10 letters, none an English word form."""
    seen: set[str] = set()
    while True:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(syllables))
        word += rng.choice(CODAS)
        # not ending in "ed": it reads as a past tense, and "driprailed" + "d" as two
        if 5 <= len(word) <= 10 and word not in seen and not is_word(word) and word[-2:] != "ed":
            seen.add(word)
            yield word


def hide(word: str, nonce: str, sentence: str) -> str:
    """The sentence with `word` (and its regular inflections) spelled as `nonce`, the
    ending respelled for it (stipulated -> frulisked, not fruliskd), and an article just
    before it made to fit it ("an armchair" -> "a wospit", not "an wospit", a misprint
    that would also tell the voter the word starts with a vowel)."""
    from backends.nonce_lm import inflect, inflected_pattern, word_pattern

    def swap(match) -> str:
        whole = match.group(0)
        stem = word_pattern(word).match(whole).group(0)
        hidden = inflect(nonce, whole[len(stem) :])
        return hidden.capitalize() if whole[0].isupper() else hidden

    text = inflected_pattern(word).sub(swap, sentence)
    article = "an" if nonce[0].lower() in "aeiou" else "a"

    def fit(match) -> str:
        said = match.group(1)
        return (article.capitalize() if said[0].isupper() else article) + match.group(2)

    return re.sub(rf"\b(an?)(\s+)(?={re.escape(nonce)})", fit, text, flags=re.IGNORECASE)


def gives_away(word: str, examples: list[str]) -> bool:
    """Whether the hidden word's stem still shows (an irregular or derived form of it)."""
    stem = word[: max(4, len(word) - 2)].lower()
    return any(stem in example.lower() for example in examples)


def names_something(word: str, sentences: list[str]) -> bool:
    """Whether a sentence writes the word with a capital where no sentence starts: a name
    ("defeated by Sulla", "the Pentecostal church", a gloss's "- T.G.Winner"), not a word
    to learn. A sentence starts at the beginning, after an opening quote or bracket, or
    after a stop and a space."""
    from backends.nonce_lm import inflected_pattern

    for sentence in sentences:
        for match in inflected_pattern(word).finditer(sentence):
            if not match.group(0)[0].isupper():
                continue
            before = sentence[: match.start()]
            opened = before.rstrip() == "" or before[-1:] in "\"'(“‘["
            stopped = before[-1:].isspace() and before.rstrip()[-1:] in ".!?:;-–—"
            if not (opened or stopped):
                return True
    return False


def shows_a_slur(sentence: str) -> bool:
    """Whether the sentence holds a word of the slur guard's list: voters read every
    sentence, and an old quotation can use one in another sense ("the warmth distends
    the c...s", of cracks)."""
    from backends.blocked_words import SLURS

    return any(token in SLURS for token in re.findall(r"[a-z]+", sentence.lower()))


# WordNet's part-of-speech letters; satellite adjectives ("s") are adjectives
POS_NAMES = {"n": "noun", "v": "verb", "a": "adjective", "s": "adjective", "r": "adverb"}
Sense = Callable[[str, list[str]], "tuple[str, str] | None"]  # (word, sentences) -> (pos, gloss)


def pool_items(
    corpus: dict[str, list[str]], count: int, seed: int, is_word, sense: Sense
) -> list[dict]:
    """`count` items {"word", "examples", "answer", "pos", "reference"} from corpus words,
    seeded; `sense` names the part of speech and gloss of the sense the sentences use."""
    from backends.inputs import InputError, check_examples
    from training.corpus import gcide_letters

    rng = random.Random(seed)
    words = sorted(corpus)
    rng.shuffle(words)
    nonces = made_up_words(rng, is_word)
    items = []
    for word in words:
        if len(items) == count:
            break
        shown = rng.choice((1, 2, 3))  # as many items of each size
        if len(corpus[word]) < shown:
            continue
        found = sense(word, corpus[word][:shown])
        if found is None or names_something(word, corpus[word][:shown]):
            continue
        nonce = next(nonces)
        examples = [hide(word, nonce, gcide_letters(s)) for s in corpus[word][:shown]]
        try:
            check_examples(nonce, examples)
        except InputError:
            continue
        if gives_away(word, examples) or any(shows_a_slur(example) for example in examples):
            continue
        pos, reference = found
        items.append(dict(word=nonce, examples=examples, answer=word, pos=pos, reference=reference))
    if len(items) < count:
        raise RuntimeError(f"only {len(items)} usable words for {count} items")
    return items


def english_word_form() -> Callable[[str], bool]:
    """word -> whether WordNet knows it as a lemma or an inflected form of one."""
    from backends.lexicon import wordnet

    reader = wordnet()
    return lambda word: bool(reader.synsets(word)) or reader.morphy(word) is not None


def wordnet_sense() -> Sense:
    """(word, sentences) -> (part of speech, gloss) of the sense the sentences use, or None
    for a word WordNet lacks or a name: the synset a WordNet usage example among them
    illustrates, else the word's commonest sense by SemCor counts (ties keep WordNet's
    order); None where that sense is a name (a capitalised lemma, or an instance)."""
    from backends.lexicon import wordnet

    reader = wordnet()
    illustrated = {}  # (lemma, usage example) -> synset; examples as the corpus spaces them
    for synset in reader.all_synsets():
        for text in synset.examples():
            for name in synset.lemma_names():
                illustrated.setdefault((name.lower(), " ".join(text.split())), synset)

    def count(synset, word: str) -> int:
        return sum(lemma.count() for lemma in synset.lemmas() if lemma.name().lower() == word)

    def sense(word: str, sentences: list[str]) -> tuple[str, str] | None:
        shown = [illustrated[(word, s)] for s in sentences if (word, s) in illustrated]
        synsets = shown or reader.synsets(word)
        if not synsets:
            return None
        chosen = shown[0] if shown else max(synsets, key=lambda s: count(s, word))
        spelt = [lemma.name() for lemma in chosen.lemmas() if lemma.name().lower() == word]
        if chosen.instance_hypernyms() or any(name[0].isupper() for name in spelt):
            return None  # a name (Odin, Ghana, Ranunculaceae): no item
        return POS_NAMES[chosen.pos()], chosen.definition()

    return sense


def gcide_share(items: list[dict], corpus: dict[str, list[str]]) -> tuple[int, int]:
    """(sentences that come from GCIDE, sentences) in the items: what the run reports."""
    from training.corpus import gcide_sentences

    quoted = {" ".join(text.split()) for _, text in gcide_sentences()}
    # an item shows the first sentences of its word's corpus entry, made-up word swapped in
    shown = [s for item in items for s in corpus[item["answer"]][: len(item["examples"])]]
    return sum(s in quoted for s in shown), len(shown)


ITEM_KEYS = frozenset({"word", "examples", "answer", "pos", "reference"})


def arena_rows(path: Path) -> list[dict]:
    """The arena items a pool file holds, one JSON object per line, or a ValueError naming
    the first line that is not one (a vote export, a CSV): only {"word": text, "examples":
    [text, ...]} with, for a prepared item, "answer", "pos" and "reference"."""
    rows = []
    for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if not (
            isinstance(row, dict)
            and set(row) <= ITEM_KEYS
            and isinstance(row.get("word"), str)
            and isinstance(row.get("examples"), list)
            and row["examples"]
            and all(isinstance(example, str) for example in row["examples"])
        ):
            raise ValueError(f"{path}:{number}: not an arena item {{'word', 'examples', ...}}")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.build_arena_pool", description=__doc__)
    parser.add_argument("--count", type=whole_number(1), default=600, help="prepared items (>= 1)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=file_to_write, default=Path("assets/arena_items.jsonl"))
    args = parser.parse_args(argv)
    kept = []
    if args.out.exists():  # checked before the long build, and left as it is when refused
        try:
            rows = arena_rows(args.out)
        except ValueError as err:  # a vote export, a CSV: not a pool to add to
            parser.error(f"argument --out: {str(err)[:200]}; give a pool file or a new path")
        kept = [row for row in rows if not row.get("answer")]

    from backends.shared_data import excluded_words
    from training.corpus import GCIDE_PATH, CorpusConfig, build_corpus

    # usage examples and other words' glosses that use the word: enough words with 3 sentences
    corpus = build_corpus(excluded_words(), CorpusConfig(use_glosses=True, max_per_word=3))
    items = pool_items(corpus, args.count, args.seed, english_word_form(), wordnet_sense())
    lines = [json.dumps(row, ensure_ascii=False) for row in kept + items]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(kept)} hand-written + {len(items)} prepared items written to {args.out}")
    if GCIDE_PATH.exists():
        from_gcide, sentences = gcide_share(items, corpus)
        print(f"{from_gcide} of their {sentences} sentences are GCIDE quotations or phrases")
    else:
        print(f"no GCIDE sentences: {GCIDE_PATH} is missing (apt-get install dict-gcide)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
