"""Plotly figures: nearest neighbours per learner, the t-SNE map, the win-rate heat map.

Tokens and words are escaped: Plotly reads a few HTML tags (<b>, <a href>) in its labels.
"""

from __future__ import annotations

import html
import math
import zlib
from typing import TYPE_CHECKING

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

if TYPE_CHECKING:
    from backends.pipeline import LearnResult
    from backends.projection import MapPoint

PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6")
REAL_WORD_COLOUR = "#333333"  # the real word a learner aims at, on the map


def _safe(text: str) -> str:
    return html.escape(str(text), quote=False)


def learner_colour(name: str) -> str:
    """One colour per learner wherever it is drawn: its place among the library's learners
    (the bar charts leave out a learner without neighbours, so places among the ones drawn
    would give the same learner a different colour in the chart and in the map below)."""
    from backends.learners import learner_names  # the figures are built after the learners
    from backends.pipeline import is_real_word_label

    if is_real_word_label(name):  # the target, not a learner: a colour no learner has
        return REAL_WORD_COLOUR
    names = learner_names()
    place = names.index(name) if name in names else zlib.crc32(name.encode())
    return PALETTE[place % len(PALETTE)]


def neighbours_figure(result: LearnResult, space: str) -> go.Figure:
    """One horizontal bar chart per learner: its k nearest vocabulary tokens by cosine."""
    rows = [r for r in result.results if r.neighbours.get(space)]
    # a zero vector (the cache's output vector: its word's probability comes from its store)
    # has no direction, so no neighbours: said under the title rather than left out unsaid
    missing = [_safe(r.learner) for r in result.results if not r.neighbours.get(space)]
    cols = min(3, max(1, len(rows)))
    lines = max(1, math.ceil(len(rows) / cols))
    fig = make_subplots(
        rows=lines,
        cols=cols,
        subplot_titles=[_safe(r.learner) for r in rows] or [""],
        horizontal_spacing=0.12,
    )
    for k, row in enumerate(rows):
        found = row.neighbours[space][::-1]  # best at the top
        fig.add_trace(
            go.Bar(
                x=[n.similarity for n in found],
                y=[f"{i}. {_safe(repr(n.token))}" for i, n in zip(range(len(found), 0, -1), found)],
                orientation="h",
                marker_color=learner_colour(row.learner),
                hovertemplate="%{y}<br>cosine %{x:.3f}<extra></extra>",
                name=_safe(row.learner),
            ),
            row=k // cols + 1,
            col=k % cols + 1,
        )
    title = f"Nearest neighbours of “{_safe(result.word)}” ({space} embeddings)"
    if missing:
        title += f"<br><sup>no neighbours for {', '.join(missing)}: a zero vector here</sup>"
    fig.update_layout(
        title=title,
        showlegend=False,
        height=max(320, 300 * lines),
        margin={"l": 10, "r": 10, "t": 70, "b": 10},
    )
    return fig


def map_figure(points: list[MapPoint], method: str, word: str, space: str) -> go.Figure:
    """Every learner's vector (a star) among its neighbours (dots), one colour per learner."""
    fig = go.Figure()
    groups = list(dict.fromkeys(p.group for p in points))
    for group in groups:
        for learned in (False, True):
            chosen = [p for p in points if p.group == group and p.learned == learned]
            if not chosen:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[p.x for p in chosen],
                    y=[p.y for p in chosen],
                    mode="markers+text" if learned else "markers",
                    text=[_safe(p.label) for p in chosen],
                    textposition="top center",
                    customdata=[[_safe(repr(p.label)), p.similarity] for p in chosen],
                    hovertemplate=_hover(learned, group),
                    marker={
                        "color": learner_colour(group),
                        "size": 16 if learned else 8,
                        "symbol": "star" if learned else "circle",
                    },
                    name=_safe(group) if learned else f"{_safe(group)} neighbours",
                    legendgroup=group,
                    showlegend=learned,
                )
            )
    title = {"tsne": "t-SNE", "pca": "PCA (too few points for t-SNE)"}.get(method, "No")
    fig.update_layout(
        title=f"{title} map of “{_safe(word)}” as each learner sees it ({space} embeddings)",
        height=520,
        xaxis={"visible": False},
        yaxis={"visible": False},
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
    )
    return fig


def _hover(learned: bool, group: str) -> str:
    from backends.pipeline import is_real_word_label  # built after the library loads

    if learned and is_real_word_label(group):  # not learnt: the word the learners aim at
        return f"{_safe(group)}: its reference vector<extra></extra>"
    if learned:
        return f"learned by {_safe(group)}<extra></extra>"
    similarity = f"cosine %{{customdata[1]:.3f}} to {_safe(group)}"
    return f"token %{{customdata[0]}}<br>{similarity}<extra></extra>"


# Win rates from light red (0) through near-white (0.5) to light blue (1): black numbers
# read on every cell at 7:1 or more (RdBu's dark ends left grey ones near 3.6:1), and pairs
# that never met show the grey plot behind them, which no share takes, marked "never met"
WIN_RATE_COLOURS = [[0.0, "#f4a582"], [0.5, "#f7f7f7"], [1.0, "#92c5de"]]
NEVER_MET = "#a6a6a6"


def win_rate_figure(learners: tuple[str, ...], win_rate: np.ndarray, title: str) -> go.Figure:
    """Heat map: row learner's share of wins against the column learner (ties count half)."""
    names = [_safe(n) for n in learners]
    fig = go.Figure(
        go.Heatmap(
            z=win_rate,
            x=names,
            y=names,
            zmin=0.0,
            zmax=1.0,
            colorscale=WIN_RATE_COLOURS,
            text=[["" if np.isnan(v) else f"{v:.2f}" for v in row] for row in win_rate],
            texttemplate="%{text}",
            textfont={"color": "#000000"},
            hovertemplate="%{y} beats %{x}: %{z:.2f}<extra></extra>",
        )
    )
    for i, j in zip(*np.nonzero(np.isnan(win_rate)), strict=True):
        if i != j:
            fig.add_annotation(
                x=names[j], y=names[i], text="never met", showarrow=False, font={"color": "#000000"}
            )
    if not learners:
        fig.add_annotation(text="No votes yet", showarrow=False, font={"size": 18})
        fig.update_xaxes(visible=False), fig.update_yaxes(visible=False)
    fig.update_layout(
        title=title,
        height=420,
        xaxis={"title": "opponent", "side": "bottom"},
        yaxis={"title": "learner", "autorange": "reversed"},
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        plot_bgcolor=NEVER_MET if learners else None,
    )
    return fig
