"""Nonce Arena's library: a frozen causal LM learns new words from a few sentences.

>>> from backends import learn
>>> result = learn("wug", ["A wug is a small bird.", "The wug sang all night."], "centroid")
>>> result.results[0].definition

Nothing heavy is imported here: torch and transformers load when a function needs them,
and this package never imports the web app (gradio).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backends.pipeline import LearnResult


def learn(
    word: str, examples: list[str], learners: str | list[str] = "all", **options
) -> LearnResult:
    """See backends.pipeline.learn."""
    from backends.pipeline import learn as run

    return run(word, examples, learners, **options)


__all__ = ["learn"]
