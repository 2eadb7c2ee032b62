"""Argmax and top-k over a 262k-token vocabulary, read block by block: torch's answers, faster.

Every greedy token takes one argmax over its row of next-token scores, and the int8 output
layer one top-64 (its shortlist, backends/int8_head.py). On this CPU torch's `argmax` over
262 144 floats takes about 220 us a row and `topk(64)` about 440 us, while a plain max
over the same floats takes 12 us: the kernels that keep indices are not vectorised, the
max reduction is. So both are done here through block maxima. The vocabulary is cut into
blocks of `BLOCK`; each block's max is one vectorised reduction; then only the blocks that
can hold the answer are read with the index-keeping kernels:

- argmax: the first block whose max is the row's max, then the first index of that max in
  it: the first index of the row's max, as torch's argmax gives.
- top-k: a value in the row's top k has at most k - 1 values above it, so at most k - 1
  blocks have a larger max, and its own block is among the k blocks with the largest
  maxima. The top k of those k blocks' values are the row's top k (ties aside).

Columns past the last whole block (the new words' columns after the vocabulary) are read
as they are. Rows narrower than a few blocks, and tensors on a GPU (whose argmax is fast,
where each extra kernel is a launch), go to torch directly.
"""

from __future__ import annotations

import torch

BLOCK = 256


def _blocks(x: torch.Tensor) -> tuple[torch.Tensor, int]:
    """[R, V] -> ([R, V // BLOCK, BLOCK] view of its whole blocks, the width they cover)."""
    rows, width = x.shape
    whole = width // BLOCK * BLOCK
    return x[:, :whole].reshape(rows, -1, BLOCK), whole


def argmax(x: torch.Tensor) -> torch.Tensor:
    """[R, V] -> [R] index of each row's max (its first, as `torch.argmax`)."""
    if x.dim() != 2 or x.shape[1] < 4 * BLOCK or x.device.type != "cpu":
        return x.argmax(-1)
    blocks, whole = _blocks(x)
    rows = torch.arange(x.shape[0], device=x.device)
    best = blocks.amax(-1).argmax(-1)  # [R] the first block holding the max
    index = best * BLOCK + blocks[rows, best].argmax(-1)
    if whole < x.shape[1]:  # the tail after the whole blocks wins only if strictly larger
        top, at = x[:, whole:].max(-1)
        index = torch.where(top > x[rows, index], whole + at, index)
    return index


def topk_indices(x: torch.Tensor, k: int) -> torch.Tensor:
    """[R, V] -> [R, k] indices of each row's k largest values, largest first (the set
    `torch.topk` gives, ties aside)."""
    if x.dim() != 2 or x.shape[1] < 4 * k * BLOCK or x.device.type != "cpu":
        return x.topk(min(k, x.shape[-1]), dim=-1).indices
    blocks, whole = _blocks(x)
    chosen = blocks.amax(-1).topk(k, dim=-1).indices  # [R, k]
    offsets = torch.arange(BLOCK, device=x.device)
    candidates = (chosen[..., None] * BLOCK + offsets).reshape(x.shape[0], -1)  # [R, k * BLOCK]
    if whole < x.shape[1]:
        tail = torch.arange(whole, x.shape[1], device=x.device).expand(x.shape[0], -1)
        candidates = torch.cat([candidates, tail], dim=-1)
    best = x.gather(-1, candidates).topk(k, dim=-1).indices
    return candidates.gather(-1, best)
