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

import argparse
import json
import logging
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F

from backends.college_data import CorpusConfig, build_corpus, load_corpus, save_corpus
from backends.learners.base import mean_norms
from backends.learners.college import (
    CollegeGenerator,
    GeneratorConfig,
    encode_examples,
    mask_word,
)
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
    from tqdm import tqdm

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # less padding
    feats: dict[int, torch.Tensor] = {}
    for start in tqdm(range(0, len(order), 128), desc="encoder features", unit="batch"):
        chunk = order[start : start + 128]
        hidden, mask = encode_examples(encoder, tokenizer, [texts[i] for i in chunk], max_tokens)
        for row, i in enumerate(chunk):
            feats[i] = hidden[row, : int(mask[row].sum())].half().cpu()
    return [feats[i] for i in range(len(texts))]


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
    return total, {k: float(v.detach()) for k, v in parts.items()}


# --- dev evaluation: Chimera rho and Definitional Nonce rank of the input vector -----------


@dataclass
class DevSet:
    chimera: dict[int, list]  # level -> [(feature indices, probe refs [6, d], ratings)]
    nonce: list[tuple[int, int]]  # (feature index, candidate index of the gold word)
    features: list[torch.Tensor]
    candidates: torch.Tensor  # [C, d] unit reference vectors


def dev_set(lm: NonceLM, cfg: TrainConfig, gcfg: GeneratorConfig) -> DevSet:
    """Shared dev files with the nonce (`___`) as the mask token; references for probes
    and for the candidate vocabulary (WordNet single-word lemmas + gold words)."""
    from backends.lexicon import single_word_lemmas
    from benchmarks.data import BLANK, CHIMERA_LEVELS, load_chimera, load_definitional_nonce

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
    words = sorted(set(single_word_lemmas()) | {i.word.lower() for i in nonce_items})
    where = {w: k for k, w in enumerate(words)}
    nonce = []
    for item in nonce_items:
        nonce.append((len(texts), where[item.word.lower()]))
        texts.append(item.sentence.replace(BLANK, mask_token))
    features = cached_features("dev", texts, cfg, gcfg)
    cand = F.normalize(reference_vectors(lm, words)[0], dim=-1)
    chimera = {
        level: [(i, F.normalize(reference_vectors(lm, p)[0], dim=-1), r) for i, p, r in rows]
        for level, rows in chimera_raw.items()
    }
    return DevSet(chimera, nonce, features, cand)


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
    from benchmarks.metrics import median_rank, mrr, spearman

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


# --- training ------------------------------------------------------------------------------


@dataclass
class Data:
    words: list[str]
    sentences: list[str]  # every training sentence
    owner: list[int]  # sentence -> word index
    of_word: list[list[int]]  # word index -> its sentence indices
    features: list[torch.Tensor]  # per sentence, fp16 [T_i, d_enc]
    ref_in: torch.Tensor  # [W, d_lm]
    ref_out: torch.Tensor  # [W, d_lm]


def training_data(lm: NonceLM, cfg: TrainConfig, gcfg: GeneratorConfig) -> Data:
    corpus = training_corpus(cfg)
    words = sorted(corpus)
    sentences, owner, of_word = [], [], []
    for k, w in enumerate(words):
        of_word.append(list(range(len(sentences), len(sentences) + len(corpus[w]))))
        sentences += corpus[w]
        owner += [k] * len(corpus[w])
    masked = [mask_word(s, words[o], "[MASK]") for s, o in zip(sentences, owner)]
    features = cached_features(f"train-s{cfg.seed}", masked, cfg, gcfg)
    ref_in, ref_out = reference_vectors(lm, words)
    log.info("training data: %d words, %d sentences", len(words), len(sentences))
    return Data(words, sentences, owner, of_word, features, ref_in, ref_out)


def lm_episodes(lm: NonceLM, data: Data, rng: random.Random, cfg: TrainConfig):
    """`lm_batch` episodes: support sentence, query (another sentence of w), negative."""
    V, out, support = lm.vocab_size, [], []
    while len(out) < cfg.lm_batch:
        w = rng.randrange(len(data.words))
        s, q = rng.sample(data.of_word[w], 2)
        student, teacher, align = episode_ids(lm, data.sentences[q], data.words[w], V + len(out))
        negative = lm.encode(data.sentences[rng.randrange(len(data.sentences))])
        if max(len(student), len(teacher), len(negative)) > cfg.max_query_tokens or not align:
            continue
        out.append((student, teacher, align, negative))
        support.append(s)
    return out, support


def schedule(cfg: TrainConfig):
    def factor(step: int) -> float:
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        return max(0.0, (cfg.steps - step) / max(1, cfg.steps - cfg.warmup))

    return factor


def train(cfg: TrainConfig, resume: bool = False) -> dict:
    from tqdm import tqdm

    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    try:
        from accelerate import Accelerator

        accelerator = Accelerator(cpu=not torch.cuda.is_available())
    except ImportError:
        accelerator = None
    device = accelerator.device if accelerator else torch.device("cpu")
    from backends.pipeline import load_lm

    lm = load_lm(cfg.lm, "cuda" if device.type == "cuda" else "cpu")
    norm_in, norm_out = mean_norms(lm)
    gcfg = GeneratorConfig(
        encoder=cfg.encoder, lm=cfg.lm, d_lm=lm.dim, norm_in=norm_in, norm_out=norm_out
    )
    data = training_data(lm, cfg, gcfg)
    dev = dev_set(lm, cfg, gcfg)

    generator = CollegeGenerator(gcfg).to(device)
    x, m = pad_features(data.features[:512], device)
    generator.calibrate_heads(x, m)
    optimizer = torch.optim.AdamW(generator.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule(cfg))
    if accelerator:
        generator, optimizer, scheduler = accelerator.prepare(generator, optimizer, scheduler)
    work = cache_dir() / "runs" / Path(cfg.out).name
    work.mkdir(parents=True, exist_ok=True)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / "train_log.jsonl"
    start_step, elapsed = 0, 0.0
    if resume and (work / "checkpoint.pt").exists():
        state = torch.load(work / "checkpoint.pt")
        unwrap(generator, accelerator).load_state_dict(state["generator"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        start_step, elapsed = state["step"], state["seconds"]
        log.info("resumed at step %d", start_step)
    elif log_path.exists():
        log_path.unlink()

    ref_in, ref_out = data.ref_in.to(device), data.ref_out.to(device)
    started = time.perf_counter() - elapsed
    bar = tqdm(range(start_step, cfg.steps), initial=start_step, total=cfg.steps, desc="college")
    done = start_step  # steps completed
    for step in bar:
        rng = random.Random(cfg.seed * 1_000_003 + step)  # resume replays the same batches
        gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
        generator.train()
        words = rng.sample(range(len(data.words)), cfg.batch)
        sents = [rng.choice(data.of_word[w]) for w in words]
        x, m = pad_features([data.features[s] for s in sents], device)
        group = torch.arange(len(words), device=device)
        vin, vout = generator(x, m, group, len(words))  # [B, d_lm] x 2
        idx = torch.tensor(words, device=device)
        reg = regression_loss(vin, ref_in[idx], norm_in) + regression_loss(
            vout, ref_out[idx], norm_out
        )
        loss, record = reg, {"regression": float(reg.detach())}
        if cfg.lm_every and step % cfg.lm_every == 0:
            episodes, support = lm_episodes(lm, data, rng, cfg)
            x, m = pad_features([data.features[s] for s in support], device)
            vin, vout = generator(x, m, torch.arange(len(support), device=device), len(support))
            lm_loss, parts = lm_losses(lm, NonceSlot(vin, vout), episodes, cfg, gen)
            loss = loss + cfg.lm_weight * lm_loss
            record.update(parts)
        optimizer.zero_grad()
        if accelerator:
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(generator.parameters(), cfg.clip)
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(generator.parameters(), cfg.clip)
        optimizer.step()
        scheduler.step()
        seconds = time.perf_counter() - started
        record.update(
            step=step + 1, loss=float(loss.detach()), lr=scheduler.get_last_lr()[0], seconds=seconds
        )
        if (step + 1) % cfg.eval_every == 0 if cfg.eval_every else False:
            record.update(evaluate(unwrap(generator, accelerator), dev))
        with log_path.open("a") as f:
            f.write(json.dumps(record) + "\n")
        bar.set_postfix(reg=f"{float(reg):.3f}", ce=f"{record.get('ce_query', float('nan')):.2f}")
        last = step + 1 == cfg.steps or (cfg.max_minutes and seconds > 60 * cfg.max_minutes)
        if (step + 1) % cfg.ckpt_every == 0 or last:
            state = {
                "generator": unwrap(generator, accelerator).state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "step": step + 1,
                "seconds": seconds,
            }
            torch.save(state, work / "checkpoint.pt")
        done = step + 1
        if last:
            break
    final = unwrap(generator, accelerator)
    final.save(out)
    results = evaluate(final, dev)
    summary = {"steps": done, "seconds": time.perf_counter() - started, **results}
    (out / "train_summary.json").write_text(
        json.dumps({"config": asdict(cfg), **summary}, indent=2)
    )
    return summary


def unwrap(model, accelerator):
    return accelerator.unwrap_model(model) if accelerator else model


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for field_name, default in asdict(TrainConfig()).items():
        kind = type(default)
        parser.add_argument(f"--{field_name.replace('_', '-')}", type=kind, default=default)
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", force=True)
    cfg = replace(TrainConfig(), **args)
    summary = train(cfg, resume)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
