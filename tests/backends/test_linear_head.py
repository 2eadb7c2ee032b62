"""college's linear head: pooled encoder features, the ridge fit, saving, and its blend."""

from __future__ import annotations

import pytest
import torch

from backends.learners.linear_head import (
    LinearHead,
    LinearHeadConfig,
    fit_ridge,
    pooled_features,
)


class MaskTokenizer:
    """Whitespace tokenizer with a mask token, returning what `pooled_features` reads."""

    mask_token, mask_token_id = "<mask>", 1

    def __init__(self):
        self.vocab = {"<pad>": 0, "<mask>": 1}

    def __call__(self, texts, padding, truncation, max_length, return_tensors):
        rows = [[self.vocab.setdefault(w, len(self.vocab)) for w in t.split()] for t in texts]
        width = max(len(r) for r in rows)
        batch = _Batch(
            input_ids=torch.tensor([r + [0] * (width - len(r)) for r in rows]),
            attention_mask=torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows]),
        )
        return batch


class _Batch(dict):
    def to(self, device):
        return self


class TableEncoder(torch.nn.Module):
    """Each token's state is its own row of a fixed table (no context), so pools are checkable."""

    def __init__(self, d: int = 4):
        super().__init__()
        self.table = torch.nn.Embedding(50, d)
        self.device = torch.device("cpu")

    def forward(self, input_ids, attention_mask):
        return type("Out", (), {"last_hidden_state": self.table(input_ids)})


def test_features_are_the_mask_state_then_the_sentence_mean():
    torch.manual_seed(0)
    encoder, tokenizer = TableEncoder(), MaskTokenizer()
    feats = pooled_features(encoder, tokenizer, ["a <mask> sat", "no mask here at all"], 16)
    assert feats.shape == (2, 8)
    table = encoder.table.weight
    a, sat = tokenizer.vocab["a"], tokenizer.vocab["sat"]
    torch.testing.assert_close(feats[0, :4], table[1])  # the mask token's own state
    torch.testing.assert_close(feats[0, 4:], table[[a, 1, sat]].mean(0))  # padding left out
    # a text without the mask (the word not found) pools all its tokens both ways
    torch.testing.assert_close(feats[1, :4], feats[1, 4:])


def test_ridge_recovers_a_linear_map_and_the_head_means_over_examples():
    torch.manual_seed(0)
    x = torch.randn(400, 6) * torch.tensor([1.0, 10, 0.1, 3, 1, 5])  # scales differ
    true_w, true_b = torch.randn(6, 3), torch.randn(3)
    y = x @ true_w + true_b
    head = LinearHead(None, fit_ridge(x, y, ridge=1e-6))
    torch.testing.assert_close(head.row(x[0]), y[0], atol=1e-4, rtol=1e-4)
    # what it writes leaves the targets' mean out: the word's own part
    torch.testing.assert_close(head(x[0]), y[0] - y.mean(0), atol=1e-4, rtol=1e-4)
    # n examples: the head reads their mean feature
    torch.testing.assert_close(
        head.row(x[:3]), x[:3].mean(0) @ true_w + true_b, atol=1e-4, rtol=1e-4
    )
    # a penalty shrinks the map towards the targets' mean
    flat = LinearHead(None, fit_ridge(x, y, ridge=1e9))
    torch.testing.assert_close(flat.row(x[0]), y.mean(0), atol=1e-2, rtol=1e-2)
    assert float(flat(x[0]).norm()) < 1e-2


def test_the_common_directions_are_the_targets_principal_ones_and_leave_on_request():
    torch.manual_seed(0)
    # targets that vary most along one known direction, then a second
    first, second = torch.nn.functional.normalize(torch.randn(2, 5), dim=-1)
    second = torch.nn.functional.normalize(second - (second @ first) * first, dim=0)
    coeffs = torch.randn(300, 2) * torch.tensor([10.0, 3.0])
    y = coeffs @ torch.stack([first, second]) + 0.01 * torch.randn(300, 5) + 2.0
    head = LinearHead(None, fit_ridge(torch.randn(300, 4), y, ridge=1.0, directions=3))
    assert head.common.shape == (3, 5)
    torch.testing.assert_close(head.common @ head.common.T, torch.eye(3), atol=1e-5, rtol=0)
    assert abs(float(head.common[0] @ first)) > 0.999  # largest first, the sign either way
    assert abs(float(head.common[1] @ second)) > 0.999
    v = torch.randn(5)
    torch.testing.assert_close(head.without_common(v, 0), v)
    out = head.without_common(v, 2)
    assert float((head.common[:2] @ out).abs().max()) < 1e-5  # nothing left along them
    # ... which are the targets' own two, up to their noise
    expected = (v @ first) * first + (v @ second) * second
    torch.testing.assert_close(v - out, expected, atol=1e-3, rtol=0)
    # rows of a matrix each lose theirs
    both = head.without_common(torch.stack([v, 2 * v]), 2)
    torch.testing.assert_close(both, torch.stack([out, 2 * out]))
    with pytest.raises(ValueError, match="keeps 3"):
        head.without_common(v, 4)


def test_save_and_load(tmp_path):
    torch.manual_seed(0)
    x = torch.randn(50, 4)
    config = LinearHeadConfig("mpnet-base", "tiny", d_enc=2, d_lm=3, ridge=1.0, words=50)
    head = LinearHead(config, fit_ridge(x, torch.randn(50, 3), ridge=1.0))
    head.save(tmp_path)
    loaded = LinearHead.load(tmp_path)
    assert loaded.config == config
    torch.testing.assert_close(loaded.row(x[0]), head.row(x[0]), atol=1e-3, rtol=1e-3)  # fp16
    torch.testing.assert_close(loaded.common, head.common)  # kept whole
    # a head saved before the directions were kept loads with none
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(tmp_path / "linear_head.safetensors"))
    del tensors["common"]
    save_file(tensors, str(tmp_path / "linear_head.safetensors"))
    assert LinearHead.load(tmp_path).common.shape == (0, 3)
    assert LinearHead.load(tmp_path / "none") is None


@pytest.mark.integration
def test_the_shipped_head_moves_colleges_input_vector_and_not_its_definition(real_lm):
    """Shipped beside the generator: the input vector is the reader's and the head's blend
    (at the LM's row length), the definition is written from the reader's vectors."""
    from backends.definitions import define
    from backends.inputs import Example
    from backends.learners.college import CollegeConfig, CollegeLearner

    examples = [
        Example("The blacksmith laid the glowing horseshoe on the florp and struck it."),
        Example("Sparks flew every time the hammer rang against the heavy iron florp."),
    ]
    blended = CollegeLearner().learn(real_lm, "florp", examples)
    alone = CollegeLearner(CollegeConfig(linear_head_weight=0)).learn(real_lm, "florp", examples)
    assert blended.info["linear_head"] and not alone.info["linear_head"]
    assert not torch.allclose(blended.input_vector, alone.input_vector)
    assert float(blended.input_vector.norm()) == pytest.approx(
        float(alone.input_vector.norm()), rel=1e-4
    )
    # the head's common directions are out of the blend, and only where asked
    head = CollegeLearner().linear_head(real_lm)
    n = CollegeConfig().common_directions
    assert blended.info["common_directions"] == n > 0 and alone.info["common_directions"] == 0
    along = head.common[:n] @ blended.input_vector.float().cpu()
    assert float(along.abs().max()) < 1e-4 * float(blended.input_vector.norm())
    kept = CollegeLearner(CollegeConfig(common_directions=0)).learn(real_lm, "florp", examples)
    assert float((head.common[:n] @ kept.input_vector.float().cpu()).abs().max()) > 1e-2
    # the reader's own vectors write the definition: its sharper reading, as without the head
    [(weight, vin, vout)] = blended.readings
    [(_, alone_in, alone_out)] = alone.readings
    assert weight == 1.0 and torch.equal(vin, alone_in) and torch.equal(vout, alone_out)
    assert define(real_lm, [blended])[0].text == define(real_lm, [alone])[0].text
    # where the definition reads the vectors themselves, they are kept as its reading
    forms = CollegeConfig(define_lexemes=False, fitted_from=0)
    plain = CollegeLearner(forms).learn(real_lm, "florp", examples)
    [(_, kept_in, kept_out)] = plain.readings
    vectors = CollegeLearner(
        CollegeConfig(define_lexemes=False, fitted_from=0, linear_head_weight=0)
    )
    bare = vectors.learn(real_lm, "florp", examples)
    assert bare.readings == [] and torch.equal(kept_in, bare.input_vector)
    assert torch.equal(kept_out, bare.output_vector)
