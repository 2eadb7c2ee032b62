"""CoLLEGe's LM episodes: the paper's queries, the definition-probe queries, a tuning
phase that trains the output head alone, and the unlikelihood of the new token in the
LM's own definitions."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from backends.definitions import PROMPT
from backends.learners.college import CollegeGenerator, GeneratorConfig
from backends.nonce_lm import NonceSlot
from tests.refusals import refused
from training.college import TrainConfig, frozen_but, parse_args, schedule
from training.college_data import Data, lm_episodes
from training.college_losses import episode_ids, lm_losses, unlikelihood_loss
from training.features import pad_features


def tiny_data() -> Data:
    words = ["bird", "cat"]
    sentences = [
        "a bird sang in the garden",
        "the bird pecked some seeds",
        "my cat was fed bread",
        "the cat hopped across the road",
    ]
    owner = [0, 0, 1, 1]
    empty = torch.zeros(len(words), 32)
    return Data(
        words=words,
        sentences=sentences,
        owner=owner,
        of_word=[[0, 1], [2, 3]],
        features=[torch.zeros(3, 8) for _ in sentences],
        glosses=[(0, "a small animal"), (3, "a small animal that was fed milk")],
        ref_in=empty,
        ref_out=empty,
        vocab=empty,
    )


def test_definition_queries_read_the_probe_then_the_support_sentences_gloss(tiny_lm):
    data, V = tiny_data(), tiny_lm.vocab_size
    cfg = replace(TrainConfig(), lm_batch=6, definitions=1.0)
    episodes, support, kinds = lm_episodes(tiny_lm, data, random.Random(0), cfg)
    assert len(episodes) == len(support) == 6
    assert kinds == ["definition"] * 6
    for e, (ep, s) in enumerate(zip(episodes, support)):
        gloss = dict(data.glosses)[s]  # the support sentence is the gloss's own example
        word = data.words[data.owner[s]]
        query = f"{PROMPT.format(word=word)} {gloss}."
        assert ep.nonce_id == V + e
        assert (ep.student, ep.teacher, ep.align) == episode_ids(tiny_lm, query, word, V + e)
        assert ep.student.count(V + e) == 1  # the probe names the word once, as the new token
        assert ep.align[0][0] == ep.student.index(V + e) - 1  # losses start where it is predicted


def test_without_definitions_the_query_is_another_sentence_of_the_word(tiny_lm):
    data, V = tiny_data(), tiny_lm.vocab_size
    cfg = replace(TrainConfig(), lm_batch=6, definitions=0.0)
    episodes, support, kinds = lm_episodes(tiny_lm, data, random.Random(0), cfg)
    for e, (ep, s) in enumerate(zip(episodes, support)):
        w = data.owner[s]
        (q,) = [q for q in data.of_word[w] if q != s]  # the word's other sentence
        expected = episode_ids(tiny_lm, data.sentences[q], data.words[w], V + e)
        assert (ep.student, ep.teacher) == expected[:2]
        assert V + e in ep.student
    assert kinds == ["sentence"] * 6


def test_the_query_loss_is_also_logged_per_kind_of_query(tiny_lm):
    torch.manual_seed(0)
    data = tiny_data()
    cfg = replace(TrainConfig(), lm_batch=8, definitions=0.5)
    episodes, _, kinds = lm_episodes(tiny_lm, data, random.Random(1), cfg)
    assert set(kinds) == {"definition", "sentence"}
    vin, vout = torch.randn(2, len(episodes), tiny_lm.dim)
    slot = NonceSlot(vin, vout)
    total, parts = lm_losses(tiny_lm, slot, episodes, cfg, torch.Generator().manual_seed(0), kinds)
    plain, without = lm_losses(tiny_lm, slot, episodes, cfg, torch.Generator().manual_seed(0))
    assert torch.allclose(total, plain)  # logging only: the loss is unchanged
    assert set(parts) - set(without) == {"ce_definition", "ce_sentence"}
    # ce_query is a mean over query tokens, so the per-kind means weighted by tokens make it
    tokens = {
        k: sum(len(ep.student) - 1 for ep, q in zip(episodes, kinds) if q == k) for k in kinds
    }
    weighted = sum(parts[f"ce_{k}"] * n for k, n in tokens.items()) / sum(tokens.values())
    assert weighted == pytest.approx(parts["ce_query"], rel=1e-5)
    assert parts["ce_definition"] != pytest.approx(parts["ce_sentence"])


def test_training_only_the_output_head_leaves_the_input_vector_and_the_lm_untouched(tiny_lm):
    torch.manual_seed(0)
    data = tiny_data()
    data.features = [torch.randn(3, 16) for _ in data.sentences]
    gcfg = GeneratorConfig(d_enc=16, d_lm=tiny_lm.dim, n_heads=2, d_ff=32)
    generator = CollegeGenerator(gcfg)
    trained = frozen_but(generator, "head_out")
    assert trained == list(generator.head_out.parameters())
    cfg = replace(TrainConfig(), lm_batch=3, definitions=0.5)
    episodes, support, _ = lm_episodes(tiny_lm, data, random.Random(0), cfg)
    x, m = pad_features([data.features[s] for s in support], "cpu")
    group = torch.arange(len(support))
    generator.eval()
    vin, vout = generator(x, m, group, len(support))
    assert not vin.requires_grad  # so the LM's hidden states carry no graph: a forward pass
    loss, _ = lm_losses(tiny_lm, NonceSlot(vin, vout), episodes, cfg, torch.Generator())
    loss.backward()
    for name, p in generator.named_parameters():
        assert (p.grad is not None) == name.startswith("head_out."), name
    torch.optim.AdamW(trained, lr=0.1).step()
    vin_after, vout_after = generator(x, m, group, len(support))
    assert torch.equal(vin_after, vin)
    assert not torch.allclose(vout_after, vout)


def test_training_only_an_unknown_part_is_refused():
    with pytest.raises(ValueError, match="head_in, head_out"):
        frozen_but(CollegeGenerator(GeneratorConfig(d_enc=16, d_lm=8, n_heads=2)), "heads")


def looping_output_vectors(lm, n: int) -> torch.Tensor:
    """Output vectors the LM will predict wherever it reads the definition probe: along
    the probe's last hidden state, long enough to beat every word's logit."""
    ids, mask = lm.pad([lm.encode(PROMPT.format(word="dax"))], left=False)
    h = lm.hidden(ids, mask, None).last_hidden_state[0, -1]
    return (h / h.norm() * 10).repeat(n, 1)


def test_unlikelihood_teaches_a_looping_output_vector_to_stop_being_said(tiny_lm):
    torch.manual_seed(0)
    v_in = torch.randn(2, tiny_lm.dim, requires_grad=True)
    v_out = looping_output_vectors(tiny_lm, 2).requires_grad_()
    loss, parts = unlikelihood_loss(tiny_lm, v_in, v_out, max_new_tokens=6)
    assert parts["nonce_emitted"] == 6  # every greedy token is the new one: a loop
    assert loss.item() > 1
    loss.backward()
    assert v_in.grad is None  # the states are read with the vectors fixed: no graph to v_in
    assert v_out.grad.norm() > 0

    optimizer = torch.optim.Adam([v_out], lr=0.3)
    for _ in range(30):
        optimizer.zero_grad()
        loss, parts = unlikelihood_loss(tiny_lm, v_in, v_out, max_new_tokens=6)
        loss.backward()
        optimizer.step()
    after, parts = unlikelihood_loss(tiny_lm, v_in, v_out, max_new_tokens=6)
    assert parts["nonce_emitted"] == 0
    assert after.item() < 0.01


def test_the_unlikelihood_phase_trains_the_output_head_on_one_sentence_concepts(tiny_lm):
    torch.manual_seed(0)
    data = tiny_data()
    data.features = [torch.randn(3, 16) for _ in data.sentences]
    generator = CollegeGenerator(GeneratorConfig(d_enc=16, d_lm=tiny_lm.dim, n_heads=2, d_ff=32))
    trained = frozen_but(generator, "head_out")
    generator.eval()
    x, m = pad_features([data.features[s] for s in (0, 2)], "cpu")
    vin, vout = generator(x, m, torch.arange(2), 2)
    loss, _ = unlikelihood_loss(tiny_lm, vin, vout, max_new_tokens=4)
    loss.backward()
    for name, p in generator.named_parameters():
        assert (p.grad is not None) == name.startswith("head_out."), name
    assert any(p.grad.norm() > 0 for p in trained)


def test_the_schedule_warms_up_then_decays_or_stays_and_refuses_other_names():
    linear = schedule(replace(TrainConfig(), steps=10, warmup=2))
    assert [linear(s) for s in (0, 1, 2, 6, 10)] == [0.5, 1.0, 1.0, 0.5, 0.0]
    constant = schedule(replace(TrainConfig(), steps=10, warmup=0, schedule="constant"))
    assert [constant(s) for s in (0, 5, 9)] == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="linear"):
        schedule(replace(TrainConfig(), schedule="cosine"))


def test_the_command_line_sets_every_field_and_booleans_both_ways():
    argv = ["--steps", "80", "--only", "head_out", "--fixed-length-in", "--resume"]
    cfg, resume = parse_args(argv)
    assert (cfg.steps, cfg.only, cfg.fixed_length_in, cfg.fixed_length_out, resume) == (
        80,
        "head_out",
        True,
        False,
        True,
    )
    cfg, resume = parse_args(["--no-fixed-length-in", "--unlikelihood", "0.5"])
    assert (cfg.fixed_length_in, cfg.unlikelihood, resume) == (False, 0.5, False)
    assert parse_args([])[0] == TrainConfig()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--lr", "nan"], "--lr"),
        (["--lr", "-1"], "--lr"),
        (["--lr", "0"], "--lr"),
        (["--tau", "inf"], "--tau"),
        (["--words", "-5"], "--words"),
        (["--batch", "0"], "--batch"),
        (["--ckpt-every", "0"], "--ckpt-every"),
        (["--steps", "-1"], "--steps"),
        (["--max-minutes", "-1"], "--max-minutes"),
        (["--regression", "nan"], "--regression"),
        (["--definitions", "1.5"], "--definitions"),
        (["--phase", "bogus"], "--phase"),
        (["--schedule", "cosine"], "--schedule"),
        (["--only", "heads"], "--only"),
        (["--init", "/nonexistent-generator"], "--init"),
        (["--steps", "0"], "--steps"),  # from scratch: it would save an untrained generator
    ],
)
def test_bad_arguments_are_refused_before_any_corpus_or_model_loads(capsys, argv, message):
    assert message in refused(capsys, parse_args, argv, "python -m training.college")


def test_the_model_cards_commands_still_parse():
    root = Path(__file__).resolve().parents[2]
    shipped = str(root / "assets/college/minilm-l6__gemma-3-270m")
    cfg, _ = parse_args(["--init", shipped, "--phase", "unlikelihood", "--only", "head_out"])
    assert (cfg.phase, cfg.only, cfg.init) == ("unlikelihood", "head_out", shipped)
    cfg, _ = parse_args(["--init", shipped, "--phase", "fixed_length", "--steps", "0"])
    assert (cfg.phase, cfg.steps) == ("fixed_length", 0)
    cfg, _ = parse_args(["--lm-every", "0", "--eval-every", "0", "--warmup", "0", "--lr", "1e-3"])
    assert (cfg.lm_every, cfg.eval_every, cfg.warmup, cfg.lr) == (0, 0, 0, 1e-3)
    assert isinstance(cfg.lr, float) and isinstance(cfg.warmup, int)
