"""CoLLEGe training losses on hand-made cases with known answers."""

from __future__ import annotations

import math

import pytest
import torch

from training.college_losses import base_rate_loss, contrastive_loss, regression_loss


def test_regression_is_zero_on_the_rescaled_reference():
    ref = torch.tensor([[3.0, 4.0]])  # norm 5
    assert float(regression_loss(torch.tensor([[0.6, 0.8]]), ref, norm=1.0)) == pytest.approx(0)


def test_regression_of_an_orthogonal_vector_and_of_a_short_one():
    # 1 - cos = 1 and the length is right: 1
    loss = regression_loss(torch.tensor([[0.0, 1.0]]), torch.tensor([[2.0, 0.0]]), norm=1.0)
    assert float(loss) == pytest.approx(1.0)
    # the right direction at half the length: (0.5 - 1)^2 = 0.25
    loss = regression_loss(torch.tensor([[0.5, 0.0]]), torch.tensor([[2.0, 0.0]]), norm=1.0)
    assert float(loss) == pytest.approx(0.25)


def test_base_rate_is_the_nonce_columns_share_of_the_cross_entropy():
    # one position, LM logits [2, 0] for the true token y=0 and another; nonce logit s = 1
    lm_logits, s = torch.tensor([2.0, 0.0]), 1.0
    with_nonce = -torch.log_softmax(torch.cat([lm_logits, torch.tensor([s])]), 0)[0]
    without = -torch.log_softmax(lm_logits, 0)[0]
    hidden = torch.tensor([[1.0, 0.0]])  # s = h . v
    loss = base_rate_loss(torch.tensor([[s, 5.0]]), hidden, torch.logsumexp(lm_logits, 0)[None])
    assert float(loss) == pytest.approx(float(with_nonce - without))


def test_contrastive_with_no_information_is_log_of_the_list_size():
    vocab = torch.eye(4)
    v = torch.zeros(1, 4) + 1.0  # equally near all four words
    assert float(contrastive_loss(v, vocab, torch.tensor([2]), tau=0.1)) == pytest.approx(
        math.log(4)
    )


def test_contrastive_prefers_the_own_word_and_ignores_scale():
    vocab = torch.eye(3)
    right = torch.tensor([[5.0, 0.0, 0.0]])
    wrong = torch.tensor([[0.0, 5.0, 0.0]])
    target = torch.tensor([0])
    assert float(contrastive_loss(right, vocab, target, tau=0.05)) < 1e-6
    assert float(contrastive_loss(wrong, vocab, target, tau=0.05)) == pytest.approx(20, abs=1e-3)
    assert float(contrastive_loss(right / 5, vocab, target, 0.05)) == pytest.approx(
        float(contrastive_loss(right, vocab, target, 0.05))
    )
