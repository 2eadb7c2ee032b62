"""The whole training loop on a tiny LM and tiny data: every loss on, two steps, a log
line per step, a checkpoint, a saved generator and a summary; a resumed run goes on
from its checkpoint."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch

import training.college as college
import training.college_data as college_data
from backends.learners.college import CollegeGenerator
from tests.training.test_episodes import tiny_data

D_ENC = 384  # the default GeneratorConfig's encoder width, which train() builds


@pytest.fixture
def tiny_run(tiny_lm, tmp_path, monkeypatch):
    """train() with the LM, data, dev set, bank and cache dir replaced by tiny ones."""

    def data(lm, cfg, gcfg):
        d = tiny_data()
        gen = torch.Generator().manual_seed(1)
        d.features = [torch.randn(3, D_ENC, generator=gen) for _ in d.sentences]
        d.ref_in = torch.randn(len(d.words), lm.dim, generator=gen)
        d.ref_out = torch.randn(len(d.words), lm.dim, generator=gen)
        d.vocab = torch.nn.functional.normalize(torch.randn(6, lm.dim, generator=gen), dim=-1)
        return d

    def bank(lm, sentences):
        gen = torch.Generator().manual_seed(2)
        return torch.randn(5, lm.dim, generator=gen), torch.randn(5, generator=gen)

    monkeypatch.setattr("backends.pipeline.load_lm", lambda name, device: tiny_lm)
    monkeypatch.setattr(college, "training_data", data)
    monkeypatch.setattr(college, "dev_set", lambda lm, gcfg: None)
    monkeypatch.setattr(college, "evaluate", lambda generator, dev: {"dev": 0.5})
    monkeypatch.setattr(college, "norm_report", lambda generator, dev, lm: {})
    monkeypatch.setattr(college_data, "negative_bank", bank)
    monkeypatch.setattr(college, "cache_dir", lambda: tmp_path / "cache")
    cfg = replace(
        college.TrainConfig(),
        out=str(tmp_path / "out"),
        steps=2,
        batch=2,
        lm_every=1,
        lm_batch=2,
        definitions=0.5,
        unlikelihood=0.1,
        ul_words=2,
        ul_tokens=3,
        negatives=3,
        topk=4,
        random_cols=5,
        warmup=1,
        eval_every=2,
        ckpt_every=1,
        threads=1,
    )
    return cfg, tmp_path


def log_lines(path) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row.pop("seconds")
    return rows


def test_two_steps_log_every_loss_save_the_generator_and_summarise(tiny_run):
    cfg, tmp = tiny_run
    summary = college.train(cfg)
    rows = log_lines(tmp / "out" / "train_log.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    for key in ("regression", "contrastive", "base_rate", "ce_query", "ce_negative"):
        assert all(math.isfinite(r[key]) for r in rows), key
    assert {"distill_cos", "distill_mse", "unlikelihood", "nonce_emitted"} <= set(rows[0])
    assert "dev" not in rows[0] and rows[1]["dev"] == 0.5  # evaluated every 2nd step
    assert (summary["steps"], summary["dev"]) == (2, 0.5)
    assert (tmp / "cache" / "runs" / "out" / "train" / "checkpoint.pt").exists()
    CollegeGenerator.load(tmp / "out")
    saved = json.loads((tmp / "out" / "train_summary.json").read_text())
    assert saved["config"]["steps"] == 2


def test_a_resumed_run_goes_on_from_its_checkpoint_and_keeps_the_log(tiny_run):
    cfg, tmp = tiny_run
    college.train(replace(cfg, steps=1))
    summary = college.train(cfg, resume=True)
    assert [r["step"] for r in log_lines(tmp / "out" / "train_log.jsonl")] == [1, 2]
    assert summary["steps"] == 2
