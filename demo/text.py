"""Turning text people typed (or a model echoed) into Markdown that shows it literally.

Every word, sentence and definition is shown to other people, so none of it may become
HTML or Markdown markup: `<script>` must read as the characters `<script>`.
"""

from __future__ import annotations

import html
import re

# Markdown's punctuation with a meaning; a backslash makes each literal (CommonMark 2.4)
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")


def literal(text: str) -> str:
    """Escape Markdown, then HTML, and flatten newlines: safe inside a Markdown paragraph."""
    # Markdown first: HTML escaping then adds entities ("&lt;") whose characters stay plain
    marked = _MARKDOWN.sub(r"\\\1", " ".join(str(text).split()))
    return html.escape(marked, quote=False)


def definition_cards(word: str, rows: list[tuple]) -> str:
    """One card per learner: (learner, definition, seconds[, note]) -> Markdown. A note is
    what the learner says about its own result (the definition reader that read only the
    spelling, the cache's effect on the word's probability, the words college's LM read
    the new word as)."""
    blocks = [f"#### Definitions of “{literal(word)}”"]
    for learner, definition, seconds, *note in rows:
        text = literal(definition) if definition.strip() else "*(no definition generated)*"
        block = f"**{literal(learner)}** · learned in {seconds:.1f} s\n\n> {text}"
        if note and note[0]:
            block += f"\n\n*{literal(note[0])}*"
        blocks.append(block)
    return "\n\n---\n\n".join(blocks)
