"""Argparse types shared by the command lines: a bad number is refused before any work
starts, on argparse's own line ('argument --limit: expected a whole number >= 1, got
'-1''), and a value argparse would take but the run cannot use (NaN, infinity, 1.9 steps)
is refused with it.

    parser.add_argument("--limit", type=whole_number(1))
    parser.add_argument("--lr", type=number(0, above=True))
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable


def _bounds(low: float, high: float | None, above: bool) -> str:
    bound = f"> {low:g}" if above else f">= {low:g}"
    return bound if high is None or high == math.inf else f"{bound} and <= {high:g}"


def _finite(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def whole_number(low: int = 0, high: int | None = None) -> Callable[[str], int]:
    """A whole number in low..high ("10000", "1e4" and "2.0" are; "1.9", "inf" are not)."""
    want = f"a whole number {_bounds(low, high, False)}"

    def parse(text: str) -> int:
        value = _finite(text.strip())
        if not (math.isfinite(value) and value == int(value)):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text.strip()[:40]!r}")
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text.strip()[:40]!r}")
        return int(value)

    parse.__name__ = "whole number"  # argparse names the type in its own messages
    return parse


def number(
    low: float = 0.0, high: float = math.inf, *, above: bool = False
) -> Callable[[str], float]:
    """A finite number from `low` (more than `low` with `above`) to `high`."""
    want = f"a finite number {_bounds(low, high, above)}"

    def parse(text: str) -> float:
        value = _finite(text.strip())
        inside = (value > low if above else value >= low) and value <= high
        if not (math.isfinite(value) and inside):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text.strip()[:40]!r}")
        return value

    parse.__name__ = "number"
    return parse
