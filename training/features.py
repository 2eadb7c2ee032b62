"""What CoLLEGe training precomputes: frozen-encoder features of masked sentences (the
encoder never trains, so each sentence is read once and cached under the cache dir) and
the LM's reference vectors for words (mean embedding of the tokens of " w").
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from backends import reference
from backends.learners.college import encode_examples
from backends.nonce_lm import NonceLM
from backends.settings import load_settings

log = logging.getLogger(__name__)


def cache_dir() -> Path:
    path = load_settings().cache_dir / "college"
    path.mkdir(parents=True, exist_ok=True)
    return path


def reference_vectors(lm: NonceLM, words: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """The word reference vectors (`backends.reference`), for the input and the
    output matrix: [N, d] x 2, on the CPU."""
    return tuple(
        torch.from_numpy(reference.reference_vectors(lm, words, matrix=m))
        for m in (lm.input_matrix, lm.output_matrix)
    )


def featurize(texts: list[str], encoder, tokenizer, max_tokens: int) -> list[torch.Tensor]:
    """Frozen encoder features of already-masked texts: one fp16 [T_i, d_enc] per text."""
    from tqdm import tqdm

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding
    feats: dict[int, torch.Tensor] = {}
    for start in tqdm(range(0, len(order), 128), desc="encoder features", unit="batch"):
        chunk = order[start : start + 128]
        hidden, mask = encode_examples(encoder, tokenizer, [texts[i] for i in chunk], max_tokens)
        for row, i in enumerate(chunk):
            feats[i] = hidden[row, : int(mask[row].sum())].half().cpu()
    return [feats[i] for i in range(len(texts))]


def cached_features(name: str, texts: list[str], encoder: str, max_tokens: int):
    """Features of `texts`, computed once and cached by name, encoder and count."""
    path = cache_dir() / f"features-{encoder}-{name}-{len(texts)}.pt"
    if path.exists():
        return torch.load(path)
    from backends.models import load_encoder

    model, tokenizer = load_encoder(encoder, "cpu")
    start = time.perf_counter()
    feats = featurize(texts, model, tokenizer, max_tokens)
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


# --- training ------------------------------------------------------------------------------


@torch.no_grad()
def negative_bank(lm: NonceLM, sentences: list[str], batch: int = 16):
    """The frozen LM reading nonce-free sentences: final hidden states at every predicting
    position, [N, d], and the log-normaliser of the LM's own logits there, [N].

    A nonce-free query's hidden states do not depend on the new token (it never appears),
    so these two are all the negative query's loss needs; cached like the features."""
    path = cache_dir() / f"negative-bank-{lm.name.replace('/', '_')}-{len(sentences)}.pt"
    if path.exists():
        return torch.load(path)
    hidden, lognorm = [], []
    for start in range(0, len(sentences), batch):
        seqs = [lm.encode(s) for s in sentences[start : start + batch]]
        ids, mask = lm.pad(seqs, left=False)
        states = lm.hidden(ids, mask, None).last_hidden_state  # [B, T, d]
        keep = mask.bool().clone()
        last = torch.arange(len(seqs), device=keep.device), mask.sum(1) - 1
        keep[last] = False  # the last token predicts nothing
        h = states[keep].float()  # [n, d]
        hidden.append(h.cpu())
        lognorm.append(torch.logsumexp(lm.logits(h, None).float(), dim=-1).cpu())
    bank = (torch.cat(hidden), torch.cat(lognorm))
    torch.save(bank, path)
    log.info("negative bank: %d positions from %d sentences", len(bank[1]), len(sentences))
    return bank
