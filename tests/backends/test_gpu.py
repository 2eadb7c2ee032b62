"""The library on a GPU, where there is one: the same tiny LM on CUDA must give the learners'
vectors, the greedy definitions' logits and CoLLEGe's training losses that it gives on the
CPU, and keep every tensor on the LM's device (a CPU index into a CUDA tensor is the usual
way such code breaks). Skipped without CUDA; run on a GPU machine with
`python -m pytest tests/backends/test_gpu.py`."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
import torch

from backends.definitions import PROMPT, define
from backends.inputs import Example
from backends.learners.cache import CacheConfig, CacheLearner
from backends.learners.centroid import CentroidLearner
from backends.learners.college import CollegeGenerator, GeneratorConfig
from backends.learners.definition_reader import DefinitionReaderLearner
from backends.learners.prompting import PromptingLearner
from backends.learners.token_tuning import TokenTuningConfig, TokenTuningLearner
from backends.nonce_lm import NonceSlot
from tests.conftest import build_tiny_lm
from training.college import TrainConfig
from training.college_data import lm_episodes
from training.college_losses import (
    base_rate_loss,
    contrastive_loss,
    lm_losses,
    regression_loss,
    unlikelihood_loss,
)
from training.features import pad_features

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
]

EXAMPLES = [
    Example("the wug hopped across the garden and pecked at seeds ."),
    Example("my daughter fed a wug some bread at the pond ."),
]


@pytest.fixture(scope="module")
def lms():
    """The same weights on both devices, in float32, with TF32 off so they agree closely."""
    torch.backends.cuda.matmul.allow_tf32 = False
    cpu, gpu = build_tiny_lm(), build_tiny_lm()
    gpu.model.to("cuda")
    assert gpu.device.type == "cuda"
    return cpu, gpu


# Every learner but college, whose encoder (MiniLM) is not in a bare GPU image; its
# generator and training losses are checked below. Those marked True read WordNet
# (token tuning's replay pool, the cache's background text, the definition reader's
# glosses) and are skipped where it is not installed.
LEARNERS = {
    "centroid": (CentroidLearner, False),
    "prompting": (PromptingLearner, False),
    "token_tuning, no replay": (
        lambda: TokenTuningLearner(TokenTuningConfig(steps=5, replay_per_step=0)),
        False,
    ),
    "token_tuning": (lambda: TokenTuningLearner(TokenTuningConfig(steps=5)), True),
    "cache": (lambda: CacheLearner(CacheConfig(background_sentences=20)), True),
    "definition_reader": (DefinitionReaderLearner, True),
}


@pytest.mark.parametrize("name", sorted(LEARNERS))
def test_each_learner_gives_the_cpus_vectors_and_definition_on_the_gpu(
    lms, name, tmp_path, monkeypatch
):
    make, reads_wordnet = LEARNERS[name]
    if reads_wordnet:
        from backends import lexicon

        try:
            lexicon.wordnet()
        except RuntimeError as err:
            pytest.skip(str(err))
    learned = []
    for lm in lms:  # one cache folder per device: the cache's background store is cached
        monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path / lm.device.type))
        learned.append(make().learn(lm, "wug", EXAMPLES))
    on_cpu, on_gpu = learned
    texts = [define(lm, [e], max_new_tokens=8)[0].text for lm, e in zip(lms, learned)]
    assert texts[1] == texts[0]
    for a, b in (
        (on_cpu.input_vector, on_gpu.input_vector),
        (on_cpu.output_vector, on_gpu.output_vector),
    ):
        torch.testing.assert_close(b.cpu(), a.cpu(), rtol=1e-3, atol=1e-4)


def test_definitions_are_generated_on_the_gpu_from_the_same_logits(lms):
    cpu, gpu = lms
    embs = [CentroidLearner().learn(lm, "wug", EXAMPLES) for lm in (cpu, gpu)]
    texts = [define(lm, [e], max_new_tokens=8)[0].text for lm, e in zip((cpu, gpu), embs)]
    assert texts[1] == texts[0]
    ids = cpu.encode(PROMPT.format(word="wug"), "wug", cpu.vocab_size)
    logits = []
    for lm, e in zip((cpu, gpu), embs):
        slot = NonceSlot(e.input_vector[None].to(lm.device), e.output_vector[None].to(lm.device))
        x, m = lm.pad([ids], left=False)
        logits.append(lm.logits(lm.hidden(x, m, slot).last_hidden_state[0, -1], slot).cpu())
    torch.testing.assert_close(logits[1], logits[0], rtol=1e-3, atol=1e-3)


def test_the_generator_and_its_training_losses_run_and_agree_on_the_gpu(lms):
    """Every loss `training.college` sums, with gradients, on both devices."""
    from tests.training.test_episodes import tiny_data

    data = tiny_data()
    torch.manual_seed(0)
    data.features = [torch.randn(3, 16) for _ in data.sentences]
    cfg = replace(TrainConfig(), lm_batch=3, definitions=0.5)
    episodes, support, kinds = lm_episodes(lms[0], data, random.Random(0), cfg)
    gcfg = GeneratorConfig(d_enc=16, d_lm=lms[0].dim, n_heads=2, d_ff=32, dropout=0.0)
    torch.manual_seed(0)
    template = CollegeGenerator(gcfg).state_dict()
    results = []
    for lm in lms:
        generator = CollegeGenerator(gcfg).to(lm.device)
        generator.load_state_dict(template)
        x, m = pad_features([data.features[s] for s in support], lm.device)
        vin, vout = generator(x, m, torch.arange(len(support), device=lm.device), len(support))
        assert vin.device == lm.device
        ref = torch.randn(len(support), lm.dim, generator=torch.Generator().manual_seed(1))
        ref = ref.to(lm.device)
        states = torch.randn(5, lm.dim, generator=torch.Generator().manual_seed(2)).to(lm.device)
        lm_loss, _ = lm_losses(lm, NonceSlot(vin, vout), episodes, cfg, torch.Generator(), kinds)
        ul, _ = unlikelihood_loss(lm, vin, vout, max_new_tokens=4)
        losses = [
            lm_loss,
            ul,
            regression_loss(vin, ref, 1.0),
            contrastive_loss(vout, ref, torch.arange(len(support), device=lm.device), 0.1),
            base_rate_loss(vout, states, torch.zeros(5, device=lm.device)),
        ]
        sum(losses).backward()
        grads = torch.cat([p.grad.flatten().cpu() for p in generator.parameters()])
        results.append((torch.stack([v.detach().cpu() for v in losses]), grads))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(results[1][1], results[0][1], rtol=1e-2, atol=1e-4)


def test_the_negative_bank_is_read_on_the_gpu_as_on_the_cpu(lms, tmp_path, monkeypatch):
    from training.features import negative_bank

    sentences = ["the bird sang in the garden .", "my dog ate some bread at the pond ."]
    banks = []
    for lm in lms:  # one cache folder per device: the bank is cached by LM name
        monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path / lm.device.type))
        banks.append(negative_bank(lm, sentences))
    assert banks[1][0].device.type == "cpu"  # banked on the CPU, moved to the device at use
    for a, b in zip(*banks):
        torch.testing.assert_close(b, a, rtol=1e-3, atol=1e-4)


def test_the_lm_reader_scores_the_same_candidates_on_the_gpu(lms):
    """College's second reader (backends/learners/lm_reader.py) on both devices: slot, blank
    prompt, proposal and right-context scores, the shared shortlist and its exact re-read."""
    from backends.learners.lm_reader import ReaderConfig, candidate_scores

    # Scaled to the tiny vocabulary: a shortlist and an exact re-read narrower than the pool.
    config = ReaderConfig(from_slot=8, from_blank=8, exact_right=3, right_shortlist=12)
    examples = [*EXAMPLES, Example("wug sang at night in the tree .")]
    proposal = lms[0].input_matrix[lms[0].encode(" bird", bos=False)[0]]
    scored = []
    for lm in lms:
        rows, scores = candidate_scores(lm, "wug", examples, config, proposal.to(lm.device))
        assert rows.device == scores.device == lm.device
        scored.append((rows.cpu(), scores.cpu()))
    assert scored[1][0].tolist() == scored[0][0].tolist()
    torch.testing.assert_close(scored[1][1], scored[0][1], rtol=1e-3, atol=1e-3)


def test_the_cuda_graph_replays_the_lean_step_and_transformers_forward(lms):
    """Generations through transformers' forward, the lean step and its CUDA graph agree,
    rows finishing early included; the graph is really recorded (not the eager fallback)."""
    from backends.decode_step import DecodeStep, GraphedStep, decode_step
    from tests.backends.test_nonce_lm import random_slot

    _, gpu = lms
    v = gpu.vocab_size
    slot = random_slot(gpu, 2, seed=5)
    slot = NonceSlot(slot.inputs.cuda(), slot.outputs.cuda())
    prompts = [
        gpu.encode("the wug is", "wug", v),
        gpu.encode("a big wug sang at night", "wug", v + 1),
    ]

    def stop(ids):
        return len(ids) >= 2 + ids[0] % 7

    out = {}
    for lean, graphs in ((False, False), (True, False), (True, True)):
        gpu.lean_steps, gpu.cuda_graphs = lean, graphs
        out[lean, graphs] = gpu.generate(
            prompts, slot, max_new_tokens=20, stop=stop, nonce_of_row=[v, v + 1]
        )
    gpu.lean_steps, gpu.cuda_graphs = True, True
    assert out[True, True] == out[True, False] == out[False, False]
    assert not gpu.grouping_prompts()  # launches, not positions, are a GPU's cost
    with torch.no_grad():
        _, cache, mask = gpu.prefill(prompts, slot)
        last = mask.sum(-1, keepdim=True) - 1
        graphed = decode_step(gpu.model, cache, mask, last, 8, True)
        eager = DecodeStep(gpu.model, cache, mask, last, 8)
        assert isinstance(graphed, GraphedStep)
        for token in (5, 9, v, 7):
            embeds = gpu.embed(torch.full((2, 1), token, device="cuda"), slot)
            assert torch.allclose(graphed.step(embeds), eager.step(embeds), atol=1e-5)
