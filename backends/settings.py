"""Settings for the library: one frozen dataclass, and the one place that reads the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Device = Literal["auto", "cpu", "cuda"]


@dataclass(frozen=True)
class Settings:
    # Where converted weights, WordNet's NLTK layout and precomputed stores live.
    cache_dir: Path = field(default_factory=lambda: Path.home() / ".cache" / "nonce-arena")
    # Default causal LM preset (see backends.models.LM_PRESETS).
    lm: str = "gemma-3-270m"
    # Default masked-LM encoder preset (CoLLEGe reads examples with it).
    encoder: str = "minilm-l6"
    # "auto" takes CUDA when present, else the CPU.
    device: Device = "auto"
    # Torch threads on the CPU; 0 leaves torch's own choice.
    cpu_threads: int = 0
    # On the CPU, shortlist each generated token's candidates with an int8 copy of the LM's
    # output layer and choose among them in fp32 (backends/int8_head.py): the same
    # definitions, 1.4x faster here (benchmarks/RESULTS.md, "int8"). The college learner's
    # LM reader also takes its right-context scores' normaliser from it: 4-5x faster
    # reading, 158 of 160 dev definitions unchanged.
    int8_head: bool = True
    # On the CPU, read the LM body's linear layers through oneDNN's packed weights when no
    # gradient is needed (backends/packed_linear.py): decoding's few rows 1.2-2.5x faster
    # here, for a second copy of the body's weights (0.4 GB for Gemma 3 270M).
    packed_linears: bool = True
    # Decode each token through backends/decode_step.py (Gemma 3's blocks over buffers
    # allocated once; a CUDA graph on a GPU) instead of transformers' forward: the same
    # definitions, faster per token (benchmarks/RESULTS.md, "steps").
    lean_steps: bool = True
    # On the CPU, let each decoding step read the blocks' weights from fp16 copies
    # (backends/half_body.py; fp32 inputs and sums): half the bytes a token reads, for a
    # third copy of the body (0.2 GB for Gemma 3 270M) that stands in for the packed joint
    # ones (0.26 GB); benchmarks/RESULTS.md, "half", says how many definitions it changes.
    half_body: bool = True


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def load_settings() -> Settings:
    """Read NONCE_* environment variables once; everything else takes its settings from here."""
    base = Settings()
    device = _env("NONCE_DEVICE", base.device)
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"NONCE_DEVICE={device!r}: expected one of auto, cpu, cuda")
    return Settings(
        cache_dir=Path(_env("NONCE_CACHE_DIR", str(base.cache_dir))).expanduser(),
        lm=_env("NONCE_LM", base.lm),
        encoder=_env("NONCE_ENCODER", base.encoder),
        device=device,  # type: ignore[arg-type]
        cpu_threads=int(_env("NONCE_CPU_THREADS", str(base.cpu_threads))),
        int8_head=_env("NONCE_INT8_HEAD", "1") not in ("0", "false", "no", "off"),
        packed_linears=_env("NONCE_PACKED_LINEARS", "1") not in ("0", "false", "no", "off"),
        lean_steps=_env("NONCE_LEAN_STEPS", "1") not in ("0", "false", "no", "off"),
        half_body=_env("NONCE_HALF_BODY", "1") not in ("0", "false", "no", "off"),
    )


def resolve_device(device: Device = "auto") -> str:
    """Map a requested device to a torch device string; asking for absent CUDA is an error."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("CUDA was asked for but no GPU is available here; use --device cpu")
    if device not in ("cpu", "cuda"):
        raise ValueError(f"unknown device {device!r}: expected one of auto, cpu, cuda")
    return device
