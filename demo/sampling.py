"""The arena's definitions, sampled per battle: the same text rarely recurs, so a definition
cannot be recognised from an earlier battle and tied to its learner.

Temperature and top-k sampling (Fan et al. 2018), seeded per battle so every stored vote can
be regenerated. It runs on the library's greedy `backends.definitions.define` through its
logit hooks: each learner's hook (if any) runs first, then a sampling hook draws the next
token and leaves only that token for the greedy argmax.

    texts = define_sampled(lm, embeddings, Decoding(temperature=0.8, top_k=40), seed=1234)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # torch and the LM load on first use, never at import
    import torch

    from backends.learners.base import NonceEmbedding
    from backends.nonce_lm import NonceLM

Hook = Callable[["torch.Tensor", "torch.Tensor"], "torch.Tensor"]


@dataclass(frozen=True)
class Decoding:
    """How a battle's two definitions are sampled (stored as JSON with every vote)."""

    temperature: float = 0.8  # < 1 sharpens the LM's distribution; 0 is refused (use greedy)
    top_k: int = 40  # sample among the k likeliest tokens only (0: all of them)
    max_new_tokens: int = 32  # tokens per definition, first sentence kept

    def __post_init__(self) -> None:
        if not 0.0 < self.temperature <= 5.0:
            raise ValueError(f"temperature={self.temperature}: choose in (0, 5]")
        if self.top_k < 0 or self.max_new_tokens < 1:
            raise ValueError(f"top_k={self.top_k}, max_new_tokens={self.max_new_tokens}")

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _sampling_hook(base: Hook | None, decoding: Decoding, generator: torch.Generator) -> Hook:
    import torch

    def hook(hidden: torch.Tensor, logprobs: torch.Tensor) -> torch.Tensor:
        # hidden [1, d]; logprobs [1, V + n], already limited to this row's own new word
        if base is not None:
            logprobs = base(hidden, logprobs)
        scores = logprobs / decoding.temperature
        if 0 < decoding.top_k < scores.shape[-1]:
            kth = torch.topk(scores, decoding.top_k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        token = torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator)
        chosen = torch.full_like(logprobs, float("-inf"))
        return chosen.scatter(-1, token, 0.0)  # the argmax can only pick `token`

    return hook


def define_sampled(
    lm: NonceLM, embeddings: Sequence[NonceEmbedding], decoding: Decoding, seed: int
) -> list[str]:
    """Every embedding's definition, sampled in one batch; the same seed gives the same texts.

    The arena's one call into the library's generation: when `define` takes decoding options
    itself, this function is where to pass them."""
    import torch

    from backends.definitions import define

    generator = torch.Generator(device=lm.device).manual_seed(seed)

    def wrap(make_hook):
        return lambda nonce_id: _sampling_hook(
            make_hook(nonce_id) if make_hook else None, decoding, generator
        )

    sampled = [replace(e, make_hook=wrap(e.make_hook)) for e in embeddings]
    return [d.text for d in define(lm, sampled, max_new_tokens=decoding.max_new_tokens)]
