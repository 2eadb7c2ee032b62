"""The library on the real embedded models (Gemma 3 270M, converted once and cached)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from backends.definitions import slot_for
from backends.inputs import Example
from backends.learners import learner_names, load_learner
from backends.learners.token_tuning import TokenTuningConfig
from tests.readme import python_example

pytestmark = pytest.mark.integration

WUG = [
    "The wug hopped across the garden and pecked at the seeds.",
    "My daughter fed a wug some bread crumbs at the pond.",
]


def test_the_readmes_library_example_runs_as_written(capsys):
    exec(python_example("from backends import learn"), {})  # noqa: S102
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["centroid", "token_tuning"]


def test_cli_learns_with_every_learner_offline():
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    argv = [
        sys.executable,
        "-m",
        "backends",
        "learn",
        "--word",
        "wug",
        "--example",
        WUG[0],
        "--example",
        WUG[1],
        "--learner",
        "all",
        "--steps",
        "3",
        "--device",
        "cpu",
        "--real-word",
        "bird",
        "--json",
    ]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)
    assert [r["learner"] for r in record["learners"]] == learner_names()
    for r in record["learners"]:
        assert r["definition"].strip(), r
        assert len(r["neighbours"]["input"]) == 10
        assert r["timings"]["learn"] >= 0
    assert record["timings"]["define_batched"] > 0
    college = next(r for r in record["learners"] if r["learner"] == "college")
    assert college["info"]["note"].startswith("read as: "), college["info"]
    # the real word: the LM's own definitions of it, and each learner's cosine to it
    real = record["real_word"]
    # every learner's cosine but prompting's, whose vector is random (its prompt learns)
    assert real["word"] == "bird" and set(real["cosine"]) == set(learner_names()) - {"prompting"}
    assert all(text.strip() for text in real["definitions"].values())
    assert list(real["definitions"]) == list(real["says_itself"]) == ["oracle", "oracle_in_context"]


def test_the_real_word_is_defined_and_placed_on_the_map():
    from backends.pipeline import REAL_WORD, learn, map_points

    result = learn("wug", WUG, ["centroid", "college"], device="cpu", real_word="bird")
    known = result.known
    # college reads the examples as a bird's: by cosine to its vector, "bird" ranks higher
    # among WordNet's words than by cosine to the centroid's (Definitional Nonce's measure;
    # the raw cosine favours the centroid, made of the directions all words share)
    assert known.rank["college"] < known.rank["centroid"]
    assert known.ranked_among > 50_000 and set(known.rank) == set(known.similarity)
    assert "wug" not in known.definitions["oracle_in_context"]
    points, _method = map_points(result, "input")
    stars = [p.label for p in points if p.learned]
    assert stars == ["centroid", "college", f"{REAL_WORD}: bird"]
    assert learn("wug", WUG, ["centroid"], device="cpu", real_word=" ").known is None


def test_token_tuning_lowers_the_loss_on_the_real_lm(real_lm):
    examples = [Example(t) for t in WUG]
    emb = load_learner("token_tuning", TokenTuningConfig(steps=4)).learn(real_lm, "wug", examples)
    assert emb.info["losses"][-1] < emb.info["losses"][0]


def test_cache_raises_the_words_log_probability_on_the_real_lm(real_lm):
    emb = load_learner("cache").learn(real_lm, "wug", [Example(t) for t in WUG])
    slot, hooks = slot_for(real_lm, [emb])
    probe = [real_lm.encode("In the garden, a wug", "wug", real_lm.vocab_size)]
    position = probe[0].index(real_lm.vocab_size) - 1
    plain = real_lm.token_logprobs(probe, slot)[0][position]
    cached = real_lm.token_logprobs(probe, slot, hooks)[0][position]
    assert cached > plain


def test_learned_vectors_differ_between_learners_on_the_real_lm(real_lm):
    examples = [Example(t) for t in WUG]
    configs = {"token_tuning": TokenTuningConfig(steps=2)}
    vectors = {
        n: load_learner(n, configs.get(n)).learn(real_lm, "wug", examples) for n in learner_names()
    }
    flat = {n: torch.cat([e.input_vector, e.output_vector]) for n, e in vectors.items()}
    names = list(flat)
    assert all(
        not torch.allclose(flat[a], flat[b]) for i, a in enumerate(names) for b in names[i + 1 :]
    )


def test_the_int8_shortlist_is_on_by_default_and_defines_as_fp32(real_lm):
    from backends.definitions import define

    assert real_lm.head_int8 is not None  # NONCE_INT8_HEAD defaults to on, on the CPU
    wug = load_learner("centroid").learn(real_lm, "wug", [Example(s) for s in WUG])
    with_int8 = define(real_lm, [wug], max_new_tokens=16)
    layer, real_lm.head_int8 = real_lm.head_int8, None
    try:
        with_fp32 = define(real_lm, [wug], max_new_tokens=16)
    finally:
        real_lm.head_int8 = layer
    assert with_int8 == with_fp32
