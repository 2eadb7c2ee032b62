"""Turning text people typed (or a model echoed) into Markdown that shows it literally.

Every word, sentence and definition is shown to other people, so none of it may become
HTML or Markdown markup: `<script>` must read as the characters `<script>`.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backends.pipeline import KnownWord

# Markdown's punctuation with a meaning; a backslash makes each literal (CommonMark 2.4)
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def literal(text: str) -> str:
    """Escape Markdown, then HTML, and flatten newlines: safe inside a Markdown paragraph."""
    # Markdown first: HTML escaping then adds entities ("&lt;") whose characters stay plain
    marked = _MARKDOWN.sub(r"\\\1", " ".join(str(text).split()))
    return html.escape(marked, quote=False)


NEAREST_ON_CARD = 5  # neighbours a card names in words (the chart draws them all)


# How the real word's card names the benchmarks' two oracle rows (backends.definitions:
# ORACLE, ORACLE_IN_CONTEXT; not imported, so that this module loads without torch)
ORACLE_SAYS = {
    "oracle": "Alone (`oracle`)",
    "oracle_in_context": "After your sentences with it in them (`oracle_in_context`)",
}
# Said under an oracle's definition that names its own word, which the LM's bans let through
# (found by spelling, as the benchmarks' names_word finds it: backends/word_forms.py)
SAYS_ITSELF = (
    "\n\n*It seems to say the word itself or a form of it, which a definition that "
    "explains the word would not need.*"
)


def definition_cards(word: str, rows: list[tuple], known: KnownWord | None = None) -> str:
    """One card per learner: (learner, definition, seconds[, note[, nearest]]) -> Markdown.
    A note is what the learner says about its own result (the definition reader that read
    only the spelling, the cache's effect on the word's probability, the words college's LM
    read the new word as); nearest, its vector's nearest tokens in the input space as
    (token, cosine) pairs, named on the card too: the chart below shows them only to the
    eye and on hover. With a real word (`known`), each card gives its learner's cosine to
    it and its rank among WordNet's words (the rank is the fairer: the directions all words
    share lift a cosine to every word alike), and a last card what the LM says of that
    word, which it knows: the ceiling the learners aim at."""
    blocks = [f"## Definitions of “{literal(word)}”"]
    real = literal(known.word) if known else ""
    for learner, definition, seconds, *rest in rows:
        note = rest[0] if rest else ""
        nearest = rest[1] if len(rest) > 1 else ()
        text = literal(definition) if definition.strip() else "*(no definition generated)*"
        block = f"**{literal(learner)}** · learned in {seconds:.1f} s\n\n> {text}"
        if note:
            block += f"\n\n*{literal(note)}*"
        named = [(token.strip(), cosine) for token, cosine in nearest if token.strip()]
        if named:
            words = " · ".join(f"{literal(t)} {c:.2f}" for t, c in named[:NEAREST_ON_CARD])
            block += f"\n\nNearest tokens (input space, cosine): {words}"
        if known and learner in known.similarity:
            cosine, rank = known.similarity[learner], known.rank[learner]
            block += (
                f"\n\n“{real}” (its reference vector, input space): cosine {cosine:.2f} · "
                f"rank {rank:,} of {known.ranked_among:,} WordNet words by cosine "
                "(1 = none nearer)"
            )
        elif known:  # prompting: a random vector, what it learns is in its prompt
            block += f"\n\nNo cosine to “{real}”: its vector does not hold what it learned."
        blocks.append(block)
    if known:
        said = "\n\n".join(
            f"{ORACLE_SAYS.get(name, literal(name))}:\n\n> {literal(text) or '*(nothing)*'}"
            + (SAYS_ITSELF if known.says_itself.get(name) else "")
            for name, text in known.definitions.items()
        )
        blocks.append(
            f"**The real word: “{real}”** · not a learner: the LM defining a word it knows, "
            f"with the same probe and decoding, the ceiling the learners aim at\n\n{said}"
        )
    return "\n\n---\n\n".join(blocks)
