"""Dev evaluation during CoLLEGe training: Chimera rho and Definitional Nonce rank of the
generated input vector, defined as the benchmarks define them (`benchmarks/word_tasks.py`)
but on precomputed encoder features, so it costs seconds. The shared dev files only; the
test splits are never read.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from backends.learners.college import CollegeGenerator, GeneratorConfig
from backends.nonce_lm import NonceLM
from backends.ranking import median_rank, mrr, spearman
from backends.reference import candidate_matrix
from training.features import cached_features, pad_features, reference_vectors


@dataclass
class DevSet:
    chimera: dict[int, list]  # level -> [(feature indices, probe refs [6, d], ratings)]
    nonce: list[tuple[int, int]]  # (feature index, candidate index of the gold word)
    features: list[torch.Tensor]
    candidates: torch.Tensor  # [C, d] unit reference vectors


def dev_set(lm: NonceLM, gcfg: GeneratorConfig) -> DevSet:
    """Shared dev files with the nonce (`___`) as the mask token; references for probes
    and for the candidate vocabulary (WordNet single-word lemmas + gold words)."""
    from backends.shared_data import BLANK, CHIMERA_LEVELS, load_chimera, load_definitional_nonce

    mask_token = "[MASK]"
    texts: list[str] = []
    chimera_raw = {}
    for level in CHIMERA_LEVELS:
        chimera_raw[level] = []
        for item in load_chimera(level):
            idx = list(range(len(texts), len(texts) + len(item.examples)))
            texts += [t.replace(BLANK, mask_token) for t in item.examples]
            chimera_raw[level].append((idx, item.probes, item.ratings))
    nonce_items = load_definitional_nonce()
    # the Definitional Nonce task's own candidates (WordNet lemmas + gold words, cached)
    words, candidates = candidate_matrix(lm, [i.word for i in nonce_items])
    where = {w: k for k, w in enumerate(words)}
    nonce = []
    for item in nonce_items:
        nonce.append((len(texts), where[item.word.lower()]))
        texts.append(item.sentence.replace(BLANK, mask_token))
    features = cached_features("dev", texts, gcfg.encoder, gcfg.max_tokens)
    chimera = {
        level: [(i, F.normalize(reference_vectors(lm, p)[0], dim=-1), r) for i, p, r in rows]
        for level, rows in chimera_raw.items()
    }
    return DevSet(chimera, nonce, features, torch.from_numpy(candidates))


@torch.no_grad()
def input_vectors(generator: CollegeGenerator, feats: list[torch.Tensor], groups: list[list[int]]):
    """One generated input vector per group of feature indices: [G, d_lm]."""
    device = next(generator.parameters()).device
    pooled = []
    flat = [i for g in groups for i in g]
    for start in range(0, len(flat), 256):
        x, m = pad_features([feats[i] for i in flat[start : start + 256]], device)
        pooled.append(generator.pool(x, m))
    pooled = torch.cat(pooled)
    owner = torch.tensor([k for k, g in enumerate(groups) for _ in g], device=device)
    sums = pooled.new_zeros(len(groups), pooled.shape[1]).index_add(0, owner, pooled)
    return generator.heads(sums / torch.tensor([len(g) for g in groups], device=device)[:, None])[0]


def evaluate(generator: CollegeGenerator, dev: DevSet) -> dict[str, float]:

    was_training = generator.training
    generator.eval()
    out = {}
    for level, rows in dev.chimera.items():
        vecs = F.normalize(
            input_vectors(generator, dev.features, [r[0] for r in rows]).cpu(), dim=-1
        )
        rhos = [
            spearman((probes @ v).tolist(), ratings) for v, (_, probes, ratings) in zip(vecs, rows)
        ]
        out[f"chimera_l{level}"] = sum(rhos) / len(rhos)
    vecs = F.normalize(
        input_vectors(generator, dev.features, [[i] for i, _ in dev.nonce]).cpu(), dim=-1
    )
    scores = vecs @ dev.candidates.T  # [700, C]
    gold = scores.gather(1, torch.tensor([[g] for _, g in dev.nonce]))
    ranks = (1 + (scores > gold).sum(1)).tolist()
    out["nonce_mrr"], out["nonce_median_rank"] = mrr(ranks), median_rank(ranks)
    generator.train(was_training)
    return out


PERCENTILES = (5, 25, 50, 75, 95)


@torch.no_grad()
def norm_report(generator: CollegeGenerator, dev: DevSet, lm: NonceLM) -> dict[str, list[float]]:
    """Percentiles (5/25/50/75/95) of the L2 norms of generated input and output vectors
    for the 700 one-sentence Definitional Nonce items, beside those of the LM's own rows:
    a generated row far outside the LM's range would be read as no word at all. The
    linear heads' own lengths come too (`head_*`): with `fixed_length_*` they are what the
    written vectors are rescaled from."""
    device = next(generator.parameters()).device
    was_training = generator.training
    generator.eval()
    ins, outs, raw_ins, raw_outs = [], [], [], []
    for start in range(0, len(dev.nonce), 256):
        idx = [i for i, _ in dev.nonce[start : start + 256]]
        x, m = pad_features([dev.features[i] for i in idx], device)
        pooled = generator.pool(x, m)
        # the linear heads' own lengths: what training made of them, fixed length or not
        raw_in, raw_out = generator.head_in(pooled), generator.head_out(pooled)
        vin, vout = generator.fix_lengths(raw_in, raw_out)  # = generator.heads(pooled)
        raw_ins.append(raw_in.norm(dim=-1).cpu())
        raw_outs.append(raw_out.norm(dim=-1).cpu())
        ins.append(vin.norm(dim=-1).cpu())
        outs.append(vout.norm(dim=-1).cpu())
    generator.train(was_training)
    q = torch.tensor([p / 100 for p in PERCENTILES])

    def pct(norms: torch.Tensor) -> list[float]:
        return [round(float(v), 4) for v in torch.quantile(norms.float(), q)]

    return {
        "generated_input": pct(torch.cat(ins)),
        "generated_output": pct(torch.cat(outs)),
        "head_input": pct(torch.cat(raw_ins)),
        "head_output": pct(torch.cat(raw_outs)),
        "lm_input_rows": pct(lm.input_matrix.detach().norm(dim=-1).cpu()),
        "lm_output_rows": pct(lm.output_matrix.detach().norm(dim=-1).cpu()),
    }
