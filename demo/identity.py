"""Who is judging: a Hugging Face login when there is one, else a pseudonymous browser id.

Raw ids never reach the store: they are salted and hashed first.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class Who:
    """What the page knows about the person behind a request."""

    hf_user: str | None = None  # Hugging Face username, when signed in on a Space
    browser_id: str | None = None  # random id kept in the browser's localStorage
    session: str | None = None  # Gradio session (API clients without a browser id)


def new_browser_id() -> str:
    return secrets.token_urlsafe(16)


def annotator_id(who: Who, salt: str) -> str:
    """'hf:<hash>' for a login, 'anon:<hash>' otherwise; the same person maps to the same id."""
    if who.hf_user:
        kind, raw = "hf", who.hf_user
    elif who.browser_id or who.session:
        kind, raw = "anon", who.browser_id or who.session
    else:
        raise ValueError("cannot tell who is voting: enable cookies/localStorage and reload")
    digest = hashlib.sha256(f"{salt}\0{kind}\0{raw}".encode()).hexdigest()[:20]
    return f"{kind}:{digest}"
