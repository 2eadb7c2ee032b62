"""The LM's output layer read as int8 to draw up candidates; the next token chosen in fp32.

A greedy token of Gemma 3 270M reads its 262k x 640 output layer once: at fp32 that is
0.67 GB, over half of the token's bytes, and with six learners' rows in one batch the
layer turns compute-bound on a CPU (measured here on one thread: 58 ms for one row, 145 ms
for six). Read as int8 (fbgemm, one scale per vocabulary row) it costs 16 and 27 ms, plus about
10 ms for the shortlist below.

Int8 logits alone changed 13 of 40 greedy dev definitions: near-ties flip under rounding
("goods or services" / "goods and services"). So here they only shortlist: each row's
`shortlist` highest int8 logits are re-scored with the exact fp32 rows of the layer, as an
IVF-PQ index re-ranks its candidates by exact distance (backends/knn_store.py). The chosen
token is the fp32 argmax whenever that token is among the int8 top `shortlist`: the
rounding error (a few hundredths of a logit) is far smaller than the gap between a row's
best token and its 64th. Tokens outside the shortlist keep their int8 logits, which only
enter the softmax's normaliser.

fbgemm's dynamic quantisation scales its whole input by one number, and a few coordinates
of Gemma's final states are ~50x the rest; with them in, the rest would round to a handful
of levels. As in LLM.int8 (Dettmers et al. 2022), those `outliers` coordinates go through
a slice [V, outliers] of the layer instead, its weights stored as fp16 (fbgemm's fp16
product, fp32 inputs and sums, as backends/half_body.py reads the blocks): the fp32 slice
(17 MB) took 0.69 ms a token, the fp16 one 0.11 ms, and the rounding moves a logit by
about 0.001, where the int8 rows' own error reaches 0.5 and the shortlist re-scores the
candidates in fp32 anyway. Where fbgemm cannot do fp16, the slice stays fp32.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass

import torch

from backends import vocab_select

log = logging.getLogger(__name__)


@dataclass
class Int8Head:
    packed: object  # fbgemm's packed int8 [V, d] layer, the outlier coordinates zeroed
    dims: torch.Tensor  # [outliers] the coordinates kept in fp32
    outlier_cols: torch.Tensor  # [V, outliers] fp32 columns of the layer for `dims`
    weight: torch.Tensor  # [V, d] the fp32 layer itself (shared, not copied): the re-scorer
    shortlist: int  # candidates re-scored exactly per row
    outlier_half: object | None = None  # fbgemm's fp16 copy of `outlier_cols`, where it runs

    @classmethod
    def build(
        cls, weight: torch.Tensor, states: torch.Tensor, outliers: int = 16, shortlist: int = 64
    ) -> Int8Head:
        """`weight` [V, d]: the output layer; `states` [N, d]: ordinary final hidden states,
        whose largest mean |h| coordinates are the outliers."""
        with torch.no_grad():
            weight = weight.detach()
            dims = states.abs().mean(0).topk(outliers).indices.sort().values
            rest = weight.float().index_fill(1, dims, 0.0)  # [V, d]
            # One scale per vocabulary row, symmetric (zero point 0).
            scales = (rest.abs().amax(1) / 127).clamp(min=1e-8).double()
            zero = torch.zeros(rest.shape[0], dtype=torch.long)
            with (
                warnings.catch_warnings()
            ):  # quantised tensors are deprecated, still fbgemm's input
                warnings.simplefilter("ignore", UserWarning)
                rows = torch.quantize_per_channel(rest, scales, zero, 0, torch.qint8)
            packed = torch.ops.quantized.linear_prepack(rows, None)
            outlier_cols = weight[:, dims].float().contiguous()
        return cls(packed, dims, outlier_cols, weight, shortlist, half_outliers(outlier_cols))

    @property
    def nbytes(self) -> int:
        """Bytes read per token: int8 rows + their scales + the outlier columns, fp16 or fp32
        (the shortlist's fp32 rows are a few dozen of V, left out)."""
        vocab, dim = self.weight.shape
        outliers = self.outlier_cols.numel() * (2 if self.outlier_half is not None else 4)
        return vocab * (dim - len(self.dims)) + vocab * 4 + outliers

    @torch.no_grad()
    def __call__(self, hidden: torch.Tensor) -> torch.Tensor:
        """[..., d] -> [..., V] logits: int8 everywhere, exact fp32 on each row's shortlist."""
        rows = hidden.reshape(-1, hidden.shape[-1]).float()
        small = rows.index_fill(1, self.dims, 0.0)
        # reduce_range: the input is quantised to 7 bits, fbgemm's guard against int16
        # overflow in its multiply-add on CPUs without VNNI.
        logits = torch.ops.quantized.linear_dynamic(small, self.packed, True)
        kept = rows[:, self.dims].contiguous()
        if self.outlier_half is not None:
            logits += torch.ops.quantized.linear_dynamic_fp16(kept, self.outlier_half)
        else:
            logits += kept @ self.outlier_cols.T
        candidates = vocab_select.topk_indices(logits, self.shortlist)  # [N, K], torch's set
        exact = torch.einsum("nd,nkd->nk", rows, self.weight[candidates].float())
        logits.scatter_(-1, candidates, exact)
        return logits.reshape(*hidden.shape[:-1], -1).to(hidden.dtype)


def half_outliers(columns: torch.Tensor):
    """fbgemm's fp16 copy of the [V, outliers] columns, once checked that it multiplies
    here (as `HalfBody` checks its copies); None where it cannot, and the fp32 columns
    are read instead."""
    try:
        packed = torch.ops.quantized.linear_prepack_fp16(columns, None)
        torch.ops.quantized.linear_dynamic_fp16(torch.ones(1, columns.shape[1]), packed)
    except (RuntimeError, NotImplementedError) as err:
        log.warning("int8 head: outlier columns read as fp32 (%s)", err)
        return None
    return packed
