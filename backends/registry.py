"""Name lookup shared by every registry (learners, model presets, benchmark tasks)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def unknown_name_message(kind: str, name: str, available: Iterable[str]) -> str:
    """'unknown learner 'centriod' — did you mean 'centroid'? available: ...'."""
    names = sorted(available)
    close = difflib.get_close_matches(str(name), names, n=1)
    hint = f" — did you mean {close[0]!r}?" if close else ""
    return f"unknown {kind} {str(name)[:80]!r}{hint} available: {', '.join(names)}"
