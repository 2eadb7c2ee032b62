"""The README's code examples, as a reader copies them: tests run them as written."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def python_example(containing: str) -> str:
    """The README's one ```python block that contains `containing`."""
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text("utf-8"), re.M | re.S)
    found = [b for b in blocks if containing in b]
    assert len(found) == 1, f"{len(found)} README python blocks contain {containing!r}"
    return found[0]
