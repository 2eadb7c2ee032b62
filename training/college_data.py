"""CoLLEGe training data: the word -> sentences corpus, frozen encoder features, the
LM's reference vectors and contrast list, and the episodes and batches drawn from them
(`training.college` trains on them).
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from backends.definitions import PROMPT
from backends.learners.college import GeneratorConfig, mask_word
from backends.lexicon import single_word_lemmas
from backends.nonce_lm import NonceLM
from backends.shared_data import excluded_words
from training.college_losses import Episode, episode_ids
from training.corpus import (
    CorpusConfig,
    build_corpus,
    is_excluded,
    load_corpus,
    save_corpus,
    sense_glosses,
)
from training.features import (
    cache_dir,
    cached_features,
    negative_bank,
    pad_features,
    reference_vectors,
)

if TYPE_CHECKING:
    from training.college import TrainConfig

log = logging.getLogger(__name__)


def training_corpus(cfg: TrainConfig) -> dict[str, list[str]]:
    """word -> sentences, built once (minutes: WordNet + GCIDE) and cached as JSON."""

    path = cache_dir() / "corpus.json"
    if not path.exists():
        save_corpus(build_corpus(excluded_words(), CorpusConfig(seed=cfg.seed)), path)
    corpus = load_corpus(path)
    rng = random.Random(cfg.seed)
    words = sorted(w for w, s in corpus.items() if len(s) >= 2)
    rng.shuffle(words)
    return {w: corpus[w][: cfg.per_word] for w in sorted(words[: cfg.words])}


@dataclass
class Data:
    words: list[str]
    sentences: list[str]  # every training sentence
    owner: list[int]  # sentence -> word index
    of_word: list[list[int]]  # word index -> its sentence indices
    features: list[torch.Tensor]  # per sentence, fp16 [T_i, d_enc]
    glosses: list[tuple[int, str]]  # (sentence, gloss of the sense it illustrates)
    ref_in: torch.Tensor  # [W, d_lm]
    ref_out: torch.Tensor  # [W, d_lm]
    vocab: torch.Tensor  # [C, d_lm] unit reference rows: training words first, then lemmas


def training_data(lm: NonceLM, cfg: TrainConfig, gcfg: GeneratorConfig) -> Data:
    corpus = training_corpus(cfg)
    words = sorted(corpus)
    sentences, owner, of_word = [], [], []
    for k, w in enumerate(words):
        of_word.append(list(range(len(sentences), len(sentences) + len(corpus[w]))))
        sentences += corpus[w]
        owner += [k] * len(corpus[w])
    masked = [mask_word(s, words[o], "[MASK]") for s, o in zip(sentences, owner)]
    features = cached_features(f"train-s{cfg.seed}", masked, cfg.encoder, gcfg.max_tokens)
    ref_in, ref_out = reference_vectors(lm, words)
    at = {(words[o], s): i for i, (s, o) in enumerate(zip(sentences, owner))}
    glosses = sorted(
        (at[key], gloss) for key, gloss in sense_glosses(corpus, excluded_words()).items()
    )
    vocab = F.normalize(
        torch.cat([ref_in, reference_vectors(lm, negative_words(words))[0]]), dim=-1
    )
    log.info(
        "training data: %d words, %d sentences (%d with their sense's gloss), %d contrast words",
        len(words),
        len(sentences),
        len(glosses),
        len(vocab),
    )
    return Data(words, sentences, owner, of_word, features, glosses, ref_in, ref_out, vocab)


def negative_words(words: list[str]) -> list[str]:
    """WordNet single-word lemmas that are neither training words nor evaluation words:
    the other rows of the contrastive list (Gemma ties input and output embeddings, so
    one list serves both heads)."""
    excluded, own = excluded_words(), set(words)
    lemmas = {w.lower() for w in single_word_lemmas()}
    return sorted(w for w in lemmas if w not in own and not is_excluded(w, excluded))


def lm_episodes(lm: NonceLM, data: Data, rng: random.Random, cfg: TrainConfig):
    """`lm_batch` episodes: support sentence, query, nonce-free negative query.

    The paper's query is another sentence that uses w. With probability
    `cfg.definitions` it is instead the definition probe the app asks (`PROMPT`)
    followed by the gloss of the sense the support sentence illustrates: the LM must
    then say what the word means, not repeat it (our addition; the glosses are WordNet's
    for training words only). `kinds` names each query ("definition" or "sentence") so
    the log can show which of the two a run learns."""
    V, out, support, kinds = lm.vocab_size, [], [], []
    while len(out) < cfg.lm_batch:
        if data.glosses and rng.random() < cfg.definitions:
            s, gloss = rng.choice(data.glosses)
            w = data.owner[s]
            query, kind = f"{PROMPT.format(word=data.words[w])} {gloss}.", "definition"
        else:
            w = rng.randrange(len(data.words))
            s, q = rng.sample(data.of_word[w], 2)
            query, kind = data.sentences[q], "sentence"
        student, teacher, align = episode_ids(lm, query, data.words[w], V + len(out))
        negative = lm.encode(data.sentences[rng.randrange(len(data.sentences))])
        if max(len(student), len(teacher), len(negative)) > cfg.max_query_tokens or not align:
            continue
        out.append(Episode(student, teacher, align, negative, V + len(out)))
        support.append(s)
        kinds.append(kind)
    return out, support, kinds


def one_sentence_each(data: Data, rng: random.Random, n: int) -> tuple[list[int], list[int]]:
    """`n` distinct training words and one of each one's sentences, drawn from `rng`."""
    words = rng.sample(range(len(data.words)), n)
    return words, [rng.choice(data.of_word[w]) for w in words]


def read_each(generator, data: Data, sentences: list[int], device):
    """The generator's (input, output) vectors [n, d_lm] for each sentence read alone."""
    x, m = pad_features([data.features[s] for s in sentences], device)
    return generator(x, m, torch.arange(len(sentences), device=device), len(sentences))


def contrast_rows(targets: torch.Tensor, size: int, n: int, gen: torch.Generator) -> torch.Tensor:
    """The batch's own words first (row b is word b's target), then `n` other rows of the
    word list sampled uniformly: a sampled softmax, 5x cheaper than all ~75k rows."""
    sample = torch.randperm(size, generator=gen)[: n + len(targets)]
    sample = sample[~torch.isin(sample, targets.cpu())][:n]
    return torch.cat([targets.cpu(), sample]).to(targets.device)


@dataclass(frozen=True)
class Targets:
    """What the embedding-space losses compare generated vectors with, on the device."""

    ref_in: torch.Tensor  # [W, d_lm] each training word's input reference vector
    ref_out: torch.Tensor  # [W, d_lm] and its output reference vector
    vocab: torch.Tensor  # [C, d_lm] the contrast list's unit rows
    bank_h: torch.Tensor  # [N, d_lm] frozen-LM states of nonce-free sentences
    bank_z: torch.Tensor  # [N] the LM's log-normaliser at each


def targets_on(device, lm: NonceLM, data: Data, cfg: TrainConfig) -> Targets:
    """Reference vectors and the contrast list on the device; the negative bank read."""
    bank_rng = random.Random(cfg.seed)
    bank_text = bank_rng.sample(data.sentences, min(cfg.bank_sentences, len(data.sentences)))
    bank_h, bank_z = (t.to(device) for t in negative_bank(lm, bank_text))
    return Targets(
        data.ref_in.to(device), data.ref_out.to(device), data.vocab.to(device), bank_h, bank_z
    )
