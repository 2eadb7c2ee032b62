"""The learners registry: one module per published method, all returning a NonceEmbedding.

>>> learner = load_learner("centroid")
>>> embedding = learner.learn(lm, "wug", [Example("A wug is a small bird.")])
"""

from __future__ import annotations

from backends.learners.base import Learner, NonceEmbedding
from backends.learners.cache import CacheLearner
from backends.learners.centroid import CentroidLearner
from backends.learners.college import CollegeLearner
from backends.learners.definition_reader import DefinitionReaderLearner
from backends.learners.prompting import PromptingLearner
from backends.learners.token_tuning import TokenTuningLearner
from backends.registry import unknown_name_message

# CoLLEGe reads its trained generator from assets/college/ (see training/college.py).
LEARNERS: dict[str, type[Learner]] = {
    cls.name: cls
    for cls in (
        CentroidLearner,
        TokenTuningLearner,
        PromptingLearner,
        DefinitionReaderLearner,
        CacheLearner,
        CollegeLearner,
    )
}


def learner_names() -> list[str]:
    return list(LEARNERS)


def example_learners() -> list[str]:
    """The learners that learn from example sentences (all but the definition reader)."""
    return [name for name, cls in LEARNERS.items() if cls.reads_examples]


def parse_learners(spec: str | list[str]) -> list[str]:
    """'all', 'centroid,cache' or a list -> validated names in registry order."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [n.strip() for n in names if n and n.strip()]
    if names == ["all"]:
        return learner_names()
    if not names:
        raise ValueError(f"choose at least one learner: {', '.join(LEARNERS)} or all")
    for name in names:
        if name not in LEARNERS:
            raise ValueError(unknown_name_message("learner", name, LEARNERS))
    return [n for n in LEARNERS if n in names]


def load_learner(name: str, config=None) -> Learner:
    """A learner by name, with its config dataclass (default settings when None)."""
    if name not in LEARNERS:
        raise ValueError(unknown_name_message("learner", name, LEARNERS))
    cls = LEARNERS[name]
    return cls() if config is None else cls(config)


__all__ = [
    "LEARNERS",
    "Learner",
    "NonceEmbedding",
    "example_learners",
    "learner_names",
    "load_learner",
    "parse_learners",
]
