"""`@gpu`: Hugging Face ZeroGPU's `spaces.GPU` when the `spaces` package is importable, else a
no-op, so the same code runs on a laptop, a GPU box and a Space."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable)

try:  # only present on Spaces
    import spaces  # type: ignore[import-not-found]
except ImportError:
    spaces = None


def on_zero_gpu() -> bool:
    """Whether this is a ZeroGPU Space, which lends a GPU per decorated call: the platform
    sets SPACES_ZERO_GPU there, and the `spaces` package reads it too; the package being
    importable is not enough, as it may be installed where its decorator does nothing."""
    return os.environ.get("SPACES_ZERO_GPU", "").strip().lower() in ("1", "true", "yes")


def gpu(duration: int = 60) -> Callable[[F], F]:
    """Ask ZeroGPU for a GPU for up to `duration` seconds around the decorated call."""

    def decorate(fn: F) -> F:
        if spaces is None:
            return fn
        log.info("%s runs under spaces.GPU(duration=%d)", fn.__name__, duration)
        return spaces.GPU(duration=duration)(fn)

    return decorate
