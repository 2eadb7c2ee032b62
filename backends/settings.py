"""Settings for the library: one frozen dataclass, and the one place that reads the environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from backends.arguments import read_whole

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


_ON, _OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def env_flag(name: str, default: bool) -> bool:
    """An on/off variable, in any case; anything else is refused rather than read as on."""
    value = _env(name, "1" if default else "0").lower()
    if value not in _ON + _OFF:
        raise ValueError(f"{name}={value[:40]!r}: choose 1 or 0 (on or off)")
    return value in _ON


def _threads(name: str) -> int:
    raw = _env(name, "0")
    try:  # 0: torch's own choice
        return read_whole(raw, 0)
    except ValueError as err:
        raise ValueError(f"{name}={raw[:40]!r}: {err} (0 for torch's own)") from None


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
        cpu_threads=_threads("NONCE_CPU_THREADS"),
        int8_head=env_flag("NONCE_INT8_HEAD", base.int8_head),
        packed_linears=env_flag("NONCE_PACKED_LINEARS", base.packed_linears),
        lean_steps=env_flag("NONCE_LEAN_STEPS", base.lean_steps),
        half_body=env_flag("NONCE_HALF_BODY", base.half_body),
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
