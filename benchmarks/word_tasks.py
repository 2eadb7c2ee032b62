"""Word-vector tasks: Chimera (Lazaridou, Marelli & Baroni 2017) and Definitional Nonce
(Herbelot & Baroni 2017), scored on the learned *input* vector by cosine to reference vectors.

Chimera: per item, Spearman ρ between cos(learned, probe reference vectors) and the mean
human ratings, averaged over items (items where ρ is undefined are skipped). Definitional
Nonce: rank of the gold word among WordNet single-word lemmas ∪ the gold words; MRR and
median rank. The blank is filled with the made-up string `runs.STAND_IN`.
"""

from __future__ import annotations

import logging
import math
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

from backends import shared_data
from backends.pipeline import load_lm
from backends.reference import cosines, reference_vectors, unit
from benchmarks import data, metrics
from benchmarks.results import Result
from benchmarks.runs import STAND_IN, RunOptions, describe_config, examples_for, learn_each, limited

log = logging.getLogger(__name__)

ORACLE = "oracle"  # Chimera: the mean of the two source words' reference vectors
_ORACLE_CONFIG = {"label": "mean of the two source words"}


def chimera_rho(similarities: list[float], ratings: list[float]) -> float:
    """Spearman ρ between a learner's similarities to the probes and the human ratings."""
    return metrics.spearman(similarities, ratings)


def gold_rank(similarities: np.ndarray, gold: int) -> int:
    """1-based rank of row `gold`: 1 + rows scoring strictly higher (vectorised rank_of)."""
    return 1 + int(np.sum(similarities > similarities[gold]))


def nanmean(values: list[float]) -> tuple[float, int]:
    """(mean of the non-nan values, how many there were)."""
    kept = [v for v in values if not math.isnan(v)]
    return (sum(kept) / len(kept) if kept else math.nan), len(kept)


def chimera_level(path: Path, items: list[shared_data.ChimeraItem]) -> int:
    """The level from the file name (`.l4.`), else the passages of the first item."""
    match = re.search(r"\.l(\d)\.", path.name)
    return int(match.group(1)) if match else len(items[0].examples)


def run_chimera(options: RunOptions) -> list[Result]:
    """Per level, each learner's mean ρ and, where the chimera's two source words are known
    (`sources.dev.tsv`), the oracle's (the mean of their reference vectors) on the same
    items with `of_oracle` = learner ρ / oracle ρ beside it."""
    lm = load_lm(options.lm, options.device)
    sources = data.chimera_sources()
    results = []
    for path in options.data:
        items = shared_data.load_chimera(path=path)
        level = chimera_level(path, items)
        rhos: dict[str, list[float]] = defaultdict(list)
        ids: list[str] = []
        for item in limited(items, options.limit, options.offset):
            ids.append(item.id)
            probes = reference_vectors(lm, item.probes)  # [p, d]
            vectors = {
                emb.learner: emb.input_vector
                for emb in learn_each(
                    lm, options.learners, STAND_IN, examples_for(item.examples), options
                )
            }
            if item.id in sources:
                vectors[ORACLE] = reference_vectors(lm, list(sources[item.id])).mean(0)
            for learner, vector in vectors.items():
                sims = cosines(vector, probes).tolist()
                rhos[learner].append(chimera_rho(sims, item.ratings))
        oracle, _ = nanmean(rhos[ORACLE])
        for learner in (*options.learners, ORACLE):
            if not rhos[learner]:
                continue
            mean, n = nanmean(rhos[learner])
            scores = {"spearman": mean}
            if rhos[ORACLE] and len(rhos[ORACLE]) == len(rhos[learner]):
                scores["of_oracle"] = mean / oracle if oracle > 0 else math.nan
                if learner != ORACLE:
                    low, high = share_interval(rhos[learner], rhos[ORACLE], options.seed)
                    scores |= {"of_oracle_low": low, "of_oracle_high": high}
            config = describe_config(learner, options) if learner != ORACLE else _ORACLE_CONFIG
            samples = [{"item": i, "rho": r} for i, r in zip(ids, rhos[learner])]
            results.append(Result(learner, level, n, scores, config, samples=samples))
            log.info("chimera L%d %s: rho %.3f over %d items", level, learner, mean, n)
    return results


def share_interval(
    learner: list[float], oracle: list[float], seed: int, rounds: int = 1000
) -> tuple[float, float]:
    """95% bootstrap interval of mean(learner ρ) / mean(oracle ρ), items resampled in
    pairs: at 30 items per level the share moves by tenths from one sample to the next."""
    import numpy as np

    from benchmarks.intervals import resampled_means

    pairs = np.array(
        [(a, b) for a, b in zip(learner, oracle) if not (math.isnan(a) or math.isnan(b))]
    )
    if len(pairs) < 2:
        return math.nan, math.nan
    means = resampled_means(pairs, seed, rounds)  # [rounds, 2]
    shares = means[:, 0] / np.where(means[:, 1] > 0, means[:, 1], np.nan)
    low, high = np.nanpercentile(shares, [2.5, 97.5])
    return float(low), float(high)


def run_nonce(options: RunOptions) -> list[Result]:
    from backends.reference import candidate_matrix

    lm = load_lm(options.lm, options.device)
    items = [item for path in options.data for item in shared_data.load_definitional_nonce(path)]
    items = limited(items, options.limit, options.offset)
    words, matrix = candidate_matrix(lm, [item.word for item in items])
    index = {w: i for i, w in enumerate(words)}
    ranks: dict[str, list[int]] = defaultdict(list)
    for item in items:
        examples = examples_for([item.sentence])
        for emb in learn_each(lm, options.learners, STAND_IN, examples, options):
            sims = matrix @ unit(emb.input_vector)
            ranks[emb.learner].append(gold_rank(sims, index[item.word.lower()]))
    config_common = {"candidates": len(words)}
    return [
        Result(
            learner,
            1,
            len(ranks[learner]),
            {
                "mrr": metrics.mrr(ranks[learner]),
                "median_rank": metrics.median_rank(ranks[learner]),
            },
            {**describe_config(learner, options), **config_common},
        )
        for learner in options.learners
    ]
