"""WCAG 2.1's contrast ratio, for the tests that check what the app draws text on."""

from __future__ import annotations


def luminance(colour: str) -> float:
    """Relative luminance of a #rrggbb colour."""
    channels = [int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(text: str, background: str) -> float:
    """(L1 + 0.05) / (L2 + 0.05), the lighter colour's luminance over the darker's."""
    high, low = sorted((luminance(text), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)
