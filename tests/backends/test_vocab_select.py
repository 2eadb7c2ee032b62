"""Block-wise argmax and top-k give torch's answers over a vocabulary-wide row."""

import pytest
import torch

from backends import vocab_select
from backends.vocab_select import BLOCK

WIDTHS = (262_144, 262_144 + 3, 64 * BLOCK + 100)  # whole blocks, and a tail of new words


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("rows", [1, 6])
def test_argmax_and_topk_match_torch_on_random_rows(width, rows):
    x = torch.randn(rows, width, generator=torch.Generator().manual_seed(width + rows))
    assert torch.equal(vocab_select.argmax(x), x.argmax(-1))
    assert torch.equal(vocab_select.topk_indices(x, 64), x.topk(64, dim=-1).indices)


def test_argmax_keeps_the_first_of_equal_maxima_and_reads_the_tail():
    x = torch.zeros(3, 262_150)
    x[0, [5, 262_149]] = 1.0  # a tie between a block and the tail: the first wins
    x[1, 262_149] = 2.0  # the tail alone holds the max
    x[2, [BLOCK + 7, 9 * BLOCK]] = 3.0  # a tie across blocks
    assert vocab_select.argmax(x).tolist() == [5, 262_149, BLOCK + 7]
    assert vocab_select.argmax(x).tolist() == x.argmax(-1).tolist()
    banned = torch.full((1, 262_147), float("-inf"))  # every token banned: torch says 0
    assert vocab_select.argmax(banned).tolist() == [0]


def test_topk_finds_values_crowded_into_one_block_and_the_tail():
    x = torch.randn(2, 262_147, generator=torch.Generator().manual_seed(0))
    x[0, 1000:1064] = torch.arange(64.0) + 10  # all of the top 64 in one block and its next
    x[1, -3:] = 20.0  # the new words' columns lead
    found = vocab_select.topk_indices(x, 64)
    assert set(found[0].tolist()) == set(range(1000, 1064))
    assert set(found[1, :3].tolist()) == {262_144, 262_145, 262_146}
    assert torch.equal(x.gather(-1, found), x.topk(64, dim=-1).values)  # largest first


def test_narrow_rows_go_to_torch():
    x = torch.randn(2, 100)
    assert torch.equal(vocab_select.argmax(x), x.argmax(-1))
    assert torch.equal(vocab_select.topk_indices(x, 64), x.topk(64, dim=-1).indices)
    assert vocab_select.topk_indices(x[:, :10], 64).shape == (2, 10)  # k past the width
