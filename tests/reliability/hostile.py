"""A corpus of hostile inputs and the checks every entry point must pass on them.

Each input is refused with a clear message, or accepted and shown literally: never a stack
trace, never an HTTP 500, never stored garbage, never typed text rendered as HTML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WORD = "wug"
GOOD_SENTENCE = "The wug sang all night."


@dataclass(frozen=True)
class Hostile:
    name: str
    text: str


def _big(unit: str, size: int = 10_000_000) -> str:
    return unit * (size // len(unit))


# Strings tried in every text field (word, sentences, definition, learner, LM, battle id, ...).
TEXTS: tuple[Hostile, ...] = (
    Hostile("empty", ""),
    Hostile("space", " "),
    Hostile("whitespace", " \t\n \r\n\u3000\u00a0"),
    Hostile("10MB", _big("a")),
    Hostile("10MB lines", _big("The wug sang.\n")),
    Hostile("10MB no newline with word", "wug " + _big("x")),
    Hostile("nul", "wug\x00"),
    Hostile("binary", "\x00\x01\x02\xff\xfe\x7f"),
    Hostile("ansi escape", "\x1b[31mwug\x1b[0m"),
    Hostile("bell and backspace", "wu\x07g\x08"),
    Hostile("lone surrogate", "wu\ud800g"),
    Hostile("private use", "wug\ue000"),
    Hostile("rtl override", "\u202egulp\u202c"),
    Hostile("arabic", "كلمة"),
    Hostile("hebrew mixed", "wug שלום"),
    Hostile("combining", "wu\u0301g"),
    Hostile("zalgo", "w\u0300\u0301\u0302\u0303\u0304\u0305u\u0306\u0307g\u0308\u0309"),
    Hostile("emoji", "🦜"),
    Hostile("emoji in word", "wug🦜"),
    Hostile("zwj family", "👩\u200d👩\u200d👧"),
    Hostile("zero width", "wu\u200bg"),
    Hostile("bom", "\ufeffwug"),
    Hostile("word absent", "The cat sat on the mat."),
    Hostile("1000 sentences", "\n".join(f"The wug number {i} sang." for i in range(1000))),
    Hostile("601 chars", "The wug " + "a" * 593),
    Hostile("sql drop", "wug'); DROP TABLE votes; --"),
    Hostile("sql or", "' OR '1'='1"),
    Hostile("sql union", "wug UNION SELECT annotator FROM votes"),
    Hostile("script", "<script>alert(1)</script>"),
    Hostile("script in sentence", "The wug <script>alert('x')</script> sang."),
    Hostile("img onerror", '<img src=x onerror="alert(1)">'),
    Hostile("attribute break", '" onmouseover="alert(1)" x="'),
    Hostile("html entity", "&lt;b&gt;wug&lt;/b&gt; &amp;"),
    Hostile("markdown link", "[wug](javascript:alert(1))"),
    Hostile("markdown image", "![x](http://127.0.0.1:1/x.png)"),
    Hostile("markdown bold", "**wug** _wug_ `wug`"),
    Hostile("path traversal", "../../../../etc/passwd"),
    Hostile("windows traversal", "..\\..\\windows\\win.ini"),
    Hostile("absolute path", "/etc/shadow"),
    Hostile("url encoded traversal", "%2e%2e%2f%2e%2e%2fetc"),
    Hostile("format string", "{0.__class__.__mro__} %s%n%x"),
    Hostile("template", "{{7*7}} ${jndi:ldap://127.0.0.1/a}"),
    Hostile("crlf header", "wug\r\nSet-Cookie: a=b"),
    Hostile("json", '{"word": "wug", "__proto__": {"x": 1}}'),
    Hostile("number nan", "NaN"),
    Hostile("number inf", "-inf"),
    Hostile("huge number", "1e309"),
    Hostile("negative", "-1"),
    Hostile("41 chars", "w" * 41),
    Hostile("two words", "wug wug"),
    Hostile("leading hyphen", "-wug"),
    Hostile("newline in word", "wu\ng"),
    Hostile("unknown name", "no-such-learner"),
    Hostile("all with junk", "all,bogus"),
)

# Absurd numbers for numeric parameters (steps, k, shots).
NUMBERS: tuple[object, ...] = (
    -1,
    -(10**9),
    0,
    501,
    10**6,
    10**18,
    2**63,
    10**400,
    1.5,
    -0.0,
    float("nan"),
    float("inf"),
    float("-inf"),
    "7",
    "seven",
    "",
    None,
    True,
    [],
    {},
    "1e9",
    "0x10",
    " 5 ",
    "5; DROP TABLE votes",
)

TRACEBACK = re.compile(r"Traceback \(most recent call last\)|File \"[^\"]+\", line \d+")
# A tag, an attribute or an entity that came through unescaped.
RAW_HTML = re.compile(r"<\s*(script|img|b|a|iframe|svg)\b|onerror\s*=|onmouseover\s*=", re.I)


def clear_message(message: str) -> bool:
    """A message a person can act on: non-empty, short, no traceback, not a bare 'Error'."""
    text = str(message).strip()
    return (
        bool(text)
        and text.lower() not in ("error", "none", "internal server error")
        and len(text) < 1000
        and not TRACEBACK.search(text)
    )


def no_raw_html(rendered: str) -> bool:
    """Rendered Markdown/HTML holds no live tag or attribute from what was typed."""
    return not RAW_HTML.search(str(rendered))


def short(value: object, limit: int = 40) -> str:
    return repr(value)[:limit]


# What each check answers, pinned: an entry point that accepts or refuses anything else has
# changed behaviour (or crashed), and the tests say which input did it.
ACCEPTED_AS_WORD = frozenset({"arabic", "combining", "number nan", "huge number", "unknown name"})
ACCEPTED_AS_SENTENCES = frozenset(
    {
        "hebrew mixed",
        "emoji in word",
        "sql drop",
        "sql union",
        "script in sentence",
        "html entity",
        "markdown link",
        "markdown bold",
        "json",
        "two words",
        "leading hyphen",
    }
)
REFUSED_AS_DEFINITION = frozenset(
    {
        "whitespace",
        "10MB",
        "10MB lines",
        "10MB no newline with word",
        "nul",
        "binary",
        "ansi escape",
        "bell and backspace",
        "lone surrogate",
        "private use",
        "1000 sentences",
        "601 chars",
        "crlf header",
        # invisible characters that reorder or hide text shown to other people
        "rtl override",
        "zero width",
        "bom",
    }
)
# token-tuning steps the page's callback takes (whole numbers, also as text, in 0..500)
ACCEPTED_AS_STEPS = ("0", "-0.0", "'7'", "True", "' 5 '")  # reprs of NUMBERS entries

# Gradio's answer when a handler raised something other than gr.Error: a crash, not a refusal.
CRASH = re.compile(r"has raised an exception|Internal Server Error|^Error$", re.I)


def expected(accepted: bool) -> str:
    return "ok" if accepted else "refused"


def crashed(message: str) -> bool:
    return bool(CRASH.search(str(message).strip()))
