"""The lean decoding step (backends/decode_step.py) is transformers' Gemma 3 arithmetic:
the same hidden states step after step, the same generations, and the framework's path
wherever it does not apply."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch

from backends.decode_step import DecodeStep, rotate, rotation, supports
from backends.decoding import Decoding
from tests.backends.test_nonce_lm import random_slot


@contextmanager
def steps(lm, lean: bool):
    before, lm.lean_steps = lm.lean_steps, lean
    try:
        yield
    finally:
        lm.lean_steps = before


def padded_prompts(lm):
    v = lm.vocab_size
    return [
        lm.encode("the wug is", "wug", v),
        lm.encode("my daughter fed the wug some bread and the wug sang at night", "wug", v + 1),
        lm.encode("wug", "wug", v + 2),
    ]


@torch.no_grad()
def test_each_step_gives_transformers_hidden_states(tiny_lm):
    """Past the sliding window (16 here) too, with left padding and a nonce in the slot."""
    slot = random_slot(tiny_lm, 3, seed=3)
    prompts = padded_prompts(tiny_lm)
    hidden, cache, mask = tiny_lm.prefill(prompts, slot)
    positions = mask.sum(-1, keepdim=True) - 1
    lean = DecodeStep(tiny_lm.model, cache, mask, positions, new_tokens=24)  # copies the cache
    g = torch.Generator().manual_seed(0)
    for _ in range(24):
        ids = torch.randint(4, tiny_lm.vocab_size + 3, (len(prompts), 1), generator=g)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        positions = positions + 1
        out = tiny_lm.hidden(ids, mask, slot, past=cache, positions=positions)
        expected = out.last_hidden_state[:, -1]
        got = lean.step(tiny_lm.embed(ids, slot))
        assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()
    assert mask.shape[1] > tiny_lm.model.config.sliding_window + 8


def test_rope_by_roll_is_transformers_rope_bit_for_bit():
    """`rotate` moves rotate_half's sign onto the sine: the same products, the same bits."""
    from transformers.models.gemma3.modeling_gemma3 import apply_rotary_pos_emb

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(3, 4, 1, 256, generator=g), torch.randn(3, 1, 1, 256, generator=g)
    angles = torch.rand(3, 1, 128, generator=g) * 100
    cos, sin = torch.cat([angles.cos()] * 2, -1), torch.cat([angles.sin()] * 2, -1)
    expected_q, expected_k = apply_rotary_pos_emb(q, k, cos, sin)
    prepared = rotation(cos, sin)
    assert torch.equal(rotate(q, *prepared), expected_q)
    assert torch.equal(rotate(k, *prepared), expected_k)


def test_generations_are_the_same_through_either_step(tiny_lm):
    """Greedy and with the decoding controls; rows finishing early leave either way."""
    slot = random_slot(tiny_lm, 3, seed=4)
    prompts = padded_prompts(tiny_lm)
    rows = [tiny_lm.vocab_size + i for i in range(3)]

    def stop(ids):
        return len(ids) >= 2 + ids[0] % 7

    for kwargs in (
        {"max_new_tokens": 20},
        {"max_new_tokens": 12, "stop": stop},
        {"max_new_tokens": 12, "decoding": Decoding(), "banned": [[r] for r in rows]},
    ):
        out = {}
        for lean in (False, True):
            with steps(tiny_lm, lean):
                out[lean] = tiny_lm.generate(prompts, slot, nonce_of_row=rows, **kwargs)
        assert out[True] == out[False]
        if "stop" in kwargs:  # rows really did finish at different steps
            assert len({len(o) for o in out[True]}) > 1


def test_the_lean_step_is_used_and_its_buffers_never_grow(tiny_lm, monkeypatch):
    """Generation goes through the step (not transformers' forward) after the prompt."""
    calls = []
    real = DecodeStep.step

    def counted(self, embeds):
        calls.append(tuple(k.shape for k in self.keys))
        return real(self, embeds)

    monkeypatch.setattr(DecodeStep, "step", counted)
    with steps(tiny_lm, True):
        out = tiny_lm.generate([tiny_lm.encode("the bird sang")], max_new_tokens=6)
    assert len(calls) == len(out[0]) - 1
    assert len(set(calls)) == 1  # the same buffers every step


def test_other_architectures_decode_through_transformers():
    from transformers import LlamaConfig, LlamaForCausalLM

    from backends.nonce_lm import NonceLM
    from tests.conftest import TINY_LM_SHAPE, build_tiny_lm, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), max_position_embeddings=64, **TINY_LM_SHAPE)
    llama = NonceLM(LlamaForCausalLM(config).eval(), tokenizer, "tiny-llama")
    assert not supports(llama.model) and supports(build_tiny_lm().model)
    assert len(llama.generate([llama.encode("the bird sang")], max_new_tokens=4)[0]) == 4


def test_lean_steps_setting_is_on_unless_turned_off(monkeypatch):
    from backends.settings import load_settings

    monkeypatch.delenv("NONCE_LEAN_STEPS", raising=False)
    assert load_settings().lean_steps
    monkeypatch.setenv("NONCE_LEAN_STEPS", "0")
    assert not load_settings().lean_steps


def test_real_lm_definitions_are_the_same_through_either_step(real_lm):
    """The embedded Gemma 3 270M with its CPU kernels (int8 head, packed body, the step
    reading fp16 weights), word for word."""
    from backends.definitions import DEFAULT_DECODING

    prompts = [
        real_lm.encode('The word "anvil" is defined as'),
        real_lm.encode('The blacksmith struck the iron. The word "forge" is defined as'),
        real_lm.encode('The word "sturdy" is defined as'),
    ]
    out = {}
    for lean in (False, True):
        with steps(real_lm, lean):
            out[lean] = real_lm.generate(prompts, max_new_tokens=24, decoding=DEFAULT_DECODING)
    assert out[True] == out[False]


def three_steps(lm, slot, prompts, **products):
    """(the lean step's final states, transformers' forward's) for three tokens after the
    prompts, the step reading the blocks through `products` (`packed=` or `half=`), every
    block's products read jointly or from the fp16 copies."""
    hidden, cache, mask = lm.prefill(prompts, slot)
    positions = mask.sum(-1, keepdim=True) - 1
    lean = DecodeStep(lm.model, cache, mask, positions, new_tokens=6, **products)
    assert all(f is not None for f in lean.qkv + lean.gate_up)
    if "half" in products:  # o and down too
        assert all(f is not None for f in lean.o + lean.down)
    for token in (5, 9, 11):
        ids = torch.full((len(prompts), 1), token)
        mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=1)
        positions = positions + 1
        expected = lm.hidden(ids, mask, slot, past=cache, positions=positions).last_hidden_state
        yield lean.step(lm.embed(ids, slot)), expected[:, -1]


@torch.no_grad()
def test_joint_products_give_what_the_separate_layers_give():
    """With packed CPU linears, each block's q, k, v and its gate and up are read as one
    product each: transformers' hidden states (rounding apart), and the same generations
    as with the five products apart."""
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm(seed=5)  # its own LM: packing reroutes the layers it is given
    lm.use_packed_linears()
    slot = random_slot(lm, 3, seed=5)
    prompts = padded_prompts(lm)
    for got, expected in three_steps(lm, slot, prompts, packed=lm.packed):
        assert torch.allclose(got, expected, atol=1e-4), (got - expected).abs().max()

    rows = [lm.vocab_size + i for i in range(3)]
    out = {}
    for joint in (False, True):
        lm.packed.joint_products = joint
        out[joint] = lm.generate(prompts, slot, nonce_of_row=rows, max_new_tokens=12)
    assert out[True] == out[False]
    layers = len(lm.model.base_model.layers)
    assert len(lm.packed._joint) == 2 * layers  # built once, reused by every later step


@torch.no_grad()
def test_fp16_step_weights_stay_near_the_fp32_states():
    """The step reading the blocks' fp16 copies (backends/half_body.py): every product of
    every block comes from them, and the hidden states stay within fp16 weights' rounding
    of transformers' fp32 forward."""
    from backends.half_body import HalfBody
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm(seed=6)
    half = HalfBody(lm.model.base_model)
    linears = [m for m in lm.model.base_model.modules() if isinstance(m, torch.nn.Linear)]
    assert half.replaced == sum(m.weight.numel() * 4 for m in linears)
    assert half.nbytes * 2 == half.replaced
    slot = random_slot(lm, 3, seed=6)
    for got, expected in three_steps(lm, slot, padded_prompts(lm), half=half):
        error = (got - expected).abs().max()
        assert 0 < error < 1e-2 * expected.abs().max(), error  # rounded, and only a little


def test_generation_reads_the_fp16_weights_when_the_lm_has_them(monkeypatch):
    """Each decoding step's products come from the LM's `HalfBody`, four per block."""
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm(seed=7)
    lm.use_half_body()
    calls = []
    products = lm.half_body.products

    def counted(*modules):
        read = products(*modules)

        def forward(x):
            calls.append(len(modules))
            return read(x)

        return forward

    monkeypatch.setattr(lm.half_body, "products", counted)
    out = lm.generate([lm.encode("the bird sang")], max_new_tokens=4)
    blocks = len(lm.model.base_model.layers)
    assert len(calls) == 4 * blocks * (len(out[0]) - 1)  # the first token is the prompt's
    assert sorted(set(calls)) == [1, 2, 3]


def test_half_body_setting_is_on_unless_turned_off(monkeypatch):
    from backends.settings import load_settings

    monkeypatch.delenv("NONCE_HALF_BODY", raising=False)
    assert load_settings().half_body
    monkeypatch.setenv("NONCE_HALF_BODY", "off")
    assert not load_settings().half_body
    monkeypatch.setenv("NONCE_HALF_BODY", "False")  # any case
    assert not load_settings().half_body
    monkeypatch.setenv("NONCE_HALF_BODY", "maybe")  # refused, not read as on
    with pytest.raises(ValueError, match="NONCE_HALF_BODY='maybe'"):
        load_settings()
    monkeypatch.delenv("NONCE_HALF_BODY")
    monkeypatch.setenv("NONCE_CPU_THREADS", "-3")
    with pytest.raises(ValueError, match="NONCE_CPU_THREADS"):
        load_settings()
