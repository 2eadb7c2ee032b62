"""A 2-D map of learned vectors among their vocabulary neighbours (t-SNE, van der Maaten &
Hinton 2008), falling back to PCA when there are too few points for t-SNE to mean anything."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.decomposition import PCA
from sklearn.manifold import TSNE

MIN_TSNE_POINTS = 6


@dataclass(frozen=True)
class MapPoint:
    label: str  # token, or the learner's name for a learned vector (or the real word's label)
    group: str  # the learner (or real word) whose neighbourhood this point belongs to
    learned: bool  # a learned vector, or the real word's (True), or a vocabulary neighbour
    similarity: float  # cosine to the group's vector (1.0 for the vector itself)
    x: float
    y: float


def project(vectors: np.ndarray, seed: int = 0, perplexity: float = 30.0) -> tuple[np.ndarray, str]:
    """[n, d] -> ([n, 2], method); cosine geometry, perplexity clamped below n."""
    vectors = np.asarray(vectors, dtype=np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(min=1e-8)
    n = len(unit)
    if n < MIN_TSNE_POINTS:
        coords = (
            PCA(n_components=2, random_state=seed).fit_transform(unit)
            if n > 2
            else np.pad(unit[:, :2], ((0, 0), (0, max(0, 2 - unit.shape[1]))))
        )
        return coords, "pca"
    perplexity = float(min(perplexity, max(1.0, (n - 1) / 3)))
    tsne = TSNE(
        n_components=2, perplexity=perplexity, metric="cosine", init="pca", random_state=seed
    )
    return tsne.fit_transform(unit), "tsne"


def neighbourhood_map(
    learned: dict[str, np.ndarray],
    neighbours: dict[str, list],
    vocab_vectors: dict[str, np.ndarray],
    seed: int = 0,
) -> tuple[list[MapPoint], str]:
    """Points for every learner's vector and its neighbours (dict keys: learner names, and
    the real word's label where one is given: `backends.pipeline.real_word_label`)."""
    if not learned:  # every vector chosen was a zero vector: nothing to place
        return [], "none"
    labels, groups, flags, sims, rows = [], [], [], [], []
    for name, vector in learned.items():
        labels.append(name), groups.append(name), flags.append(True), sims.append(1.0)
        rows.append(vector)
        for neighbour, row in zip(neighbours[name], vocab_vectors[name]):
            labels.append(neighbour.token), groups.append(name), flags.append(False)
            sims.append(neighbour.similarity), rows.append(row)
    coords, method = project(np.stack(rows), seed=seed)
    points = [
        MapPoint(lbl, grp, flag, float(sim), float(x), float(y))
        for lbl, grp, flag, sim, (x, y) in zip(labels, groups, flags, sims, coords)
    ]
    return points, method
