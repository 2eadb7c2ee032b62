"""Who is judging: a Hugging Face login when there is one, else an id the server issued.

An anonymous browser keeps a server-issued id `<random>.<HMAC-SHA256 of it>`, signed with a
secret only the server knows (NONCE_ID_SECRET; random per process when unset, so ids issued
before a restart are then replaced). A client can drop its id, never mint one: an id whose
signature does not check is ignored, the request counts as its Gradio session's, and the page
replaces the stored id with a fresh one. Raw ids never reach the store: they are salted and
hashed first.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

MAX_TOKEN_CHARS = 128  # issued ids are 22 + 1 + 32 characters; longer is refused unread
MAX_ADDRESS_CHARS = 64  # an IPv6 address with a zone fits


@dataclass(frozen=True)
class Who:
    """What the page knows about the person behind a request."""

    hf_user: str | None = None  # Hugging Face username, when signed in on a Space
    browser_id: str | None = None  # the signed id kept in localStorage, as the client sent it
    session: str | None = None  # Gradio session (API clients without a valid browser id)
    address: str | None = None  # client address (see `client_address`), for per-address limits


class Identities:
    """Issues and checks signed browser ids, and maps a request to its stored annotator id."""

    def __init__(self, secret: str, salt: str) -> None:
        # no configured secret: a random one, so nobody outside this process can sign ids
        self._key = secret.encode() if secret else secrets.token_bytes(32)
        self.salt = salt

    def _mac(self, raw: str) -> str:
        return hmac.new(self._key, raw.encode(), hashlib.sha256).hexdigest()[:32]

    def issue(self) -> str:
        """A fresh signed id for a browser."""
        raw = secrets.token_urlsafe(16)
        return f"{raw}.{self._mac(raw)}"

    def verify(self, token: object) -> str | None:
        """The id's random part if this server signed it, else None (forged, unsigned, junk)."""
        # issued ids are short ASCII: anything else (a lone surrogate, say) is not one of ours
        if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS or not token.isascii():
            return None
        raw, _, mac = token.partition(".")
        if not raw or not hmac.compare_digest(mac.encode(), self._mac(raw).encode()):
            return None
        return raw

    def ensure(self, token: object) -> str:
        """The browser's id if valid, else a freshly issued one (what the page stores)."""
        return token if self.verify(token) is not None else self.issue()  # type: ignore[return-value]

    def annotator(self, who: Who) -> str:
        """'hf:<hash>' for a login, 'anon:<hash>' for a signed id or else the session."""
        raw = self.verify(who.browser_id)
        if who.hf_user:
            kind, raw = "hf", who.hf_user
        elif raw is not None:
            kind = "anon"
        elif who.session:
            kind, raw = "anon", f"session\0{who.session}"
        else:
            raise ValueError("cannot tell who is voting: enable cookies/localStorage and reload")
        digest = hashlib.sha256(f"{self.salt}\0{kind}\0{raw}".encode()).hexdigest()[:20]
        return f"{kind}:{digest}"


def client_address(host: str | None, forwarded_for: str | None, trust_forwarded: bool) -> str:
    """The address limits apply to: the proxy's X-Forwarded-For first hop when trusted, else
    the TCP peer. Trust it only behind a proxy that sets the header (a Space's does); anywhere
    else a client could write any address there."""
    if trust_forwarded and forwarded_for:
        host = forwarded_for.split(",")[0].strip()
    return (host or "unknown")[:MAX_ADDRESS_CHARS]
