"""Definitions: CoLLEGe's probe, 'The word "<nonce>" is defined as', for many learners at once.

Every learner's word holds its own nonce id in one slot, so all definitions come from a
single batched generation rather than one generation per learner, decoded as
`DEFAULT_DECODING` says (backends/decoding.py). A learner that read the word as several
known words (`NonceEmbedding.readings`) gets one row per reading, and those rows write one
definition together (`NonceLM.generate`'s `mixture`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from backends.decoding import QUOTATION_MARKS, Decoding
from backends.learners.base import NonceEmbedding
from backends.nonce_lm import SUFFIXES, NonceLM, NonceSlot

PROMPT = 'The word "{word}" is defined as'
ORACLE = "oracle"  # the row of the real word's own definition, in benchmarks and plots
ORACLE_IN_CONTEXT = "oracle_in_context"  # the same after the examples, the word in them
ORACLES = (ORACLE, ORACLE_IN_CONTEXT)
# Nearest known words looked at for `Decoding.copy_cosine`: a vector can be close to a
# few rows at once (a 50/50 blend of two words is ~0.77 from each), not to many.
COPY_SEARCH = 4

# The decoding every definition uses unless told otherwise: the app, the CLI and the
# benchmarks alike (chosen on the DefGen tuning half; see backends/decoding.py).
DEFAULT_DECODING = Decoding()

# A sentence ends at '.', '!' or '?' (with any closing quotes or brackets) before a space,
# or at a line break: "a promise." It -> "a promise."; '"a thought." It' keeps its quote.
# Also where a word's end stop runs straight into a capitalised word ('expression.The
# word'; none of the 26 610 recorded definitions does so; initials, 'U.S.Navy', go on).
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)]*(?=\s)|\n|(?<=[a-z]{2}[.!?])(?=[A-Z][a-z])")
# Abbreviations a sentence rarely ends on (`Decoding.brackets_go_on`): 'water through a
# porous structure (e.g.' was shown as a whole definition. Not "etc." or "U.S.", which do.
_ABBREVIATION = re.compile(r"(?:^|[\s(\[])(?:e\.g|i\.e|cf|viz|vs)\.$", re.IGNORECASE)


# Lines with no letter or digit before the definition proper ('defined as:' then a line
# break): skipped, not taken for the whole definition.
_BARE_LINES = re.compile(r"^(?:[^\w\n]*\n)+")
# A comma, colon or semicolon the continuation of '... is defined as' began with.
_LEAD_MARKS = re.compile(r"^[,;:]+\s*")


_QUOTATION_MARK = re.compile(f"([{QUOTATION_MARKS}])")
# Spaces, then a mark that ends a sentence or a clause (`tidy_stops`).
_SPACED_STOP = re.compile(r"\s+[.,;:!?]")


def tidy_quotes(text: str) -> str:
    """`text` without the spaces just inside its quotation marks: '" the state ".' ->
    '"the state".' The marks alternate, the first opening (as `decoding.quotations` reads
    them), and a mark is tidied only where what is around it agrees: an opening one after a
    space, a bracket or nothing, a closing one before a space, a mark or nothing. Where the
    marks are scattered ('or "race", that', '"the taking of life or property " the act')
    nothing is moved that would join a mark to the wrong word."""
    parts = _QUOTATION_MARK.split(text)  # text, mark, text, mark, ..., text
    for k in range(1, len(parts), 2):
        before, after = parts[k - 1], parts[k + 1]
        if k % 4 == 1:  # an opening mark: the text after it starts at once
            if not before or before[-1] in " ([{":
                parts[k + 1] = after.lstrip(" ")
        elif not after or after[0] in " .,;:!?)]}":  # a closing one: the text before it ends
            parts[k - 1] = before.rstrip(" ")
    return "".join(parts)


def tidy_stops(text: str) -> str:
    """`text` without a space between a closing quotation mark and a full stop, comma,
    colon, semicolon, '!' or '?' right after it: '"a part of the human being" .' -> '...
    being".' Marks alternate as in `tidy_quotes`, so an opening mark keeps its space."""
    parts = _QUOTATION_MARK.split(text)  # text, mark, text, mark, ..., text
    for k in range(3, len(parts), 4):  # the closing marks
        if _SPACED_STOP.match(parts[k + 1]):
            parts[k + 1] = parts[k + 1].lstrip()
    return "".join(parts)


def _from_first_word(text: str, decoding: Decoding = DEFAULT_DECODING) -> str:
    text = _BARE_LINES.sub("", text.strip()).strip()
    return _LEAD_MARKS.sub("", text) if decoding.drop_lead_marks else text


def _sentence_end(text: str, decoding: Decoding) -> re.Match | None:
    """The first sentence end (or line break) of `text`: a full stop inside a bracket still
    open ('(1999, p.', '(U.N.') or after 'e.g.' goes on where `decoding.brackets_go_on`."""
    for match in _SENTENCE_END.finditer(text):
        if match.group() == "\n" or not decoding.brackets_go_on:
            return match
        before = text[: match.end()]
        if before.count("(") <= before.count(")") and not _ABBREVIATION.search(
            text[: match.start()].rstrip("\"'”’)")
        ):
            return match
    return None


def ends_a_sentence(text: str, decoding: Decoding = DEFAULT_DECODING) -> bool:
    """Whether a continuation has reached its first sentence's end (or a line break):
    generation stops there, and a definition that never did was cut by its budget."""
    return _sentence_end(_from_first_word(text, decoding), decoding) is not None


def ends_at_its_end(text: str, decoding: Decoding = DEFAULT_DECODING) -> bool:
    """Whether `text` ends on a sentence end (a full stop, '!' or '?' and any closing marks)
    that nothing followed: a generation whose budget ran out there wrote a whole sentence
    (`ends_a_sentence` waits for the space after the mark, which the budget left unwritten)."""
    return _sentence_end(_from_first_word(text, decoding) + " ", decoding) is not None


def first_sentence(text: str, decoding: Decoding = DEFAULT_DECODING) -> str:
    """Up to the first sentence end or line break, trimmed, from the first line that has a
    word. DefGen scores only a generated definition's first sentence (CoLLEGe, Teehan et
    al. 2024). `decoding` says which of the later rules of where a sentence ends apply (a
    stored vote's replays without them)."""
    text = _from_first_word(text, decoding)
    match = _sentence_end(text, decoding)
    if match is not None:
        text = text[: match.start() if match.group() == "\n" else match.end()].strip()
    text = tidy_quotes(text) if decoding.tidy_quotes else text
    return tidy_stops(text) if decoding.tidy_stops else text


# Shown after a definition that its token budget cut before any sentence end: a reader
# should see that it was cut, not take 'a person in a state of "sleep" or "in' for whole.
CUT_MARK = " …"
# Which cut definitions get the mark (`Definition.marked`): 1, those the budget cut; 2, also
# those a line break cut inside a bracket they opened ('a 12-bit wide (three to four', an
# arena battle's). Battles store the level they were shown at, and replay at it.
MARK_LEVEL = 2


@dataclass(frozen=True)
class Definition:
    learner: str
    word: str
    text: str  # first sentence of the continuation (what the benchmarks score)
    raw: str  # the whole continuation
    # It reached a sentence end, a line break or the end of text; False: the budget cut it.
    finished: bool = True

    @property
    def shown(self) -> str:
        """The text as a person reads it: `CUT_MARK` after one that was cut."""
        return self.marked()

    def marked(self, level: int | None = None) -> str:
        """The text with `CUT_MARK` after a cut one, at a `MARK_LEVEL` (None: the current
        one; true, as older votes stored it: 1; 0: the text as scored)."""
        level = MARK_LEVEL if level is None else int(level)
        budget_cut = level >= 1 and not self.finished
        bracket_open = level >= 2 and self.text.count("(") > self.text.count(")")
        return self.text + CUT_MARK if self.text and (budget_cut or bracket_open) else self.text


def slot_for(lm: NonceLM, embeddings: list[NonceEmbedding]) -> tuple[NonceSlot, list]:
    """Stack the embeddings into one slot (word i -> id V + i) and bind each learner's hook."""
    slot = NonceSlot.stack(
        [(e.input_vector.to(lm.device), e.output_vector.to(lm.device)) for e in embeddings]
    )
    hooks = [
        e.make_hook(lm.vocab_size + i) if e.make_hook else None for i, e in enumerate(embeddings)
    ]
    return slot, hooks


def rows_for(embeddings: list[NonceEmbedding]) -> tuple[list[NonceEmbedding], list]:
    """One generation row per embedding, or per reading of one that has several (each at its
    own vectors); with `[(embedding index, weight)]` per row where any has readings, for
    `NonceLM.generate`'s mixture (else None)."""
    if not any(e.readings for e in embeddings):
        return embeddings, None
    rows, mixture = [], []
    for i, e in enumerate(embeddings):
        for weight, vin, vout in e.readings or [(1.0, e.input_vector, e.output_vector)]:
            rows.append(replace(e, input_vector=vin, output_vector=vout, readings=[]))
            mixture.append((i, weight))
    return rows, mixture


def define(
    lm: NonceLM,
    embeddings: list[NonceEmbedding],
    max_new_tokens: int = 32,
    prompt: str = PROMPT,
    decoding: Decoding = DEFAULT_DECODING,
) -> list[Definition]:
    """One batched generation for all embeddings; first sentence kept."""
    if not embeddings:
        return []
    rows, mixture = rows_for(embeddings)
    slot, hooks = slot_for(lm, rows)
    # a learner may name the word's class in the probe (college: 'The verb "dax" ...')
    texts = [e.prompt_prefix + (e.probe or prompt).format(word=e.word) for e in rows]
    prompts = [lm.encode(t, e.word, lm.vocab_size + i) for i, (t, e) in enumerate(zip(texts, rows))]
    words = {lm.vocab_size + i: e.word for i, e in enumerate(rows)}
    banned = [[i, *copied_tokens(lm, e, decoding)] for i, e in zip(words, rows)]
    outputs = _generate(lm, prompts, words, slot, hooks, banned, max_new_tokens, decoding, mixture)
    if mixture:  # a text's rows wrote the same tokens: its first row's are the definition
        text_of = [text for text, _ in mixture]
        outputs = [outputs[text_of.index(i)] for i in range(len(embeddings))]
    return [
        _definition(lm, e.learner, e.word, ids, words, decoding)
        for e, ids in zip(embeddings, outputs)
    ]


def define_known(
    lm: NonceLM,
    words: list[str],
    max_new_tokens: int = 32,
    prompt: str = PROMPT,
    decoding: Decoding = DEFAULT_DECODING,
    learner: str = ORACLE,
    prefix: str = "",
) -> list[Definition]:
    """The ceiling for any learner: the same probe and decoding with the real word's own
    tokens in place of a new one (the LM defining a word it already knows). `prefix` goes
    before the probe unformatted, as a learner's `prompt_prefix` does in `define`."""
    if not words:
        return []
    prompts = [lm.encode(prefix + prompt.format(word=w)) for w in words]
    banned = [own_tokens(lm, w, decoding) for w in words]
    outputs = _generate(lm, prompts, {}, None, None, banned, max_new_tokens, decoding)
    return [_definition(lm, learner, w, ids, {}, decoding) for w, ids in zip(words, outputs)]


def own_tokens(lm: NonceLM, word: str, decoding: Decoding = DEFAULT_DECODING) -> list[int]:
    """The ids that spell `word` by themselves ('mind' and ' mind' where each is one token,
    and the one-token spellings with a quote or a capital: '"steep', ' Steep'), banned from
    its definition as the new word's id is banned from a learner's; with
    `decoding.copy_cosine`, every spelling of its inflected forms as well."""
    # the oracle wrote 'a "slope" ... that is "steep"' when only 'steep' / ' steep' were banned
    own = set(lm.token_forms().by_key.get(word.lower(), ()))
    return sorted(own | set(word_forms(lm, word))) if decoding.copy_cosine else sorted(own)


def word_forms(lm: NonceLM, word: str) -> list[int]:
    """Tokens spelling `word` or an inflected form of it on their own, any case or quote
    attached (' cook', 'Cook', '"cooks', ' cooking'): the forms a definition may not use."""
    by_key = lm.token_forms().by_key
    base = word.lower()
    return sorted({t for end in ("", *SUFFIXES) for t in by_key.get(base + end, ())})


def copied_tokens(lm: NonceLM, embedding: NonceEmbedding, decoding: Decoding) -> list[int]:
    """With `decoding.copy_cosine` on, the forms of the new word as typed and of every known
    word whose input row is that close to its input vector: the LM reads the new word as
    that word, so naming it is naming the defined word ([] when the rule is off)."""
    if not (decoding.ban_word and decoding.copy_cosine):
        return []
    from backends.neighbours import vocabulary_index

    found = vocabulary_index(lm, "input").search(embedding.input_vector, COPY_SEARCH)[0]
    close = {n.token.lower() for n in found if n.similarity >= decoding.copy_cosine}
    return sorted({t for word in {embedding.word, *close} for t in word_forms(lm, word)})


def _generate(lm, prompts, words, slot, hooks, banned, max_new_tokens, decoding, mixture=None):
    def stop(ids: list[int]) -> bool:
        return ends_a_sentence(lm.decode(ids, words), decoding)

    return lm.generate(
        prompts,
        slot,
        hooks,
        max_new_tokens=max_new_tokens,
        stop=stop,
        nonce_of_row=list(words) or None,
        decoding=decoding,
        banned=banned,
        mixture=mixture,
    )


def _definition(
    lm: NonceLM,
    learner: str,
    word: str,
    ids: list[int],
    words: dict,
    decoding: Decoding = DEFAULT_DECODING,
) -> Definition:
    raw = lm.decode(ids, words)
    ended = bool(ids) and ids[-1] == lm.tokenizer.eos_token_id
    # `ends_at_its_end` also finds any sentence end before the text's own
    ends = ends_at_its_end if decoding.ends_at_budget else ends_a_sentence
    finished = ended or ends(raw, decoding)
    return Definition(learner, word, first_sentence(raw, decoding), raw, finished)
