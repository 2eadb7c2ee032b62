"""Train a CoLLEGe generator (Teehan, Lake & Ren 2024) for one (encoder, LM) pair.

    python -m training.college --out assets/college/minilm-l6__gemma-3-270m

Episodes, as in the paper: for a word w from the example buffer (`training.corpus`), one
support sentence (any K works at use: the generator averages examples) is read by the
generator; its embeddings go into the frozen LM as a new token, which then reads a
*query* sentence that uses w in w's place. Every `lm_every`-th step runs such an LM
batch (`college_losses.lm_losses`): query cross-entropy, a nonce-free negative query,
and distillation against the frozen LM reading the original word.

Those LM steps cost seconds on a CPU, so every step also trains on cheap signals that
need no LM forward: the generated input and output embeddings are pulled onto the
word's own reference vector (regression, as Form-Context and a la carte learn, with a
norm term) and must pick it out of a list of ~75k words (contrastive); and the negative
query runs exactly on a bank of frozen-LM states read once (`base_rate_loss`: a
nonce-free query's states never see the new token). The regression and contrastive
terms are our addition to the paper, which trains 28k GPU steps on the LM losses alone;
on 2 CPU cores they are what make the vectors land among the right words. Encoder
features are precomputed once (`training.features`), and `training.college_dev` scores
the dev files as it goes.

A second, *tuning* phase (`--init` a saved generator, `--lm-every 1`) spends its steps
on LM batches; with `--definitions p` a share p of their queries is the app's definition
probe followed by the gloss of the support sentence's WordNet sense, which teaches the
output vector not to be predicted where a definition should begin. `--only head_out`
tunes the output head alone: the input vectors, and with them every LM hidden state,
stay fixed, so an LM step needs no backward pass through the LM.

A third phase (`--unlikelihood w`, output head alone, `--regression 0 --contrast 0
--base-rate 0`) lets the LM define a few training words from one sentence each, greedily,
and penalises the new token wherever the answer could repeat it (Welleck et al. 2020's
unlikelihood): the one-shot failure the tuned generator still has is a definition that
loops on the word, which no teacher-forced query shows. `--phase` names its log files.
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

from backends.definitions import PROMPT
from backends.learners.base import mean_norms
from backends.learners.college import CollegeGenerator, GeneratorConfig, mask_word
from backends.lexicon import single_word_lemmas
from backends.nonce_lm import NonceLM, NonceSlot
from benchmarks.data import excluded_words
from training.college_dev import dev_set, evaluate, norm_report
from training.college_losses import (
    Episode,
    base_rate_loss,
    contrastive_loss,
    episode_ids,
    lm_losses,
    regression_loss,
    unlikelihood_loss,
)
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

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    out: str = "assets/college/minilm-l6__gemma-3-270m"  # where the shipped generator goes
    encoder: str = "minilm-l6"  # encoder preset
    lm: str = "gemma-3-270m"  # LM preset
    steps: int = 2500  # optimizer steps (each has a regression batch)
    batch: int = 64  # words per regression batch (one support sentence each)
    lm_every: int = 50  # every n-th step also runs an LM episode batch (0 = never)
    lm_batch: int = 2  # episodes per LM batch (each: a query and a negative query)
    lm_weight: float = 1.0  # weight of the LM losses against the regression loss
    definitions: float = 0.0  # share of LM episodes whose query is the definition probe
    unlikelihood: float = 0.0  # weight of the new token's unlikelihood in own definitions
    ul_words: int = 4  # training words defined greedily per step for it
    ul_tokens: int = 16  # tokens per greedy definition
    init: str = ""  # start from this saved generator (a tuning phase) instead of afresh
    only: str = ""  # train only this submodule (e.g. "head_out"); the rest stays frozen
    fixed_length_in: bool = False  # write input vectors at the LM's mean row norm
    fixed_length_out: bool = False  # and output vectors (GeneratorConfig)
    regression: float = 1.0  # weight of the regression onto the word's own embedding
    contrast: float = 1.0  # weight of the contrastive loss (0 = regression only)
    tau: float = 0.05  # contrastive temperature on cosines
    negatives: int = 16384  # other words sampled per step for the contrastive list
    base_rate: float = 1.0  # weight of the banked negative-query loss on the output head
    bank_sentences: int = 512  # nonce-free sentences the frozen LM reads once for it
    distill_cos: float = 1.0  # weight of the hidden-state cosine distillation
    distill_mse: float = 0.05  # weight of the logit MSE distillation
    topk: int = 64  # teacher's top-k columns in the logit MSE
    random_cols: int = 256  # random shared columns in the logit MSE
    max_query_tokens: int = 64  # LM tokens; longer queries are skipped
    lr: float = 5e-4  # AdamW peak learning rate
    weight_decay: float = 0.1  # AdamW (paper)
    warmup: int = 100  # linear warm-up steps, then linear decay to 0
    schedule: str = "linear"  # after warm-up: "linear" decay to 0, or "constant"
    clip: float = 1.0  # gradient norm clipping
    words: int = 12000  # training words kept from the corpus
    per_word: int = 3  # sentences per word kept for training
    eval_every: int = 500  # steps between dev evaluations (0 = only at the end)
    ckpt_every: int = 250  # steps between checkpoints
    max_minutes: float = 0.0  # stop (and save) after this wall-clock time; 0 = no limit
    threads: int = 2  # torch CPU threads
    phase: str = ""  # names the log, summary and checkpoint ("" = train, or tune with --init)
    seed: int = 0


# --- data: corpus, frozen features, reference vectors --------------------------------------


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


def schedule(cfg: TrainConfig):
    if cfg.schedule not in ("linear", "constant"):
        raise ValueError(f"--schedule {cfg.schedule!r}: not 'linear' or 'constant'")

    def factor(step: int) -> float:
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        if cfg.schedule == "constant":
            return 1.0
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
        encoder=cfg.encoder,
        lm=cfg.lm,
        d_lm=lm.dim,
        norm_in=norm_in,
        norm_out=norm_out,
        fixed_length_in=cfg.fixed_length_in,
        fixed_length_out=cfg.fixed_length_out,
    )
    data = training_data(lm, cfg, gcfg)
    dev = dev_set(lm, gcfg)

    if cfg.init:  # a tuning phase: the generator a first run saved
        generator = CollegeGenerator.load(cfg.init).to(device).train()
        if (generator.config.encoder, generator.config.d_lm) != (gcfg.encoder, gcfg.d_lm):
            raise ValueError(f"{cfg.init} was trained for {generator.config}, not {gcfg}")
        # a later phase may turn a fixed length on; it never turns a saved one off
        generator.config = replace(
            generator.config,
            fixed_length_in=generator.config.fixed_length_in or cfg.fixed_length_in,
            fixed_length_out=generator.config.fixed_length_out or cfg.fixed_length_out,
        )
    else:
        generator = CollegeGenerator(gcfg).to(device)
        x, m = pad_features(data.features[:512], device)
        generator.calibrate_heads(x, m)
    trained = frozen_but(generator, cfg.only)
    optimizer = torch.optim.AdamW(trained, lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule(cfg))
    if accelerator:
        generator, optimizer, scheduler = accelerator.prepare(generator, optimizer, scheduler)
    # a later phase keeps the earlier phases' files
    phase = cfg.phase or ("tune" if cfg.init else "train")
    work = cache_dir() / "runs" / Path(cfg.out).name / phase
    work.mkdir(parents=True, exist_ok=True)
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log_path = out / f"{phase}_log.jsonl"
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
    vocab = data.vocab.to(device)
    bank_rng = random.Random(cfg.seed)
    bank_text = bank_rng.sample(data.sentences, min(cfg.bank_sentences, len(data.sentences)))
    bank_h, bank_z = (t.to(device) for t in negative_bank(lm, bank_text))
    started = time.perf_counter() - elapsed
    bar = tqdm(range(start_step, cfg.steps), initial=start_step, total=cfg.steps, desc="college")
    done = start_step  # steps completed
    for step in bar:
        rng = random.Random(cfg.seed * 1_000_003 + step)  # resume replays the same batches
        gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
        generator.train()
        if cfg.only:  # frozen parts run as at use: no dropout
            for name, module in unwrap(generator, accelerator).named_children():
                module.train(name == cfg.only)
        loss, record = torch.zeros((), device=device), {}
        if cfg.regression or cfg.contrast or cfg.base_rate:  # the cheap embedding-space batch
            words, sents = one_sentence_each(data, rng, cfg.batch)
            vin, vout = read_each(generator, data, sents, device)  # [B, d_lm] x 2
            idx = torch.tensor(words, device=device)
        if cfg.regression:
            reg = regression_loss(vin, ref_in[idx], norm_in) + regression_loss(
                vout, ref_out[idx], norm_out
            )
            loss = loss + cfg.regression * reg
            record["regression"] = float(reg.detach())
        if cfg.contrast:
            rows = contrast_rows(idx, len(vocab), cfg.negatives, gen)
            own = torch.arange(len(idx), device=device)  # row b's target is list row b
            con = contrastive_loss(vin, vocab[rows], own, cfg.tau)
            con = con + contrastive_loss(vout, vocab[rows], own, cfg.tau)
            loss = loss + cfg.contrast * con
            record["contrastive"] = float(con.detach())
        if cfg.base_rate:
            rate = base_rate_loss(vout, bank_h, bank_z)
            loss = loss + cfg.base_rate * rate
            record["base_rate"] = float(rate.detach())
        if cfg.lm_every and step % cfg.lm_every == 0:
            episodes, support, kinds = lm_episodes(lm, data, rng, cfg)
            vin, vout = read_each(generator, data, support, device)
            lm_loss, parts = lm_losses(lm, NonceSlot(vin, vout), episodes, cfg, gen, kinds)
            loss = loss + cfg.lm_weight * lm_loss
            record.update(parts)
        if cfg.unlikelihood:  # one sentence per word, as at one shot
            _, sents = one_sentence_each(data, rng, cfg.ul_words)
            vin, vout = read_each(generator, data, sents, device)
            ul, parts = unlikelihood_loss(lm, vin, vout, cfg.ul_tokens)
            loss = loss + cfg.unlikelihood * ul
            record.update(parts)
        optimizer.zero_grad()
        if accelerator:
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(trained, cfg.clip)
        else:
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, cfg.clip)
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
        bar.set_postfix(
            reg=f"{record.get('regression', float('nan')):.3f}",
            con=f"{record.get('contrastive', float('nan')):.2f}",
            ce=f"{record.get('ce_query', float('nan')):.2f}",
        )
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
    summary["norm_percentiles"] = norm_report(final, dev, lm)
    (out / f"{phase}_summary.json").write_text(
        json.dumps({"config": asdict(cfg), **summary}, indent=2)
    )
    return summary


def frozen_but(generator: CollegeGenerator, only: str) -> list[torch.nn.Parameter]:
    """The parameters to train: all, or only submodule `only`'s, the others frozen.

    Training only `head_out` leaves the input embedding, and so every LM hidden state,
    fixed: autograd then stops at the logits, an LM step costs a forward pass, and the
    word vectors the benchmarks read stay exactly as they were."""
    if not only:
        return list(generator.parameters())
    parts = dict(generator.named_children())
    if only not in parts:
        raise ValueError(f"--only {only!r}: not one of {', '.join(parts)}")
    for name, module in parts.items():
        module.requires_grad_(name == only)
    return list(parts[only].parameters())


def unwrap(model, accelerator):
    return accelerator.unwrap_model(model) if accelerator else model


def parse_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool]:
    """Command line -> (TrainConfig, resume): one option per TrainConfig field."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for field_name, default in asdict(TrainConfig()).items():
        flag = f"--{field_name.replace('_', '-')}"
        if isinstance(default, bool):  # --fixed-length-in / --no-fixed-length-in
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        else:
            parser.add_argument(flag, type=type(default), default=default)
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    return replace(TrainConfig(), **args), resume


def main(argv: list[str] | None = None) -> None:
    cfg, resume = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", force=True)
    summary = train(cfg, resume)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
