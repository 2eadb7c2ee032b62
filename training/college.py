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

from backends.arguments import number, one_of, whole_number
from backends.learners.base import mean_norms
from backends.learners.college import WEIGHTS, CollegeGenerator, GeneratorConfig
from backends.nonce_lm import NonceLM, NonceSlot
from training.college_data import (
    Data,
    Targets,
    contrast_rows,
    lm_episodes,
    one_sentence_each,
    read_each,
    targets_on,
    training_data,
)
from training.college_dev import DevSet, dev_set, evaluate, norm_report
from training.college_losses import (
    base_rate_loss,
    contrastive_loss,
    lm_losses,
    regression_loss,
    unlikelihood_loss,
)
from training.features import cache_dir, pad_features

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


# --- the run: setup, resume, one step, logging, checkpoints, evaluation -------------------


@dataclass
class Run:
    """What a training run carries from step to step."""

    cfg: TrainConfig
    lm: NonceLM
    data: Data
    dev: DevSet
    generator: CollegeGenerator  # as the accelerator prepared it
    trained: list[torch.nn.Parameter]  # what the optimizer steps (`frozen_but`)
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    accelerator: object | None  # accelerate.Accelerator, when installed
    device: torch.device
    norm_in: float  # mean L2 norm of the LM's input rows
    norm_out: float  # and of its output rows
    out: Path  # where the generator, log and summary go
    work: Path  # where the checkpoint goes
    phase: str  # names the log, summary and checkpoint
    targets: Targets

    @property
    def log_path(self) -> Path:
        return self.out / f"{self.phase}_log.jsonl"

    def unwrapped(self) -> CollegeGenerator:
        return unwrap(self.generator, self.accelerator)


def accelerator_or_none():
    """An accelerate.Accelerator (CPU when there is no GPU), or None without the package."""
    try:
        from accelerate import Accelerator
    except ImportError:
        return None
    return Accelerator(cpu=not torch.cuda.is_available())


def generator_config(cfg: TrainConfig, lm: NonceLM) -> GeneratorConfig:
    """The generator for this (encoder, LM) pair, its heads aimed at the LM's row norms."""
    norm_in, norm_out = mean_norms(lm)
    return GeneratorConfig(
        encoder=cfg.encoder,
        lm=cfg.lm,
        d_lm=lm.dim,
        norm_in=norm_in,
        norm_out=norm_out,
        fixed_length_in=cfg.fixed_length_in,
        fixed_length_out=cfg.fixed_length_out,
    )


def build_generator(cfg: TrainConfig, gcfg: GeneratorConfig, data: Data, device):
    """A fresh generator with heads calibrated on the first sentences, or (`--init`) the
    one an earlier phase saved."""
    if not cfg.init:
        generator = CollegeGenerator(gcfg).to(device)
        x, m = pad_features(data.features[:512], device)
        generator.calibrate_heads(x, m)
        return generator
    generator = CollegeGenerator.load(cfg.init).to(device).train()
    if (generator.config.encoder, generator.config.d_lm) != (gcfg.encoder, gcfg.d_lm):
        raise ValueError(f"{cfg.init} was trained for {generator.config}, not {gcfg}")
    # a later phase may turn a fixed length on; it never turns a saved one off
    generator.config = replace(
        generator.config,
        fixed_length_in=generator.config.fixed_length_in or cfg.fixed_length_in,
        fixed_length_out=generator.config.fixed_length_out or cfg.fixed_length_out,
    )
    return generator


def setup(cfg: TrainConfig) -> Run:
    """Seed, LM, data, dev set, generator, optimizer and folders of a run."""
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    accelerator = accelerator_or_none()
    device = accelerator.device if accelerator else torch.device("cpu")
    from backends.pipeline import load_lm

    lm = load_lm(cfg.lm, "cuda" if device.type == "cuda" else "cpu")
    gcfg = generator_config(cfg, lm)
    data = training_data(lm, cfg, gcfg)
    dev = dev_set(lm, gcfg)
    generator = build_generator(cfg, gcfg, data, device)
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
    return Run(
        cfg=cfg,
        lm=lm,
        data=data,
        dev=dev,
        generator=generator,
        trained=trained,
        optimizer=optimizer,
        scheduler=scheduler,
        accelerator=accelerator,
        device=device,
        norm_in=gcfg.norm_in,
        norm_out=gcfg.norm_out,
        out=out,
        work=work,
        phase=phase,
        targets=targets_on(device, lm, data, cfg),
    )


def resume_or_restart(run: Run, resume: bool) -> tuple[int, float]:
    """(steps done, seconds spent): from the checkpoint with `resume`, else a fresh log."""
    checkpoint = run.work / "checkpoint.pt"
    if resume and checkpoint.exists():
        state = torch.load(checkpoint)
        run.unwrapped().load_state_dict(state["generator"])
        run.optimizer.load_state_dict(state["optimizer"])
        run.scheduler.load_state_dict(state["scheduler"])
        log.info("resumed at step %d", state["step"])
        return state["step"], state["seconds"]
    if run.log_path.exists():
        run.log_path.unlink()
    return 0, 0.0


def embedding_losses(run: Run, rng: random.Random, gen: torch.Generator):
    """The cheap batch: regression, contrastive and banked negative-query losses, weighted
    and summed, with the log's parts."""
    cfg, device, targets = run.cfg, run.device, run.targets
    loss, record = torch.zeros((), device=device), {}
    if not (cfg.regression or cfg.contrast or cfg.base_rate):
        return loss, record
    words, sents = one_sentence_each(run.data, rng, cfg.batch)
    vin, vout = read_each(run.generator, run.data, sents, device)  # [B, d_lm] x 2
    idx = torch.tensor(words, device=device)
    if cfg.regression:
        reg = regression_loss(vin, targets.ref_in[idx], run.norm_in) + regression_loss(
            vout, targets.ref_out[idx], run.norm_out
        )
        loss = loss + cfg.regression * reg
        record["regression"] = float(reg.detach())
    if cfg.contrast:
        rows = contrast_rows(idx, len(targets.vocab), cfg.negatives, gen)
        own = torch.arange(len(idx), device=device)  # row b's target is list row b
        con = contrastive_loss(vin, targets.vocab[rows], own, cfg.tau)
        con = con + contrastive_loss(vout, targets.vocab[rows], own, cfg.tau)
        loss = loss + cfg.contrast * con
        record["contrastive"] = float(con.detach())
    if cfg.base_rate:
        rate = base_rate_loss(vout, targets.bank_h, targets.bank_z)
        loss = loss + cfg.base_rate * rate
        record["base_rate"] = float(rate.detach())
    return loss, record


def step_loss(run: Run, step: int) -> tuple[torch.Tensor, dict]:
    """One step's weighted loss and its logged parts. The step seeds its own draws, so a
    resumed run replays the same batches."""
    cfg = run.cfg
    rng = random.Random(cfg.seed * 1_000_003 + step)
    gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + step)
    loss, record = embedding_losses(run, rng, gen)
    if cfg.lm_every and step % cfg.lm_every == 0:
        episodes, support, kinds = lm_episodes(run.lm, run.data, rng, cfg)
        vin, vout = read_each(run.generator, run.data, support, run.device)
        lm_loss, parts = lm_losses(run.lm, NonceSlot(vin, vout), episodes, cfg, gen, kinds)
        loss = loss + cfg.lm_weight * lm_loss
        record.update(parts)
    if cfg.unlikelihood:  # one sentence per word, as at one shot
        _, sents = one_sentence_each(run.data, rng, cfg.ul_words)
        vin, vout = read_each(run.generator, run.data, sents, run.device)
        ul, parts = unlikelihood_loss(run.lm, vin, vout, cfg.ul_tokens)
        loss = loss + cfg.unlikelihood * ul
        record.update(parts)
    return loss, record


def set_train_mode(run: Run) -> None:
    run.generator.train()
    if run.cfg.only:  # frozen parts run as at use: no dropout
        for name, module in run.unwrapped().named_children():
            module.train(name == run.cfg.only)


def optimize(run: Run, loss: torch.Tensor) -> None:
    """Backward, clip, step the optimizer and the learning-rate schedule."""
    run.optimizer.zero_grad()
    if run.accelerator:
        run.accelerator.backward(loss)
        run.accelerator.clip_grad_norm_(run.trained, run.cfg.clip)
    else:
        loss.backward()
        torch.nn.utils.clip_grad_norm_(run.trained, run.cfg.clip)
    run.optimizer.step()
    run.scheduler.step()


def write_log(run: Run, record: dict, bar) -> None:
    """One JSON line per step, and the progress bar's losses."""
    with run.log_path.open("a") as f:
        f.write(json.dumps(record) + "\n")
    bar.set_postfix(
        reg=f"{record.get('regression', float('nan')):.3f}",
        con=f"{record.get('contrastive', float('nan')):.2f}",
        ce=f"{record.get('ce_query', float('nan')):.2f}",
    )


def save_checkpoint(run: Run, steps: int, seconds: float) -> None:
    state = {
        "generator": run.unwrapped().state_dict(),
        "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(),
        "step": steps,
        "seconds": seconds,
    }
    torch.save(state, run.work / "checkpoint.pt")


def finish(run: Run, steps: int, started: float) -> dict:
    """Save the generator, evaluate it on the dev set, write and return the summary."""
    final = run.unwrapped()
    final.save(run.out)
    results = evaluate(final, run.dev)
    summary = {"steps": steps, "seconds": time.perf_counter() - started, **results}
    summary["norm_percentiles"] = norm_report(final, run.dev, run.lm)
    (run.out / f"{run.phase}_summary.json").write_text(
        json.dumps({"config": asdict(run.cfg), **summary}, indent=2)
    )
    return summary


def train(cfg: TrainConfig, resume: bool = False) -> dict:
    """Train (or, with `resume`, go on training) a generator; returns the summary."""
    from tqdm import tqdm

    run = setup(cfg)
    start_step, elapsed = resume_or_restart(run, resume)
    started = time.perf_counter() - elapsed
    bar = tqdm(range(start_step, cfg.steps), initial=start_step, total=cfg.steps, desc="college")
    done = start_step  # steps completed
    for step in bar:
        set_train_mode(run)
        loss, record = step_loss(run, step)
        optimize(run, loss)
        done, seconds = step + 1, time.perf_counter() - started
        record.update(
            step=done, loss=float(loss.detach()), lr=run.scheduler.get_last_lr()[0], seconds=seconds
        )
        if cfg.eval_every and done % cfg.eval_every == 0:
            record.update(evaluate(run.unwrapped(), run.dev))
        write_log(run, record, bar)
        last = done == cfg.steps or (cfg.max_minutes and seconds > 60 * cfg.max_minutes)
        if done % cfg.ckpt_every == 0 or last:
            save_checkpoint(run, done, seconds)
        if last:
            break
    return finish(run, done, started)


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


PHASES = ("train", "tune", "unlikelihood", "fixed_length")  # the model card's phases


def field_types() -> dict[str, object]:
    """The argparse type of each TrainConfig field checked up front (others: their own)."""
    with torch.random.fork_rng(devices=[]):  # a tiny generator, for its parts' names only
        parts = CollegeGenerator(GeneratorConfig(d_enc=8, d_lm=8, n_heads=2, d_ff=8))
    types: dict[str, object] = {"seed": int}
    counts = "batch lm_batch ul_words ul_tokens max_query_tokens words per_word ckpt_every threads"
    for name in counts.split():
        types[name] = whole_number(1)
    may_be_0 = "steps lm_every eval_every warmup negatives bank_sentences topk random_cols"
    for name in may_be_0.split():
        types[name] = whole_number(0)
    for name in "lr tau clip".split():
        types[name] = number(0, above=True)
    weights = "lm_weight unlikelihood regression contrast base_rate distill_cos distill_mse"
    for name in (*weights.split(), "weight_decay", "max_minutes"):
        types[name] = number(0)
    types["definitions"] = number(0, 1)  # a share
    types["schedule"] = one_of("linear", "constant")
    types["phase"] = one_of(*PHASES, blank=True)  # "": no phase named
    types["only"] = one_of(*dict(parts.named_children()), blank=True)  # "": every part
    return types


def parse_args(argv: list[str] | None = None) -> tuple[TrainConfig, bool]:
    """Command line -> (TrainConfig, resume): one option per TrainConfig field, each value
    checked here, before any corpus or model loads."""
    parser = argparse.ArgumentParser(
        prog="python -m training.college", description=__doc__.split("\n")[0]
    )
    types = field_types()
    for field_name, default in asdict(TrainConfig()).items():
        flag = f"--{field_name.replace('_', '-')}"
        if isinstance(default, bool):  # --fixed-length-in / --no-fixed-length-in
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=default)
        else:
            kind = types.get(field_name, type(default))
            parser.add_argument(flag, type=kind, default=default)
    parser.add_argument("--resume", action="store_true", help="continue from the last checkpoint")
    args = vars(parser.parse_args(argv))
    resume = args.pop("resume")
    if args["init"] and not (Path(args["init"]) / WEIGHTS).is_file():
        parser.error(f"argument --init: no saved generator in {args['init'][:80]!r}")
    if not args["steps"] and not args["init"]:  # it would save an untrained generator
        parser.error("argument --steps: 0 steps only re-saves an --init generator")
    return replace(TrainConfig(), **args), resume


def main(argv: list[str] | None = None) -> None:
    cfg, resume = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", force=True)
    summary = train(cfg, resume)
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
