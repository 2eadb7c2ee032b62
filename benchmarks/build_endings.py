"""DefGen with endings: the DefGen items whose WordNet sentences use the word inflected,
with the ending kept after the nonce, as a person types it ("he confused the enemy with
feints and <nonce>s", "the bridge <nonce>ed", where DefGen writes "<nonce>" for the
whole word): `python -m benchmarks.build_endings`.

DefGen masks each inflected token whole (`backends.usages.template`), so no benchmark
showed the reader "wugs" or "quibbed", yet the app's users and 49 of the arena's 632
items write the word that way. Each example is traced back to the WordNet sentence it
was made from; a token whose base form is the word and whose spelling is the word plus a
regular ending (`backends.nonce_lm.word_pattern`: drowned, stopped, carries) becomes
"<nonce>" + ending; an irregular form (geese, ran) stays "<nonce>". An ending "d" (the
word ends in e: collapsed) is written "ed", as the stand-in "dax" would take it.

Only the items with at least one such ending are written, in DefGen's order:
`defgen.dev.endings.jsonl` from the dev file, `defgen.test.endings.jsonl` from the
held-out one (tuning never reads it). Deterministic: WordNet's own order.
"""

from __future__ import annotations

import logging
from pathlib import Path

from backends import lexicon
from backends.nonce_lm import word_pattern
from backends.shared_data import SETS_DIR
from backends.usages import mask_word
from benchmarks.data import PLACEHOLDER, DefGenItem, load_defgen, write_jsonl

log = logging.getLogger(__name__)


def masked(sentence: str, word: str, pos: str, with_ending: bool) -> str:
    """`sentence` with each token of `word` as "<nonce>", plus its regular ending when
    `with_ending` (without, DefGen's own masking of the sentence)."""

    def mark(token: str) -> str:
        stem = word_pattern(word).match(token) if with_ending else None
        ending = token[stem.end() :] if stem else ""
        return PLACEHOLDER + ("ed" if ending == "d" else ending)

    return mask_word(sentence, word, pos, mark)


def sources(word: str) -> dict[str, tuple[str, str]]:
    """DefGen's masked example -> (the WordNet sentence it came from, its part of speech)."""
    found: dict[str, tuple[str, str]] = {}
    for synset in lexicon.wordnet().synsets(word):
        pos = "a" if synset.pos() in "as" else synset.pos()
        for sentence in synset.examples():
            found.setdefault(masked(sentence, word, pos, with_ending=False), (sentence, pos))
    return found


def with_endings(item: DefGenItem) -> DefGenItem:
    """The item with each example's endings kept (an example not traced back is kept as is)."""
    traced = sources(item.word)
    examples = []
    for example in item.examples:
        sentence, pos = traced.get(example, (None, None))
        examples.append(example if sentence is None else masked(sentence, item.word, pos, True))
    return DefGenItem(item.word, examples, item.definition)


def build(sets_dir: Path = SETS_DIR) -> dict[str, int]:
    """Write the endings files beside their DefGen files; return how many items each has."""
    sizes = {}
    for split in ("dev", "test"):
        items = load_defgen(sets_dir / f"defgen.{split}.jsonl")
        kept = [new for item in items if (new := with_endings(item)) != item]
        out = sets_dir / f"defgen.{split}.endings.jsonl"
        write_jsonl(out, kept)
        sizes[out.name] = len(kept)
        log.info("%s: %d of %d items use the word with an ending", out.name, len(kept), len(items))
    return sizes


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    print(build())
