"""Train a CoLLEGe generator (Teehan, Lake & Ren 2024) for one (encoder, LM) pair.

    python -m backends.train_college --out assets/college/minilm-l6__gemma-3-270m

Episodes, as in the paper: for a word w from the example buffer (`college_data`), one
support sentence (any K works at use: the generator averages examples) is read by the
generator; its embeddings go into the frozen LM as a new token, which then reads a
*query* sentence that uses w in w's place. Losses per LM step:
- cross-entropy of the query with the nonce, and of a nonce-free negative query (the
  new token must not inflate its own base rate);
- distillation against the frozen LM reading the query with the original word: cosine
  between final hidden states at aligned positions, and MSE between logits at those
  positions. Gemma has 262k columns; MSE over all of them would be dominated by the
  long tail of irrelevant tokens and cost two [N, 262k] matrices, so we compare the
  teacher's top-k columns, a random shared set of columns (an unbiased sample of the
  tail), and the nonce column (teacher: the word's first token), each row centred
  (logits are shift-invariant).
Those LM steps cost seconds on a CPU, so most steps use a cheap signal with no LM
forward at all: regress the generated input and output embeddings onto the word's own
reference vector (mean LM embedding of the tokens of " w"): 1 - cosine plus a squared
error against the reference rescaled to the LM's mean row norm. Encoder features are
precomputed once (the encoder is frozen) and cached under the cache dir.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from backends.college_data import CorpusConfig, build_corpus, load_corpus, save_corpus
from backends.learners.college import GeneratorConfig, encode_examples
from backends.nonce_lm import NonceLM, NonceSlot, word_pattern
from backends.settings import load_settings

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    out: str = "assets/college/minilm-l6__gemma-3-270m"  # where the shipped generator goes
    encoder: str = "minilm-l6"  # encoder preset
    lm: str = "gemma-3-270m"  # LM preset
    steps: int = 3000  # optimizer steps (each has a regression batch)
    batch: int = 64  # words per regression batch (one support sentence each)
    lm_every: int = 12  # every n-th step also runs an LM episode batch (0 = never)
    lm_batch: int = 4  # episodes per LM batch (each: a query and a negative query)
    lm_weight: float = 1.0  # weight of the LM losses against the regression loss
    distill_cos: float = 1.0  # weight of the hidden-state cosine distillation
    distill_mse: float = 0.05  # weight of the logit MSE distillation
    topk: int = 64  # teacher's top-k columns in the logit MSE
    random_cols: int = 256  # random shared columns in the logit MSE
    max_query_tokens: int = 64  # LM tokens; longer queries are skipped
    lr: float = 3e-4  # AdamW peak learning rate
    weight_decay: float = 0.1  # AdamW (paper)
    warmup: int = 100  # linear warm-up steps, then linear decay to 0
    clip: float = 1.0  # gradient norm clipping
    words: int = 12000  # training words kept from the corpus
    per_word: int = 3  # sentences per word kept for training
    eval_every: int = 500  # steps between dev evaluations (0 = only at the end)
    ckpt_every: int = 250  # steps between checkpoints
    max_minutes: float = 0.0  # stop (and save) after this wall-clock time; 0 = no limit
    threads: int = 2  # torch CPU threads
    seed: int = 0


# --- data: corpus, frozen features, reference vectors --------------------------------------


def cache_dir() -> Path:
    path = load_settings().cache_dir / "college"
    path.mkdir(parents=True, exist_ok=True)
    return path


def training_corpus(cfg: TrainConfig) -> dict[str, list[str]]:
    """word -> sentences, built once (minutes: WordNet + GCIDE) and cached as JSON."""
    from benchmarks.data import excluded_words  # the CLI may read the benchmark word lists

    path = cache_dir() / "corpus.json"
    if not path.exists():
        save_corpus(build_corpus(excluded_words(), CorpusConfig(seed=cfg.seed)), path)
    corpus = load_corpus(path)
    rng = random.Random(cfg.seed)
    words = sorted(w for w, s in corpus.items() if len(s) >= 2)
    rng.shuffle(words)
    return {w: corpus[w][: cfg.per_word] for w in sorted(words[: cfg.words])}


def reference_vectors(lm: NonceLM, words: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean input and output embedding of the tokens of " w", per word: [N, d] x 2."""
    ids = lm.tokenizer([" " + w for w in words], add_special_tokens=False)["input_ids"]
    flat = torch.tensor([i for seq in ids for i in seq])
    owner = torch.tensor([k for k, seq in enumerate(ids) for _ in seq])
    counts = torch.bincount(owner, minlength=len(words)).clamp(min=1)[:, None].float()
    with torch.no_grad():
        refs = []
        for matrix in (lm.input_matrix, lm.output_matrix):
            rows = matrix.detach().float().cpu()[flat]
            refs.append(torch.zeros(len(words), lm.dim).index_add(0, owner, rows) / counts)
    return refs[0], refs[1]


def featurize(texts: list[str], encoder, tokenizer, max_tokens: int) -> list[torch.Tensor]:
    """Frozen encoder features of already-masked texts: one fp16 [T_i, d_enc] per text."""
    out = []
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding
    feats: dict[int, torch.Tensor] = {}
    for start in range(0, len(order), 128):
        chunk = order[start : start + 128]
        hidden, mask = encode_examples(encoder, tokenizer, [texts[i] for i in chunk], max_tokens)
        for row, i in enumerate(chunk):
            feats[i] = hidden[row, : int(mask[row].sum())].half().cpu()
    out = [feats[i] for i in range(len(texts))]
    return out


def cached_features(name: str, texts: list[str], cfg: TrainConfig, gcfg: GeneratorConfig):
    path = cache_dir() / f"features-{cfg.encoder}-{name}-{len(texts)}.pt"
    if path.exists():
        return torch.load(path)
    from backends.models import load_encoder

    encoder, tokenizer = load_encoder(cfg.encoder, "cpu")
    start = time.perf_counter()
    feats = featurize(texts, encoder, tokenizer, gcfg.max_tokens)
    log.info("featurized %d %s texts in %.0f s", len(texts), name, time.perf_counter() - start)
    torch.save(feats, path)
    return feats


def pad_features(feats: list[torch.Tensor], device) -> tuple[torch.Tensor, torch.Tensor]:
    """fp16 [T_i, d] list -> float [B, T, d] and bool mask [B, T]."""
    width = max(f.shape[0] for f in feats)
    x = torch.zeros(len(feats), width, feats[0].shape[1])
    mask = torch.zeros(len(feats), width, dtype=torch.bool)
    for row, f in enumerate(feats):
        x[row, : f.shape[0]] = f.float()
        mask[row, : f.shape[0]] = True
    return x.to(device), mask.to(device)


# --- losses ----------------------------------------------------------------------------------


def regression_loss(v: torch.Tensor, ref: torch.Tensor, norm: float) -> torch.Tensor:
    """Generated [B, d] vs reference [B, d]: 1 - cosine + ||v - ref rescaled to `norm`||^2."""
    target = ref * (norm / ref.norm(dim=-1, keepdim=True).clamp(min=1e-8))
    cos = F.cosine_similarity(v, ref, dim=-1)
    return (1 - cos).mean() + (v - target).pow(2).sum(-1).mean()


def episode_ids(lm: NonceLM, text: str, word: str, nonce_id: int):
    """(student ids with the nonce, teacher ids with the word, [(student pos, teacher pos)])
    for every position from the one predicting the first nonce onwards."""
    tok = lm.tokenizer
    student = [tok.bos_token_id] if tok.bos_token_id is not None else []
    teacher = list(student)
    align = []
    pattern = word_pattern(word)
    pieces, found = pattern.split(text), [m.group(0) for m in pattern.finditer(text)]
    for k, piece in enumerate(pieces):
        last = k == len(pieces) - 1
        chunk = piece if last else piece.rstrip(" ")
        for i in tok(chunk, add_special_tokens=False)["input_ids"] if chunk else []:
            student.append(i)
            teacher.append(i)
            align.append((len(student) - 1, len(teacher) - 1))
        if not last:
            student.append(nonce_id)
            teacher += tok(" " + found[k], add_special_tokens=False)["input_ids"]
            align.append((len(student) - 1, len(teacher) - 1))
    first = student.index(nonce_id)
    align = [(s, t) for s, t in align if first - 1 <= s < len(student) - 1]
    return student, teacher, align


def lm_losses(lm: NonceLM, slot: NonceSlot, episodes, cfg: TrainConfig, gen: torch.Generator):
    """Query CE with the nonce, negative-query CE, hidden cosine and logit MSE distillation.

    `episodes`: per episode e (nonce id V + e), (query student ids, teacher ids, align,
    negative ids)."""
    V, E = lm.vocab_size, len(episodes)
    seqs = [ep[0] for ep in episodes] + [ep[3] for ep in episodes]
    ids, mask = lm.pad(seqs, left=False)
    hidden = lm.hidden(ids, mask, slot).last_hidden_state  # [2E, T, d]
    rows = torch.tensor([r for r, s in enumerate(seqs) for _ in range(len(s) - 1)])
    pos = torch.tensor([p for s in seqs for p in range(len(s) - 1)])
    h = hidden[rows, pos]  # [N, d], every predicting position
    logits = lm.logits(h, slot).float()  # [N, V + E]
    own = (rows % E).to(logits.device)  # the episode each row belongs to
    other = torch.arange(E, device=logits.device)[None] != own[:, None]
    logits = torch.cat([logits[:, :V], logits[:, V:].masked_fill(other, float("-inf"))], -1)
    nll = F.cross_entropy(logits, ids[rows, pos + 1], reduction="none")
    is_query = rows < E
    ce_query, ce_negative = nll[is_query].mean(), nll[~is_query].mean()

    with torch.no_grad():  # the teacher: the same frozen LM reading the original word
        t_ids, t_mask = lm.pad([ep[1] for ep in episodes], left=False)
        t_hidden = lm.hidden(t_ids, t_mask, None).last_hidden_state  # [E, T', d]
    s_at = torch.tensor([(e, s) for e, ep in enumerate(episodes) for s, _ in ep[2]])
    t_at = torch.tensor([(e, t) for e, ep in enumerate(episodes) for _, t in ep[2]])
    hs = hidden[s_at[:, 0], s_at[:, 1]]  # [M, d]
    ht = t_hidden[t_at[:, 0], t_at[:, 1]]  # [M, d]
    cos = 1 - F.cosine_similarity(hs, ht, dim=-1).mean()

    s_logits = lm.logits(hs, slot).float()  # [M, V + E]
    s_logits = torch.cat([s_logits[:, :V], s_logits[:, V:].gather(1, s_at[:, :1])], 1)  # own nonce
    with torch.no_grad():
        t_logits = lm.logits(ht, None).float()  # [M, V]
        first_tok = torch.tensor(
            [ep[1][len(ep[0][: ep[0].index(V + e)])] for e, ep in enumerate(episodes)]
        )
        t_logits = torch.cat([t_logits, t_logits.gather(1, first_tok[t_at[:, 0], None])], 1)
        cols = torch.cat(
            [
                t_logits[:, :V].topk(cfg.topk, dim=-1).indices,
                torch.randint(0, V, (1, cfg.random_cols), generator=gen).expand(len(ht), -1),
                torch.full((len(ht), 1), V),
            ],
            1,
        )  # [M, k + r + 1]
    s_sel, t_sel = s_logits.gather(1, cols), t_logits.gather(1, cols)
    mse = F.mse_loss(s_sel - s_sel.mean(1, keepdim=True), t_sel - t_sel.mean(1, keepdim=True))
    total = ce_query + ce_negative + cfg.distill_cos * cos + cfg.distill_mse * mse
    parts = {
        "ce_query": ce_query,
        "ce_negative": ce_negative,
        "distill_cos": cos,
        "distill_mse": mse,
    }
    return total, {k: float(v) for k, v in parts.items()}
