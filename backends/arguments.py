"""What a person passes on a command line or in a NONCE_* variable, read once: a bad
value is refused before any work starts, on argparse's own line ('argument --limit:
expected a whole number >= 1, got '-1''), and a value Python would take but a run cannot
use (NaN, infinity, 1.9 steps) is refused with it.

    parser.add_argument("--limit", type=whole_number(1))
    parser.add_argument("--lr", type=number(0, above=True))
    parser.add_argument("--out", type=file_to_write)
    read_number(os.environ["NONCE_ARENA_TEMPERATURE"], 0, 5, above=True)   # ValueError
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def _bounds(low: float, high: float | None, above: bool) -> str:
    bound = f"> {low:g}" if above else f">= {low:g}"
    return bound if high is None or high == math.inf else f"{bound} and <= {high:g}"


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def read_whole(text: str, low: int = 0, high: int | None = None) -> int:
    """`text` as a whole number in low..high ("10000", "1e4" and "2.0" are; "1.9", "inf"
    are not), else a ValueError saying what was expected."""
    value = _float(text.strip())
    whole = math.isfinite(value) and value == int(value)
    if not whole or value < low or (high is not None and value > high):
        raise ValueError(f"expected a whole number {_bounds(low, high, False)}")
    return int(value)


def read_number(text: str, low: float = 0.0, high: float = math.inf, above: bool = False) -> float:
    """`text` as a finite number from `low` (more than `low` with `above`) to `high`, else a
    ValueError saying what was expected (a NaN would pass every comparison after)."""
    value = _float(text.strip())
    inside = (value > low if above else value >= low) and value <= high
    if not (math.isfinite(value) and inside):
        raise ValueError(f"expected a finite number {_bounds(low, high, above)}")
    return value


def _argument(read: Callable[[str], T], name: str) -> Callable[[str], T]:
    def parse(text: str) -> T:
        try:
            return read(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(f"{err}, got {text.strip()[:40]!r}") from None

    parse.__name__ = name  # argparse names the type in its own messages
    return parse


def whole_number(low: int = 0, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: `read_whole`."""
    return _argument(lambda text: read_whole(text, low, high), "whole number")


def number(
    low: float = 0.0, high: float = math.inf, *, above: bool = False
) -> Callable[[str], float]:
    """An argparse type: `read_number`."""
    return _argument(lambda text: read_number(text, low, high, above), "number")


def whole_numbers(
    low: int = 0, high: int | None = None, most: int | None = None, distinct: bool = False
) -> Callable[[str], tuple[int, ...]]:
    """An argparse type: comma-separated `read_whole` numbers in low..high, at least one, at
    most `most` of them, with `distinct` none twice."""
    shape = f"comma-separated whole numbers {_bounds(low, high, False)}"
    if most is not None:
        shape = f"1 to {most} {shape}"

    def parse(text: str) -> tuple[int, ...]:
        parts = [part for part in text.split(",") if part.strip()]
        if not parts or (most is not None and len(parts) > most):
            raise argparse.ArgumentTypeError(f"expected {shape}, got {text[:40]!r}")
        values: list[int] = []
        for part in parts:
            try:
                value = read_whole(part, low, high)
            except ValueError:
                raise argparse.ArgumentTypeError(
                    f"expected {shape}, got {part.strip()[:40]!r}"
                    + (f" in {text[:40]!r}" if len(parts) > 1 else "")
                ) from None
            if distinct and value in values:
                raise argparse.ArgumentTypeError(f"{value} is given twice in {text[:40]!r}")
            values.append(value)
        return tuple(values)

    parse.__name__ = "whole numbers"
    return parse


def one_of(*options: str, blank: bool = False) -> Callable[[str], str]:
    """An argparse type: like choices=, but quoting at most 40 characters of a bad value;
    with `blank`, "" (a field's "none of them") is taken too."""

    def parse(value: str) -> str:
        if value not in options and not (blank and value == ""):
            raise argparse.ArgumentTypeError(f"{value[:40]!r} is not one of {', '.join(options)}")
        return value

    parse.__name__ = "choice"
    return parse


def file_to_write(text: str) -> Path:
    """An argparse type: a file to write a run's output to, refused now rather than after
    the run: a folder, a folder that does not exist, something that is not a file, or no
    permission. A file already there is replaced."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give the file to write to")
    path = Path(text).expanduser()
    parent = path.parent
    if path.is_dir():
        raise argparse.ArgumentTypeError(
            f"{text[:80]!r} is a folder; give the file to write, e.g. {path / 'run.json'}"
        )
    if not parent.is_dir():
        missing = "is not a folder" if parent.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"no folder {str(parent)[:80]!r}: it {missing}")
    if path.exists() and not path.is_file():
        raise argparse.ArgumentTypeError(f"{text[:80]!r} exists and is not a file")
    if not os.access(path if path.exists() else parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"{text[:80]!r} cannot be written (no permission)")
    return path
