"""What the Arena tells an annotator: the judging guidelines and the keyboard shortcuts."""

from __future__ import annotations

import json

GUIDELINES = """## How to judge
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
    "`N` next battle (on the Arena tab, outside text fields; the box below turns them off)"
)
# elem_id of the checkbox that turns the single-key shortcuts on and off (WCAG 2.1.4: a
# screen reader's browse mode and speech input use single letters too)
SHORTCUTS_SWITCH = "shortcuts-on"
# elem_id of the Markdown that says, after a vote, which learner was which
REVEAL = "reveal"

# Passed to launch(head=...): one keydown listener that presses the visible, enabled button
# while the switch is on; and, as Gradio's elements appear, the buttons' aria-keyshortcuts and
# the reveal as a polite live region, so a screen reader says the vote's outcome.
SHORTCUTS_HEAD = """<script>
(() => {
  const keys = KEYS;
  const enabled = () => document.querySelector("#SWITCH input")?.checked !== false;
  document.addEventListener("keydown", (event) => {
    if (!enabled() || event.ctrlKey || event.metaKey || event.altKey || event.repeat) return;
    const target = event.composedPath()[0];
    const tag = (target && target.tagName) || "";
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(tag) && !target.readOnly;
    if (typing || (target && target.isContentEditable)) {
      return;
    }
    const id = keys[(event.key || "").toLowerCase()]; // autofill sends keydown without a key
    const button = id && document.getElementById(id);
    if (!button || button.disabled || button.offsetParent === null) return;
    event.preventDefault();
    button.click();
  });
  const mark = () => {
    for (const [key, id] of Object.entries(keys)) {
      const button = document.getElementById(id);
      if (button && !button.hasAttribute("aria-keyshortcuts")) {
        button.setAttribute("aria-keyshortcuts", key.toUpperCase());
      }
    }
    // the battle's texts: Gradio shows an output textbox disabled, which Tab skips and a
    // screen reader calls "unavailable"; read-only keeps them uneditable and readable
    for (const id of READABLE) {
      const box = document.querySelector(`#${id} textarea`);
      if (box && box.disabled) {
        box.disabled = false;
        box.readOnly = true;
      }
    }
    const reveal = document.getElementById("REVEAL");
    if (reveal && !reveal.hasAttribute("aria-live")) {
      reveal.setAttribute("role", "status");
      reveal.setAttribute("aria-live", "polite");
    }
  };
  new MutationObserver(mark).observe(document.documentElement, { childList: true, subtree: true });
})();
</script>"""
# elem_ids of the output textboxes a person reads during a battle
READABLE = ("battle-word", "battle-sentences", "definition-a", "definition-b")
SHORTCUTS_HEAD = (
    SHORTCUTS_HEAD.replace("KEYS", json.dumps(SHORTCUTS))
    .replace("READABLE", json.dumps(READABLE))
    .replace("SWITCH", SHORTCUTS_SWITCH)
    .replace("REVEAL", REVEAL)
)
# After a vote the vote buttons are disabled and the focus would fall to the page's body:
# it goes to the next battle's button instead (the reveal is read out by its live region).
FOCUS_NEXT_BATTLE = f"() => {{ document.getElementById({json.dumps(SHORTCUTS['n'])})?.focus(); }}"
