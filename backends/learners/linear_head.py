"""A second reading of the examples for the new word's vector: a bigger frozen sentence
encoder (all-mpnet-base-v2, 110M parameters) and one linear map onto the LM's input space.

Why. CoLLEGe's generator reads the examples with a frozen encoder (RoBERTa-large in the
paper, MiniLM-L6 here, 22M) and maps them to the new token's embedding. Issue 16 asked
whether a bigger packaged encoder carries more of the word. A linear probe answered it:
the same ridge regression from MiniLM's features and from mpnet's, fitted on 2 400 CoLLEGe
training words onto the LM's own word vectors, put a held-out training word at median rank
298 against 148 of 3 000, and on Chimera dev (110 items a level) reached rho 0.13 / 0.12 /
0.15 against 0.23 / 0.25 / 0.29 (L2 / L4 / L6; model card, "A bigger encoder for the
vectors").

The head is the generator cut down to its last layer: frozen encoder -> per example, the
mask token's final state and the mean state of the whole sentence -> their mean over the
examples -> standardised -> one affine map to the LM's input space, fitted in closed form
(ridge regression, the generator's regression loss with an L2 penalty) on training words
only (`training/linear_head.py`), its penalty and the blend chosen on Chimera and Nonce dev.
`college` blends its vector into the LM reader's input vector
(`CollegeConfig.linear_head_weight`), both with the training words' top principal
directions taken out first (`LinearHead.without_common`, `CollegeConfig.common_directions`);
its definitions are written from the reader's vectors as before, and Cloze's sentences
read the word as the definition does.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

WEIGHTS, CONFIG = "linear_head.safetensors", "linear_head.json"
TRAIN_COMMAND = "python -m training.linear_head --out assets/college/minilm-l6__gemma-3-270m"


@dataclass(frozen=True)
class LinearHeadConfig:
    encoder: str  # the encoder preset whose features it reads ("mpnet-base")
    lm: str  # the LM whose input space it writes into
    d_enc: int
    d_lm: int
    max_tokens: int = 128
    ridge: float = 0.0  # the L2 penalty it was fitted with (on standardised features)
    words: int = 0  # training words it was fitted on
    # what its fit scored on training words held out of it (`training/linear_head.py`)
    held_out: dict | None = None


@torch.no_grad()
def pooled_features(encoder, tokenizer, texts: list[str], max_tokens: int) -> torch.Tensor:
    """Masked texts -> [n, 2 d_enc]: each text's mean final state over its mask tokens (over
    all its tokens where it has none), then its mean state over all tokens."""
    batch = tokenizer(
        texts, padding=True, truncation=True, max_length=max_tokens, return_tensors="pt"
    ).to(encoder.device)
    hidden = encoder(**batch).last_hidden_state.float()  # [n, T, d_enc]
    tokens = batch["attention_mask"].bool()  # [n, T]
    at_mask = (batch["input_ids"] == tokenizer.mask_token_id) & tokens
    at_mask = torch.where(at_mask.any(-1, keepdim=True), at_mask, tokens)

    def mean_over(where: torch.Tensor) -> torch.Tensor:
        w = where[..., None].float()
        return (hidden * w).sum(1) / w.sum(1).clamp(min=1)

    return torch.cat([mean_over(at_mask), mean_over(tokens)], dim=-1).cpu()


COMMON_KEPT = 32  # principal directions of the targets saved with a head (80 KB at d 640)


def fit_ridge(
    features: torch.Tensor, targets: torch.Tensor, ridge: float, directions: int = COMMON_KEPT
) -> dict[str, torch.Tensor]:
    """[N, F] features (one row a word), [N, d] targets -> the head's tensors: the features'
    mean and scale (standardised, so one penalty fits every feature), weight [F, d], the
    targets' mean [d], which the head leaves out of what it writes (`LinearHead`), and the
    centred targets' top `directions` principal directions [n, d] (`without_common`).
    Closed form in float64: (Z^T Z + ridge I)^-1 Z^T (Y - mean Y), Z standardised."""
    x, y = features.double(), targets.double()
    mean, scale = x.mean(0), x.std(0).clamp(min=1e-6)
    z = (x - mean) / scale
    target_mean = y.mean(0)
    gram = z.T @ z + ridge * torch.eye(z.shape[1], dtype=z.dtype)
    weight = torch.linalg.solve(gram, z.T @ (y - target_mean))
    common = torch.linalg.svd(y - target_mean, full_matrices=False).Vh[:directions]
    return {
        "mean": mean.float(),
        "scale": scale.float(),
        "weight": weight.float(),
        "target_mean": target_mean.float(),
        "common": common.float(),
    }


class LinearHead:
    """Pooled encoder features of a word's examples -> the word's own part of its [d_lm]
    input-space vector: what tells it from the mean of the training words' vectors.

    Why without the mean. Gemma's rows share one large common direction, as static word
    vectors do (Mu & Viswanath 2018, "All-but-the-Top": taking the common mean away makes
    cosines track word similarity better), so a cosine between two rows is partly that
    direction. The head writes only the word's own part; `row` adds the mean back, the
    vector the regression fitted. On Chimera dev the part alone, blended into the reader's
    vector, read people's similarity ratings far better than the whole row did (model
    card, "A bigger encoder for the vectors")."""

    def __init__(self, config: LinearHeadConfig, tensors: dict[str, torch.Tensor]):
        self.config = config
        self.mean, self.scale = tensors["mean"], tensors["scale"]
        self.weight, self.target_mean = tensors["weight"], tensors["target_mean"]
        # orthonormal rows, largest first; a head saved before they were kept has none
        self.common = tensors.get("common", self.target_mean.new_zeros(0, len(self.target_mean)))

    def __call__(self, features: torch.Tensor) -> torch.Tensor:
        """[n, F] features of n examples (or [F], their mean) -> [d_lm], the mean left out."""
        pooled = features.float().reshape(-1, self.mean.shape[0]).mean(0)
        return ((pooled - self.mean) / self.scale) @ self.weight

    def row(self, features: torch.Tensor) -> torch.Tensor:
        """The whole regressed vector: the word's own part plus the training words' mean."""
        return self(features) + self.target_mean

    def without_common(self, vector: torch.Tensor, n: int) -> torch.Tensor:
        """`vector` ([d] or [m, d]) less its part along the training words' top `n` principal
        directions (their mean vectors already taken out).

        Why. Beyond the common mean, a few directions carry most of the variance every word
        vector shares (frequency, for one), and they crowd a cosine between two words'
        vectors; All-but-the-Top (Mu & Viswanath 2018) takes the mean and the top few
        directions out and word similarity improves. On Chimera and Nonce dev, the top 8 out
        of both parts of college's blend read people's ratings closer to the oracle's; an
        oracle given the same projection gains too, and the learner kept 0.9 of it or more
        (model card, "The common directions taken out")."""
        if n > len(self.common):
            raise ValueError(f"{n} common directions asked; this head keeps {len(self.common)}")
        top = self.common[:n].to(vector)
        return vector - (vector @ top.T) @ top

    def save(self, path: str | Path) -> None:
        """`path`/linear_head.safetensors (the weight as fp16: about 2 MB) + linear_head.json."""
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        tensors = {"mean": self.mean, "scale": self.scale, "target_mean": self.target_mean}
        tensors["common"] = self.common
        tensors["weight"] = self.weight.half()
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(path / WEIGHTS))
        (path / CONFIG).write_text(json.dumps(asdict(self.config), indent=2) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> LinearHead | None:
        """The head saved in `path`, or None where that folder has none."""
        from safetensors.torch import load_file

        path = Path(path)
        if not (path / WEIGHTS).exists():
            return None
        config = LinearHeadConfig(**json.loads((path / CONFIG).read_text()))
        tensors = {k: v.float() for k, v in load_file(str(path / WEIGHTS)).items()}
        return cls(config, tensors)
