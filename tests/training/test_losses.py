"""CoLLEGe training losses on hand-made cases with known answers."""

from __future__ import annotations

import math

import pytest
import torch

from training.college_losses import contrastive_loss, regression_loss


def test_regression_is_zero_on_the_rescaled_reference():
    ref = torch.tensor([[3.0, 4.0]])  # norm 5
    assert float(regression_loss(torch.tensor([[0.6, 0.8]]), ref, norm=1.0)) == pytest.approx(0)


def test_regression_of_an_orthogonal_vector():
    # 1 - cos = 1; squared error between [0, 1] and [1, 0] = 2
    loss = regression_loss(torch.tensor([[0.0, 1.0]]), torch.tensor([[2.0, 0.0]]), norm=1.0)
    assert float(loss) == pytest.approx(3.0)


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
