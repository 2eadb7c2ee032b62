"""Name lookup shared by every registry (learners, model presets, benchmark tasks)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def unknown_name_message(kind: str, name: str, available: Iterable[str]) -> str:
    """'unknown learner 'centriod' — did you mean 'centroid'? available: ...', or with no
    close name 'unknown learner 'nope'; available: ...'."""
    names = sorted(available)
    # difflib is quadratic in the name's length: a huge name gets no suggestion, not a stall
    text = str(name)
    close = difflib.get_close_matches(text, names, n=1) if len(text) <= 100 else []
    hint = f" — did you mean {close[0]!r}?" if close else ";"
    return f"unknown {kind} {text[:80]!r}{hint} available: {', '.join(names)}"
