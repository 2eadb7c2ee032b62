"""Cloze (GRE-like sentence completion, after CoLLEGe, Teehan, Lake & Ren 2024, §5.3).

Each of an item's 5 candidates is a new word known only from its own example sentences,
and holds its own made-up string (`runs.CLOZE_NONCES`). For every learner, each candidate
is learned, the blank is filled with it, and the filled sentences are scored in one batch:
every candidate has its own nonce id in one slot, `nonce_of_row` lets row r predict only
its own word, and a learner's logit hook (cache) or prompt prefix (prompting: the
candidate's examples go before the sentence) applies to its rows. Only the sentence's
tokens count. The highest log-probability is the pick; accuracy vs chance (1/5).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import replace

import torch

from backends.definitions import slot_for
from backends.learners import NonceEmbedding
from backends.nonce_lm import NonceLM
from backends.pipeline import load_lm
from benchmarks import data, metrics
from benchmarks.results import Result
from benchmarks.runs import (
    CLOZE_NONCES,
    RunOptions,
    describe_config,
    examples_for,
    learn_each,
    limited,
)

log = logging.getLogger(__name__)


def pick(scores: list[float]) -> int:
    """Index of the highest-scoring candidate (the first one on a tie)."""
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


def sentence_rows(lm: NonceLM, sentence: str, embeddings: list[NonceEmbedding]):
    """Per embedding i (word id V + i): ids of prefix + filled sentence, and the sentence length."""
    rows, lengths = [], []
    for i, emb in enumerate(embeddings):
        nonce_id = lm.vocab_size + i
        filled = data.with_nonce(sentence, emb.word)
        head = (
            lm.encode(emb.prompt_prefix, emb.word, nonce_id) if emb.prompt_prefix else lm.encode("")
        )
        body = lm.encode(filled, emb.word, nonce_id, bos=False)
        rows.append(head + body)
        lengths.append(len(body))
    return rows, lengths


def as_read_in_text(embedding: NonceEmbedding) -> NonceEmbedding:
    """The rows the LM reads the word as in running text: a learner's one reading where it
    gives one (`NonceEmbedding.readings`: college's definition is written from it), else its
    vectors. college's input vector also blends in the linear head's reading for the
    word-vector tasks; read in the filled sentences it cost Cloze (first 40: 0.725 -> 0.60),
    so a sentence reads the word as the definition does (model card, "A bigger encoder")."""
    if len(embedding.readings) != 1:
        return embedding
    _, vin, vout = embedding.readings[0]
    return replace(embedding, input_vector=vin, output_vector=vout, readings=[])


@torch.no_grad()
def sentence_scores(lm: NonceLM, sentence: str, embeddings: list[NonceEmbedding]) -> list[float]:
    """Log-probability of the filled sentence (its tokens only) for each embedding, one batch."""
    embeddings = [as_read_in_text(e) for e in embeddings]
    slot, hooks = slot_for(lm, embeddings)
    rows, lengths = sentence_rows(lm, sentence, embeddings)
    own = [lm.vocab_size + i for i in range(len(embeddings))]
    logprobs = lm.token_logprobs(rows, slot, hooks, nonce_of_row=own)
    return [float(lp[-n:].sum()) for lp, n in zip(logprobs, lengths)]


def candidate_embeddings(
    lm, item: data.ClozeItem, options: RunOptions
) -> list[list[NonceEmbedding]]:
    """[candidate][learner] embeddings, each candidate under its own made-up string."""
    if len(item.candidates) > len(CLOZE_NONCES):
        raise ValueError(
            f"{len(item.candidates)} candidates; at most {len(CLOZE_NONCES)} supported"
        )
    return [
        learn_each(lm, options.learners, nonce, examples_for(c.examples, nonce), options)
        for c, nonce in zip(item.candidates, CLOZE_NONCES)
    ]


def run_cloze(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    items = limited(
        [item for path in options.data for item in data.load_cloze(path)],
        options.limit,
        options.offset,
    )
    picks: dict[str, list[int]] = defaultdict(list)
    for item in items:
        per_candidate = candidate_embeddings(lm, item, options)
        flat = [emb for row in per_candidate for emb in row]  # candidate-major
        scores = sentence_scores(lm, item.sentence, flat)
        for j, learner in enumerate(options.learners):
            mine = scores[j :: len(options.learners)]  # this learner's score for each candidate
            picks[learner].append(pick(mine))
    answers = [item.answer for item in items]
    chance = sum(1 / len(item.candidates) for item in items) / max(1, len(items))
    return [
        Result(
            learner,
            None,
            len(picks[learner]),
            {"accuracy": metrics.accuracy(answers, picks[learner]), "chance": chance},
            {**describe_config(learner, options), "nonces": list(CLOZE_NONCES)},
        )
        for learner in options.learners
    ]
