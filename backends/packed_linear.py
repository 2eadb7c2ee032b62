"""The LM body's linear layers read through oneDNN's packed weights on the CPU.

Greedy decoding multiplies each block's weights by one row per definition being written
(1-6 rows). torch's fp32 `F.linear` takes a slow path for so few rows: measured here on the
Gemma 3 270M body's 126 matrices (2 cores, torch 2.13), 31 ms for one row and 42-50 ms for
six, about 13 GB/s of weights read where a plain sum reads 27-34 GB/s. The same products
through oneDNN, each weight reordered once into oneDNN's blocked layout, took 21-27 ms
for one row and 19-22 ms for six, and were faster at every row count tried up to 300 (a
prefill).

The reordered copy is a second copy of the body's weights (0.4 GB for Gemma 3 270M): the
original stays for anything that needs a gradient (token tuning, CoLLEGe's training),
since oneDNN's kernel has no backward. Results differ from `F.linear` by rounding only
(a different summation order, ~1e-4 on outputs of size ~1); benchmarks/RESULTS.md
("packed") says how many definitions that changes.

Decoding also reads a block's q, k and v projections (and its MLP's gate and up) as one
product (`joint`): they read the same input, and at one row oneDNN's time per call is
much of the product's. On the body's 18 blocks, 72 calls instead of 126 took 19.6-20.8
ms a token where the separate ones took 23.2-25.1 (one row, 2 cores; six rows 15.9-17.4
against 18.9-20.6). The joint copies are a third copy of those weights (0.26 GB for
Gemma 3 270M), made the first time a decoding step asks for them.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

# The row count oneDNN chooses its packed layout for; 8 was the fastest hint tried for
# 1 to 300 rows (1 and 8 tried).
BATCH_HINT = 8


class PackedLinears:
    """Reroutes every `nn.Linear` of a frozen model through packed weights when no gradient
    is being recorded; `on = False` gives the plain layers back (for side-by-side runs)."""

    def __init__(self, model: nn.Module, batch_hint: int = BATCH_HINT):
        self.on = True
        # Whether `joint` gives decoding one product per group of layers (perf measures both)
        self.joint_products = True
        self.batch_hint = batch_hint
        self.count, self._bytes = 0, 0
        self._joint: dict[tuple[int, ...], tuple[torch.Tensor, list[int]]] = {}
        with torch.no_grad():
            for module in model.modules():
                if isinstance(module, nn.Linear) and module.weight.dtype == torch.float32:
                    packed = torch.ops.mkldnn._reorder_linear_weight(
                        module.weight.detach(), batch_hint
                    )
                    module.forward = self._forward_of(module, packed)  # instance, not class
                    self.count += 1
                    self._bytes += module.weight.numel() * module.weight.element_size()

    def _forward_of(self, module: nn.Linear, packed: torch.Tensor):
        def forward(x: torch.Tensor) -> torch.Tensor:
            if not self.on or torch.is_grad_enabled() or x.dtype != torch.float32:
                return F.linear(x, module.weight, module.bias)
            return torch.ops.mkldnn._linear_pointwise(x, packed, module.bias, "none", [], "")

        return forward

    def joint(self, *modules: nn.Linear) -> Callable[[torch.Tensor], tuple] | None:
        """x -> (each module's output), from one packed product of their stacked weights;
        None where the separate layers are to be called instead (packing or joint products
        off, or a bias, which no block of Gemma 3 has). The caller reads without a
        gradient (a decoding step)."""
        if not (self.on and self.joint_products) or any(m.bias is not None for m in modules):
            return None
        key = tuple(id(m) for m in modules)
        if key not in self._joint:
            with torch.no_grad():
                weight = torch.cat([m.weight.detach() for m in modules])
                packed = torch.ops.mkldnn._reorder_linear_weight(weight, self.batch_hint)
            self._joint[key] = packed, [m.out_features for m in modules]
            self._bytes += weight.numel() * weight.element_size()
        packed, sizes = self._joint[key]

        def forward(x: torch.Tensor) -> tuple:
            out = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
            return out.split(sizes, dim=-1)

        return forward

    @property
    def nbytes(self) -> int:
        """Extra memory held: one more fp32 copy of every rerouted weight, and of those read
        jointly once decoding has asked for them."""
        return self._bytes
