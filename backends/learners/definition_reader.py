"""On-the-fly definition embeddings (Bahdanau et al. 2017, "Learning to compute word
embeddings on the fly").

A rare word's embedding is computed from auxiliary data rather than from its contexts:
here a definition the person types, WordNet glosses of the word's lemma, and the word's
spelling. Each source is read by mean pooling of the LM's own input embeddings (MP);
the paper's MP-L adds a learned linear map after pooling, which this module applies when
one is given.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from backends.learners.base import Learner, NonceEmbedding, like_a_row, row_stats
from backends.learners.centroid import context_token_ids

log = logging.getLogger(__name__)


# Shown with the definition when the reader had nothing to read but the word itself.
SPELLING_ONLY = (
    "This learner reads a definition, not example sentences: with no definition hint and "
    "no WordNet entry it read only the word's spelling, so its definition is a guess from "
    "how the word looks. Type a definition hint to see what it can do."
)


@dataclass(frozen=True)
class DefinitionReaderConfig:
    # Read WordNet glosses of the word's lemma (a made-up word usually has none).
    use_wordnet: bool = True
    # How many senses' glosses to read, most frequent first.
    max_senses: int = 3
    # Read the word's own sub-word tokens (spelling).
    use_spelling: bool = True
    # Scale what is distinctive in the pooled vector to a typical row's spread.
    match_norm: bool = True


def auxiliary_texts(word: str, definition: str | None, config: DefinitionReaderConfig) -> dict:
    """The sources the reader pools, by name: definition, wordnet, spelling."""
    sources = {}
    if definition:
        sources["definition"] = definition
    if config.use_wordnet:
        from backends.lexicon import glosses

        found = glosses(word, max_senses=config.max_senses)
        if found:
            sources["wordnet"] = " ; ".join(found)
    if config.use_spelling:
        sources["spelling"] = " " + word
    return sources


class DefinitionReaderLearner(Learner):
    name = "definition_reader"
    paper = "Bahdanau et al. 2017, on-the-fly embeddings from definitions and spelling (MP / MP-L)"
    reads_examples = False  # a definition, WordNet and the spelling; never the sentences

    def __init__(
        self,
        config: DefinitionReaderConfig = DefinitionReaderConfig(),
        linear_map: torch.Tensor | None = None,
    ):
        self.config = config
        self.linear_map = linear_map  # [d, d] for MP-L, None for plain MP

    def _learn(self, lm, word, examples, definition):
        sources = auxiliary_texts(word, definition, self.config)
        token_lists = []
        for name, text in sources.items():
            ids = lm.encode(text, bos=False)
            # The spelling is every sub-word piece; texts are read for their content words.
            ids = ids if name == "spelling" else context_token_ids(lm, ids, content_only=True)
            if ids:
                token_lists.append(torch.tensor(ids, device=lm.device))
        if not token_lists:
            raise ValueError(f"nothing to read for {word!r}: give a definition")
        vin = self._pool(lm, lm.input_matrix, token_lists, "input")
        vout = vin.clone() if lm.tied else self._pool(lm, lm.output_matrix, token_lists, "output")
        info = {"sources": sorted(sources)}
        if not {"definition", "wordnet"} & set(sources):
            info["note"] = SPELLING_ONLY
        return NonceEmbedding(self.name, word, vin, vout, info=info)

    @torch.no_grad()
    def _pool(self, lm, matrix, token_lists, space) -> torch.Tensor:
        """Mean over each source's tokens, then over sources (each source counts once)."""
        vector = torch.stack([matrix[ids].mean(0) for ids in token_lists]).mean(0)  # [d]
        if self.linear_map is not None:
            vector = vector @ self.linear_map.to(vector)  # MP-L
        return like_a_row(vector, row_stats(lm, space)) if self.config.match_norm else vector
