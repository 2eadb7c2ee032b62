"""The frozen LM as a reader of the examples: what it expects in the new word's place.

CoLLEGe (Teehan, Lake & Ren 2024) reads examples with a masked-LM encoder; its paper
reader, RoBERTa-large, is bigger than our whole 270M LM, while our packaged encoder
(MiniLM, 22M) is far smaller. The LM itself already reads the examples well: at the
position just before the new word, its next-token distribution says which known words
fit there ("his ___ wandered": mind, thoughts, eyes, ...). Pooled over the examples by a
product of experts (summed log-probabilities, Hinton 2002), it keeps the words every
example allows. Restricted to whole-word tokens, tempered and cut to its top M, its
expected embedding row is a vector in the LM's own space: a soft guess of the word,
which the CoLLEGe learner blends with its generator's vector.

The LM is causal, so the slot's distribution sees only the left context. With
`right_tokens`, the best candidates are also put in the word's place and scored on the
tokens that follow it (log p(right context | left context, candidate)), so "she opened
the ___ and took out a cold bottle of milk" can prefer fridge to oven. An example that
starts with the word gives no candidates of its own; if none has left context the
reader says nothing, and the generator alone is used.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from backends.inputs import Example
from backends.nonce_lm import NonceLM, word_pattern


@dataclass(frozen=True)
class ReaderConfig:
    # Temperature of the pooled distribution (< 1 sharpens it towards the top guess).
    temperature: float = 1.0
    # Candidate words kept (the rest of the 262k-token tail is noise that only blurs).
    top_m: int = 50
    # Right context read per example, in tokens (0 = left context only): each of the
    # top `rerank` candidates is put in the word's place and scored by how well the LM
    # predicts the next `right_tokens` tokens, in one batch.
    right_tokens: int = 0
    rerank: int = 16


def word_tokens(lm: NonceLM) -> torch.Tensor:
    """[V] bool: tokens that are a whole word on their own ('▁mind', '▁Mind'), not
    punctuation, digits, pieces of words or special tokens."""

    def compute() -> torch.Tensor:
        pieces = lm.tokenizer.convert_ids_to_tokens(list(range(lm.vocab_size)))
        keep = [p.startswith("▁") and p[1:].isalpha() and len(p) > 2 for p in pieces]
        return torch.tensor(keep, device=lm.device)

    return lm.memo("word_tokens", compute)


def split_at_word(lm: NonceLM, word: str, examples: list[Example]) -> list[tuple]:
    """(ids before, ids after) the word's first occurrence, per example that uses it."""
    parts = []
    for example in examples:
        match = word_pattern(word).search(example.text)
        if match is not None:
            before = example.text[: match.start()].rstrip(" ")
            parts.append((lm.encode(before), lm.encode(example.text[match.end() :], bos=False)))
    return parts


def left_contexts(lm: NonceLM, word: str, examples: list[Example]) -> list[list[int]]:
    """Token ids before the word's first occurrence, for each example that has some."""
    bos = len(lm.encode(""))
    return [before for before, _ in split_at_word(lm, word, examples) if len(before) > bos]


@torch.no_grad()
def slot_logprobs(lm: NonceLM, prefixes: list[list[int]]) -> torch.Tensor:
    """[k, V] the LM's next-token log-probabilities after each prefix (one batch)."""
    ids, mask = lm.pad(prefixes, left=True)
    hidden = lm.hidden(ids, mask, None).last_hidden_state[:, -1]  # [k, d]
    return F.log_softmax(lm.logits(hidden, None).float(), dim=-1)


@torch.no_grad()
def soft_guess(
    lm: NonceLM, word: str, examples: list[Example], config: ReaderConfig = ReaderConfig()
) -> torch.Tensor | None:
    """[d] expected input-embedding row under the pooled, word-only distribution, or None
    when no example has left context."""
    prefixes = left_contexts(lm, word, examples)
    if not prefixes:
        return None
    pooled = slot_logprobs(lm, prefixes).sum(0)  # [V], product of experts
    pooled = pooled.masked_fill(~word_tokens(lm), float("-inf"))
    values, indices = pooled.topk(config.top_m)  # [M]
    if config.right_tokens > 0:
        n = min(config.rerank, config.top_m)
        right = right_scores(lm, split_at_word(lm, word, examples), indices[:n], config)
        values = torch.cat([values[:n] + right, values[n:] + right.min()])
    weights = torch.softmax(values / config.temperature, dim=-1)  # [M]
    rows = lm.input_matrix[indices].float()  # [M, d]
    return weights @ rows


@torch.no_grad()
def right_scores(
    lm: NonceLM, parts: list[tuple], candidates: torch.Tensor, config: ReaderConfig
) -> torch.Tensor:
    """[n] summed log p(next `right_tokens` tokens | left context, candidate) over examples."""
    seqs, spans = [], []
    for before, after in parts:
        after = after[: config.right_tokens]
        if not after:
            continue
        for c in candidates.tolist():
            seqs.append([*before, c, *after])
            spans.append(len(after))
    if not seqs:
        return torch.zeros(len(candidates), device=candidates.device)
    ids, mask = lm.pad(seqs, left=True)  # left padding: every row ends at the last column
    width = max(spans)
    hidden = lm.hidden(ids, mask, None).last_hidden_state[:, -width - 1 : -1]  # [S, w, d]
    logprobs = F.log_softmax(lm.logits(hidden, None).float(), dim=-1)  # [S, w, V]
    targets = ids[:, -width:]  # [S, w]
    picked = logprobs.gather(-1, targets[..., None])[..., 0]  # [S, w]
    lengths = torch.tensor(spans, device=picked.device)[:, None]
    keep = torch.arange(width, device=picked.device)[None, :] >= width - lengths
    scores = (picked * keep).sum(-1)  # [S]
    return scores.view(-1, len(candidates)).sum(0)  # [n]
