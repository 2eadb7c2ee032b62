"""Shared fixtures: a tiny randomly initialised Gemma-3-shaped LM for mechanics, the real
embedded LM for integration tests, and the rule that slow tests run only when asked."""

from __future__ import annotations

import os

import pytest
import torch

# A small closed vocabulary is enough to exercise every mechanism of the nonce slot.
TINY_WORDS = (
    "the a an is was of to and in on at by with from as it this that bird small big garden seeds "
    "fed bread pond sang night hopped across pecked some my daughter dog cat tree house water "
    "food plant animal person thing word defined used grow eat run red green blue fast slow "
    "sun moon river stone sky fish horse cow milk cheese apple car road city"
).split()


def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<eos>", "<bos>", "<unk>"]
    pieces = specials + [f"▁{w}" for w in TINY_WORDS] + [".", ",", '"', "▁."]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Metaspace(), pre_tokenizers.Punctuation()]
    )
    core.decoder = decoders.Metaspace()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        eos_token="<eos>",
        bos_token="<bos>",
        unk_token="<unk>",
    )


# The tiny LMs' shared shape (Gemma 3 here; tests of other architectures reuse it).
TINY_LM_SHAPE = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    pad_token_id=0,
    eos_token_id=1,
    bos_token_id=2,
)


def build_tiny_lm(seed: int = 0):
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    from backends.nonce_lm import NonceLM

    torch.manual_seed(seed)
    tokenizer = tiny_tokenizer()
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer),
        head_dim=16,
        max_position_embeddings=128,
        sliding_window=16,
        **TINY_LM_SHAPE,
    )
    model = Gemma3ForCausalLM(config).eval().requires_grad_(False)
    return NonceLM(model, tokenizer, "tiny")


@pytest.fixture(scope="session")
def tiny_lm():
    return build_tiny_lm()


@pytest.fixture(scope="session")
def real_lm():
    """The embedded default LM (converted once by `make setup`, then loaded in seconds)."""
    from backends.pipeline import load_lm

    return load_lm("gemma-3-270m", "cpu")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("NONCE_SLOW") == "1":
        return
    skip = pytest.mark.skip(reason="slow model-quality test: run with NONCE_SLOW=1 (make test-all)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
