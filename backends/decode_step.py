"""Gemma 3's decoding step without the framework around it: one new token per row through
the frozen blocks, into key/value buffers allocated once, and on a GPU replayed as one CUDA
graph.

Why. Once the prompts are read, each generated token is a [rows x 640] vector through 18
blocks. Through transformers' modules a step also rebuilds two attention masks, grows the
key/value cache by concatenation and pays the framework's per-call work; on the H100 that
step took 25 ms a token, 68x the time to read the weights once (perf-gpu-h100.json): the
GPU waited on Python. Here the step is the model's arithmetic alone, over buffers whose
shapes never change, so a GPU can record it once as a CUDA graph and replay it a token at a
time (one launch instead of ~500); on the CPU the same step, without a graph, saves the
framework's share.

The arithmetic is transformers' own Gemma 3, op for op, calling the model's own modules
(q/k norms, the rotary embedding's cosines and sines for the local and the global base,
grouped-query attention packed for one query as transformers packs it, the GELU-tanh MLP,
so packed CPU linears still apply). Some things are done in fewer calls, to the same
result bit for bit: each RMSNorm (x / rms(x) times (1 + w), in fp32) is torch's one fused
`rms_norm` rather than seven elementwise ops (about half the time: 11-13 us against 20-25
per call, and a token makes 110 of them); with packed CPU linears a block's q, k, v and
its MLP's gate and up are read as two products rather than five (`PackedLinears.joint`);
RoPE's `x * cos + rotate_half(x) * sin`, whose `rotate_half` slices, negates and joins
both halves, is `x * cos + roll(x) * sin'` with sin' the sine's first half negated once
per token (the same products and sums: a sign moves from one factor to the other); and
with one new position per row, the heads' views need no transposes. Every call saved is
a few microseconds of dispatch a block, which at one row is as much as the arithmetic.
On the CPU the step reads the blocks' weights from fp16 copies (backends/half_body.py),
which halve the bytes a token reads; everything before and besides the step stays fp32.
Prompts are read (prefilled) by transformers as before; their cache is copied in.
`tests/backends/test_decode_step.py` checks the hidden states against transformers'
forward and the definitions word for word.
"""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F

from backends.half_body import step_groups

log = logging.getLogger(__name__)

SUPPORTED = ("gemma3_text",)  # other architectures decode through transformers


def supports(model) -> bool:
    return getattr(model.config, "model_type", None) in SUPPORTED


def block_products(block, packed=None, half=None) -> list:
    """A block's four products as the step reads them, in `step_groups` order (q/k/v, o,
    gate/up, down): all from the fp16 copies where there are some (backends/half_body.py),
    else q/k/v and gate/up each as one product of the packed body; None where the step
    calls the modules themselves."""

    def read(group):
        if half is not None:
            return half.products(*group)
        return packed.joint(*group) if packed is not None and len(group) > 1 else None

    return [read(group) for group in step_groups(block)]


def rotation(cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The rotary embedding's [B, 1, hd] cosines and sines -> what `rotate` reads: both
    set to broadcast over heads, the sine's first half negated."""
    half = sin.shape[-1] // 2
    signed = torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)
    return cos[:, None], signed[:, None], half


def rotate(x: torch.Tensor, cos: torch.Tensor, signed: torch.Tensor, half: int) -> torch.Tensor:
    """RoPE on [B, heads, 1, hd]: transformers' `x * cos + rotate_half(x) * sin`, where
    rotate_half(x) = (-x2, x1); here (x2, x1) = roll(x) meets (-sin1, sin2), which gives
    the same products, so the same bits: one call (`roll`) where rotate_half makes four."""
    return x * cos + x.roll(half, -1) * signed


class DecodeStep:
    """One token per row through the blocks; `step(embeds)` -> [B, d] final hidden states.

    Buffers: per layer keys and values [B, kv_heads, T + new_tokens, head_dim], the prompt
    cache in the first T columns; `valid` [B, T + new_tokens] (False on left padding);
    `column` (0-dim) where the next token's key and value go; `position` [B] its position.
    Both advance inside the step, so a recorded graph replays step after step."""

    def __init__(
        self,
        model,
        cache,
        mask: torch.Tensor,
        last_position: torch.Tensor,
        new_tokens: int,
        packed=None,
        half=None,
    ):
        from transformers.models.gemma3.modeling_gemma3 import Gemma3RMSNorm

        config = model.config
        body = model.base_model
        self.layers, self.norm, self.rotary = body.layers, body.norm, body.rotary_emb
        self.layer_types = list(config.layer_types)
        self.window = config.sliding_window
        rows, prompt = mask.shape
        width = prompt + new_tokens
        self.keys, self.values = [], []
        for layer in cache.layers:
            for kept, held in ((self.keys, layer.keys), (self.values, layer.values)):
                buffer = held.new_zeros(rows, held.shape[1], width, held.shape[3])
                buffer[:, :, :prompt] = held
                kept.append(buffer)
        self.valid = torch.ones(rows, width, dtype=torch.bool, device=mask.device)
        self.valid[:, :prompt] = mask.bool()
        self.columns = torch.arange(width, device=mask.device)
        self.column = torch.tensor(prompt, device=mask.device)
        self.position = last_position.reshape(-1) + 1
        # each norm's (1 + w), and per block its four products (`block_products`)
        norms = (n for n in model.modules() if isinstance(n, Gemma3RMSNorm))
        self.scales = {id(n): 1.0 + n.weight.float() for n in norms}
        self.qkv, self.o, self.gate_up, self.down = zip(
            *(block_products(b, packed, half) for b in self.layers)
        )

    def keep(self, index: torch.Tensor) -> None:
        """Only the rows `index` go on (finished rows leave the batch)."""
        self.keys = [k[index] for k in self.keys]
        self.values = [v[index] for v in self.values]
        self.valid, self.position = self.valid[index], self.position[index]

    def step(self, embeds: torch.Tensor) -> torch.Tensor:
        """[B, 1, d] input embeddings of the tokens just chosen -> [B, d] final states."""
        seen = self.valid & (self.columns <= self.column)  # [B, W]: causal, no padding
        masks = {
            "full_attention": seen[:, None, None, :],
            "sliding_attention": (seen & (self.columns > self.column - self.window))[
                :, None, None, :
            ],
        }
        positions = self.position[:, None]  # [B, 1]
        rotations = {
            kind: rotation(*self.rotary(embeds, positions, kind)) for kind in set(self.layer_types)
        }
        hidden = embeds
        for i, layer in enumerate(self.layers):
            kind = self.layer_types[i]
            hidden = self._block(i, layer, hidden, rotations[kind], masks[kind])
        self.column += 1
        self.position += 1
        return self._norm(self.norm, hidden)[:, 0]

    def _norm(self, norm, x: torch.Tensor) -> torch.Tensor:
        """Gemma 3's RMSNorm: x / rms(x) * (1 + w), computed in fp32, in one call."""
        scale = self.scales[id(norm)]
        if x.dtype == torch.float32:  # as on the CPU: no casts to dispatch
            return F.rms_norm(x, scale.shape, scale, norm.eps)
        return F.rms_norm(x.float(), scale.shape, scale, norm.eps).type_as(x)

    def _block(self, i, layer, hidden, rotation, mask):
        attn, mlp = layer.self_attn, layer.mlp
        rows, head_dim = hidden.shape[0], attn.head_dim
        x = self._norm(layer.input_layernorm, hidden)
        if self.qkv[i] is not None:
            q, k, v = self.qkv[i](x)
        else:
            q, k, v = attn.q_proj(x), attn.k_proj(x), attn.v_proj(x)
        # one position: [B, 1, heads * hd] is [B, heads, 1, hd] as a view
        q = self._norm(attn.q_norm, q.view(rows, -1, 1, head_dim))  # [B, H, 1, hd]
        k = self._norm(attn.k_norm, k.view(rows, -1, 1, head_dim))  # [B, KV, 1, hd]
        v = v.view(rows, -1, 1, head_dim)
        q, k = rotate(q, *rotation), rotate(k, *rotation)
        at = self.column.view(1)
        self.keys[i].index_copy_(2, at, k)
        self.values[i].index_copy_(2, at, v)
        # one query: its heads share each key/value head, so they sit where positions would
        heads = q.shape[1]
        packed = q.reshape(rows, k.shape[1], heads // k.shape[1], head_dim)
        out = F.scaled_dot_product_attention(
            packed, self.keys[i], self.values[i], attn_mask=mask, scale=attn.scaling
        )
        out = out.reshape(rows, 1, -1)  # heads in order: [B, 1, H * hd]
        out = self.o[i](out)[0] if self.o[i] is not None else attn.o_proj(out)
        hidden = hidden + self._norm(layer.post_attention_layernorm, out)
        x = self._norm(layer.pre_feedforward_layernorm, hidden)
        if self.gate_up[i] is not None:
            gate, up = self.gate_up[i](x)
        else:
            gate, up = mlp.gate_proj(x), mlp.up_proj(x)
        x = mlp.act_fn(gate) * up  # Gemma3MLP's forward, its two products joint
        x = self.down[i](x)[0] if self.down[i] is not None else mlp.down_proj(x)
        return hidden + self._norm(layer.post_feedforward_layernorm, x)


class GraphedStep:
    """A `DecodeStep` recorded once as a CUDA graph and replayed per token. The batch keeps
    its shape: a finished row goes on computing unread (`keep` only narrows what is read
    back), which on a GPU costs nothing next to a launch."""

    def __init__(self, step: DecodeStep):
        self.inner = step  # holds the buffers the graph reads and writes: keep them alive
        rows, device = step.valid.shape[0], step.valid.device
        dim, dtype = step.norm.weight.shape[0], step.keys[0].dtype
        self.input = torch.zeros(rows, 1, dim, dtype=dtype, device=device)  # the graph's own
        self.rows = torch.arange(rows, device=device)
        column, position = step.column.clone(), step.position.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up (allocator, kernels' first choices)
            step.step(self.input)
        torch.cuda.current_stream().wait_stream(side)
        step.column.copy_(column)  # the warm-up wrote a column that the first replay rewrites
        step.position.copy_(position)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.output = step.step(self.input)

    def keep(self, index: torch.Tensor) -> None:
        self.rows = self.rows[index]

    def step(self, embeds: torch.Tensor) -> torch.Tensor:
        self.input[self.rows] = embeds
        self.graph.replay()
        return self.output[self.rows]


def decode_step(
    model, cache, mask, last_position, new_tokens: int, graph: bool, packed=None, half=None
):
    """The stepper `NonceLM.generate` uses after prefill: graphed on CUDA when asked (and
    the eager step, with a warning, if recording the graph fails). `packed`: the LM's
    `PackedLinears` (CPU), whose joint products the step then reads; `half`: its
    `HalfBody` (CPU), whose fp16 products it reads instead."""
    step = DecodeStep(model, cache, mask, last_position, new_tokens, packed, half)
    if not (graph and mask.device.type == "cuda"):
        return step
    try:
        return GraphedStep(step)
    except RuntimeError as err:  # torch.cuda.OutOfMemoryError included
        log.warning("CUDA graph not recorded (%s); decoding step by step", err)
        return DecodeStep(model, cache, mask, last_position, new_tokens)
