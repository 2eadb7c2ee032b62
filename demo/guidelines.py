"""What the Arena tells an annotator: the judging guidelines and the keyboard shortcuts."""

from __future__ import annotations

import json

GUIDELINES = """### How to judge
1. **Read the sentences first.** They are all the learners saw; the word is made up, so
   judge by what the sentences let you infer, not by what you happen to know.
2. **Pick the definition that fits the sentences better**: would it make sense in each
   sentence in place of the word? Meaning first; grammar and style only to break a tie.
3. **Tie** when both fit about equally well; **Both bad** when neither fits (wrong meaning,
   empty, or it only repeats the word).
4. Ignore length: a longer definition is not a better one.
5. The learners' names show after your vote. One vote per battle; some battles are shown
   again to another person to measure how much judges agree."""

# key -> elem_id of the button it presses; shown on the page and bound by SHORTCUTS_HEAD
SHORTCUTS = {
    "a": "vote-a",
    "b": "vote-b",
    "t": "vote-tie",
    "x": "vote-both_bad",
    "n": "battle-pool",
}

SHORTCUTS_NOTE = (
    "**Keyboard:** `A` A is better · `B` B is better · `T` tie · `X` both bad · "
    "`N` next battle (on the Arena tab, outside text fields)"
)

# Passed to launch(head=...): one keydown listener that presses the visible, enabled button.
SHORTCUTS_HEAD = """<script>
(() => {
  const keys = KEYS;
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.composedPath()[0];
    const tag = (target && target.tagName) || "";
    if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || (target && target.isContentEditable)) {
      return;
    }
    const id = keys[event.key.toLowerCase()];
    const button = id && document.getElementById(id);
    if (!button || button.disabled || button.offsetParent === null) return;
    event.preventDefault();
    button.click();
  });
})();
</script>""".replace("KEYS", json.dumps(SHORTCUTS))
