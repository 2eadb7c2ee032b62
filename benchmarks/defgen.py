"""DefGen and the automatic Elo tournament (CoLLEGe, Teehan, Lake & Ren 2024, §5.2 and Table 2).

DefGen: learn the word from its first k examples (k = 1, 2, 3), generate with CoLLEGe's
probe 'The word "<nonce>" is defined as' (all learners of an item in one batched
generation), keep the first sentence, and score it against the reference gloss with
BERTScore F1 (local encoder) and ROUGE-L.

Tournament: per item, a random pair of learners and a random k; the definition with the
higher BERTScore F1 to the reference wins, a tie within `tie_margin`. Votes go to the
arena's vote store as judge="auto"; ratings are online Elo (init 1000, K 4) and a
bootstrapped Bradley-Terry leaderboard (demo.ratings).
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict

from backends.definitions import define
from backends.pipeline import load_lm
from benchmarks import data, metrics
from benchmarks.bertscore import BertScoreConfig, BertScorer
from benchmarks.results import Result
from benchmarks.runs import NONCE, RunOptions, describe_config, examples_for, learn_each, limited

log = logging.getLogger(__name__)

JUDGE = "auto:bertscore-minilm-l6"  # the annotator name the tournament's votes carry


def load_items(options: RunOptions) -> list[data.DefGenItem]:
    items = [item for path in options.data for item in data.load_defgen(path)]
    return limited(items, options.limit)


def run_defgen(options: RunOptions) -> list[Result]:
    lm = load_lm(options.lm, options.device)
    scorer = BertScorer(BertScoreConfig(), device=str(lm.device))
    outputs: dict[tuple[str, int], list[tuple[str, str]]] = defaultdict(list)  # (ref, pred)
    for number, item in enumerate(load_items(options), start=1):
        for k in options.shots:
            if len(item.examples) < k:
                continue  # an item with fewer examples than k does not count at k
            embeddings = learn_each(
                lm, options.learners, NONCE, examples_for(item.examples[:k]), options
            )
            for d in define(lm, embeddings, max_new_tokens=options.max_new_tokens):
                outputs[d.learner, k].append((item.definition, metrics.first_sentence(d.text)))
        log.info("defgen item %d (%s) done", number, item.word)
    results = []
    for k in options.shots:
        for learner in options.learners:
            pairs = outputs[learner, k]
            refs, preds = [p[0] for p in pairs], [p[1] for p in pairs]
            f1 = scorer.f1(refs, preds)
            scores = {
                "bertscore_f1": sum(f1) / len(f1) if f1 else float("nan"),
                "rouge_l": _mean([metrics.rouge_l(r, p) for r, p in pairs]),
            }
            config = {**describe_config(learner, options), "bertscore": scorer.config.record()}
            results.append(Result(learner, k, len(pairs), scores, config))
    return results


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def judge(f1_a: float, f1_b: float, margin: float) -> str:
    """The reference-based verdict: 'a' or 'b' if its F1 is higher by more than `margin`."""
    if f1_a - f1_b > margin:
        return "a"
    if f1_b - f1_a > margin:
        return "b"
    return "tie"


def default_db() -> str:
    """The arena's own vote store: NONCE_DB, else <cache dir>/votes.sqlite (demo.settings)."""
    from demo.settings import load_demo_settings

    return load_demo_settings().db_target


def run_tournament(options: RunOptions) -> list[Result]:
    from demo.ratings import leaderboard
    from demo.store import AutoVote, Item, VoteStore

    if len(options.learners) < 2:
        raise ValueError("the tournament needs at least two learners")
    lm = load_lm(options.lm, options.device)
    scorer = BertScorer(BertScoreConfig(), device=str(lm.device))
    rng = random.Random(options.seed)
    votes = []
    for item in load_items(options):
        pair = tuple(rng.sample(list(options.learners), 2))
        k = rng.choice(
            [k for k in options.shots if k <= len(item.examples)] or [len(item.examples)]
        )
        examples = examples_for(item.examples[:k])
        found = define(lm, learn_each(lm, pair, NONCE, examples, options), options.max_new_tokens)
        texts = [metrics.first_sentence(d.text) for d in found]
        f1_a, f1_b = scorer.f1([item.definition] * 2, texts)
        verdict = judge(f1_a, f1_b, options.tie_margin)
        seen = Item(NONCE, tuple(ex.text for ex in examples))
        votes.append(AutoVote(seen, *pair, *texts, lm=lm.name, vote=verdict, annotator=JUDGE))
    store = VoteStore.open(options.db or default_db())
    try:
        store.record_auto_votes(votes)
    finally:
        store.close()
    board = leaderboard(
        [(v.learner_a, v.learner_b, v.vote) for v in votes], rounds=100, seed=options.seed
    )
    settings = {"tie_margin": options.tie_margin, "judge": JUDGE, "rounds": 100}
    return [
        Result(
            row.learner,
            None,
            row.battles,
            {
                "elo": row.elo,
                "bt_score": row.score,
                "ci_low": row.ci_low,
                "ci_high": row.ci_high,
                "rank": row.rank,
            },
            {**describe_config(row.learner, options), **settings},
        )
        for row in board.rows
    ]
