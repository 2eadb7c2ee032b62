"""Model quality of the shipped CoLLEGe generator against the baselines it must beat, on
the development data (slow: about 2 minutes on 2 CPU cores; `make test-all`). They
measure the trained asset itself, so the college learner runs without the LM reader
(`lm_reader_weight=0`) and definitions are decoded greedily, without the controls.

Thresholds sit well below what the shipped generator measured (model card) and well
above what the centroid reaches, so they catch a broken or swapped asset, not noise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import benchmarks.runs
from backends.decoding import GREEDY
from backends.definitions import define
from backends.inputs import Example
from backends.learners.college import CollegeConfig, CollegeLearner
from benchmarks.runs import RunOptions
from benchmarks.tasks import get_task

pytestmark = [pytest.mark.slow, pytest.mark.integration]

DEFGEN = Path(__file__).resolve().parents[2] / "benchmarks" / "sets" / "defgen.dev.jsonl"
GENERATOR_ALONE = CollegeConfig(lm_reader_weight=0.0)


@pytest.fixture(autouse=True)
def generator_alone(monkeypatch):
    """Benchmark runs in these tests give the college learner the generator alone."""
    default = benchmarks.runs.learner_config

    def config(name, options):
        return GENERATOR_ALONE if name == "college" else default(name, options)

    monkeypatch.setattr(benchmarks.runs, "learner_config", config)


def scores(task: str, limit: int | None) -> dict:
    task = get_task(task)
    options = RunOptions(
        data=tuple(Path(p) for p in task.default_data),
        learners=("centroid", "college"),
        device="cpu",
        limit=limit,
    )
    return {(r.learner, r.shots): r.metrics for r in task.run_function()(options)}


def test_college_ranks_the_definitional_nonce_word_far_above_the_centroid():
    # 200 of the 700 items: the margin the model card reports is wide enough to show there
    s = scores("nonce", 200)
    assert s["college", 1]["mrr"] > 2 * s["centroid", 1]["mrr"]
    assert s["college", 1]["median_rank"] < s["centroid", 1]["median_rank"] / 4


def test_college_beats_the_centroid_on_chimera_at_every_level():
    # at every level, so a generator that helps only with many passages fails
    s = scores("chimera", None)
    for level in (2, 4, 6):
        assert s["college", level]["spearman"] > s["centroid", level]["spearman"] + 0.03


def test_one_shot_definitions_rarely_repeat_the_new_word(real_lm):
    """A one-shot definition that says the new word again and again ("dax dax ...") is
    what the unlikelihood phase trains away (model card); the bound lets a few through
    and fails a generator that loops on most of these 40 items."""
    items = [json.loads(line) for line in DEFGEN.read_text().splitlines()][40:80]
    learner = CollegeLearner(GENERATOR_ALONE)
    embeddings = [
        learner.learn(real_lm, "dax", [Example(item["examples"][0].replace("<nonce>", "dax"))])
        for item in items
    ]
    texts = [d.text for d in define(real_lm, embeddings, max_new_tokens=24, decoding=GREEDY)]
    assert sum(text.count("dax") >= 2 for text in texts) <= 15
