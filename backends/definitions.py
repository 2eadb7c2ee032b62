"""Definitions: CoLLEGe's probe, 'The word "<nonce>" is defined as', for many learners at once.

Every learner's word holds its own nonce id in one slot, so all definitions come from a
single batched greedy generation rather than one generation per learner.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backends.learners.base import NonceEmbedding
from backends.nonce_lm import NonceLM, NonceSlot

PROMPT = 'The word "{word}" is defined as'

_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


def first_sentence(text: str) -> str:
    """Up to the first sentence end or line break, trimmed."""
    text = text.strip()
    match = _SENTENCE_END.search(text)
    return (text[: match.start()] if match else text).strip()


@dataclass(frozen=True)
class Definition:
    learner: str
    word: str
    text: str  # first sentence of the continuation
    raw: str  # the whole continuation


def slot_for(lm: NonceLM, embeddings: list[NonceEmbedding]) -> tuple[NonceSlot, list]:
    """Stack the embeddings into one slot (word i -> id V + i) and bind each learner's hook."""
    slot = NonceSlot.stack(
        [(e.input_vector.to(lm.device), e.output_vector.to(lm.device)) for e in embeddings]
    )
    hooks = [
        e.make_hook(lm.vocab_size + i) if e.make_hook else None for i, e in enumerate(embeddings)
    ]
    return slot, hooks


def define(
    lm: NonceLM, embeddings: list[NonceEmbedding], max_new_tokens: int = 32, prompt: str = PROMPT
) -> list[Definition]:
    """One batched greedy generation for all embeddings; first sentence kept."""
    if not embeddings:
        return []
    slot, hooks = slot_for(lm, embeddings)
    prompts = [
        lm.encode(e.prompt_prefix + prompt.format(word=e.word), e.word, lm.vocab_size + i)
        for i, e in enumerate(embeddings)
    ]
    words = {lm.vocab_size + i: e.word for i, e in enumerate(embeddings)}

    def stop(ids: list[int]) -> bool:
        return bool(_SENTENCE_END.search(lm.decode(ids, words).strip()))

    outputs = lm.generate(
        prompts, slot, hooks, max_new_tokens=max_new_tokens, stop=stop, nonce_of_row=list(words)
    )
    results = []
    for e, ids in zip(embeddings, outputs):
        raw = lm.decode(ids, words)
        results.append(Definition(e.learner, e.word, first_sentence(raw), raw))
    return results
