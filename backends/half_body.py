"""The LM body's weights read at half precision by each decoding step, on the CPU.

A greedy token reads every block's weights once. At fp32 that is 0.40 GB for Gemma 3
270M's 72 products a token (its q/k/v, its MLP's gate/up, each read jointly, and its o and
down projections), which took 19.2 ms through oneDNN's packed layers on this 2-core CPU,
against a bandwidth floor of 13.6 ms. fbgemm's fp16 product keeps the weights as fp16
(half the bytes) and widens them to fp32 inside the kernel, with fp32 inputs, outputs and
sums: on random weights of the body's shapes the 72 products took 5.7 ms for one row and
9.8 ms for six, against 17.5 and 13.4 ms for the packed fp32 layers (a scratch script).

The weights' rounding is small beside int8's: fp16 keeps 11 significant bits, so a
product moves by about 4e-4 on outputs of size ~0.4. Reading the blocks as int8
(fbgemm's dynamic quantisation, inputs rounded too) left only 5 of 40 DefGen dev oracle
definitions word for word (19 of 40 with 8-bit inputs); bf16 weights and inputs 54 of 60
(docs/speed.md); these fp16 weights with fp32 inputs, 40 of 40.

Only the decoding step reads these copies (backends/decode_step.py): prompts, scoring,
the learners' readers and anything with a gradient read the fp32 layers as before, so no
learned vector changes. `benchmarks.kernel_match:run_half_body` says how many definitions
do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import nn


def step_groups(block) -> list[tuple[nn.Linear, ...]]:
    """A Gemma 3 block's linear layers as the decoding step reads them: q/k/v jointly
    (they read the same input), o, gate/up jointly, down."""
    attn, mlp = block.self_attn, block.mlp
    return [
        (attn.q_proj, attn.k_proj, attn.v_proj),
        (attn.o_proj,),
        (mlp.gate_proj, mlp.up_proj),
        (mlp.down_proj,),
    ]


class HalfBody:
    """fp16 copies of a decoder body's linear layers, stacked as the step reads them;
    `products(*modules)` -> x -> (each module's output). Built once, at load."""

    def __init__(self, body: nn.Module):
        self._products: dict[tuple[int, ...], tuple[object, list[int]]] = {}
        self.nbytes = 0  # the fp16 weights read per token (fbgemm adds small headers)
        self.replaced = 0  # the fp32 bytes these copies stand in for
        with torch.no_grad():
            for block in body.layers:
                for group in step_groups(block):
                    if any(m.bias is not None for m in group):
                        continue  # Gemma 3 has none; another body's biased layers stay fp32
                    weight = torch.cat([m.weight.detach().float() for m in group])
                    packed = torch.ops.quantized.linear_prepack_fp16(weight, None)
                    key = tuple(id(m) for m in group)
                    self._products[key] = packed, [m.out_features for m in group]
                    self.nbytes += weight.numel() * 2
                    self.replaced += sum(m.weight.numel() * m.weight.element_size() for m in group)
                    if len(self._products) == 1:
                        # one product now: a CPU whose fbgemm cannot multiply fails at load
                        # (the pipeline then decodes with fp32 weights), not in a first Learn
                        self.products(*group)(torch.zeros(1, group[0].in_features))

    def products(self, *modules: nn.Linear) -> Callable[[torch.Tensor], Sequence] | None:
        """x [..., d_in] -> each module's output, from one fp16 product; None for layers
        this body has no copy of."""
        found = self._products.get(tuple(id(m) for m in modules))
        if found is None:
            return None
        packed, sizes = found

        def forward(x: torch.Tensor) -> Sequence[torch.Tensor]:
            rows = x.reshape(-1, x.shape[-1])
            out = torch.ops.quantized.linear_dynamic_fp16(rows, packed)
            return out.reshape(*x.shape[:-1], out.shape[-1]).split(sizes, dim=-1)

        return forward
