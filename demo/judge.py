"""The automatic judge on people's battles: the benchmarks' tournament reader, applied to a
prepared item's two definitions so the leaderboard can say how often people agree with it.

As `benchmarks.defgen.run_tournament` judges (its `battle_verdicts` and `judge`, imported,
not copied): each definition's first sentence is degenerate (empty, says the made-up word,
repeats a word 3-gram, loops on a word or a quotation, babbles:
`benchmarks.metrics.degenerate`) or not, and its identification margin is
cos(own reference) - max cos(29 other references), by mean-pooled
MiniLM sentence embeddings, read with the hidden real word masked as the made-up one (a
definition that names the word is not judged on the name alone). A degenerate definition
loses to a usable one (both: "both_bad"); otherwise the wider margin wins, within
`tie_margin` a tie. The references are the pool's WordNet glosses (`Item.reference`); the
29 others are drawn from the pool, seeded per item, so every battle on an item faces the
same line-up.

The verdict is computed once, when a battle is made, and stored with it (`Matchup.auto_vote`)
under the judge's name (`Matchup.auto_judge`: the tournament's, so a change of reading there
starts a fresh agreement count here, and the line-up of references it reads against, so a
rebuilt pool does too): two short texts through MiniLM, a few milliseconds
beside the seconds the LM spends sampling them. The encoder and the pool's reference vectors
are loaded at the first verdict.

    judge = PoolJudge(pool)
    judge.verdict(item, "a heavy iron block", "a small bird")  # "a" | "b" | "tie" | "both_bad"
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Sequence
from typing import Any

from demo.store import Item
from demo.vocabulary import VoteValue

log = logging.getLogger(__name__)

DISTRACTORS = 29  # as the tournament: the own reference against 29 others (chance 1/30)
TIE_MARGIN = 0.01  # the tournament's default tie band on the margin difference


class PoolJudge:
    """Verdicts on battles over pool items that carry a reference gloss; None for any other."""

    def __init__(self, pool: Sequence[Item], seed: int = 0, tie_margin: float = TIE_MARGIN):
        self.items = [item for item in pool if item.reference]  # the references, in pool order
        self._number = {item: n for n, item in enumerate(self.items)}
        # what a verdict reads besides the two texts: every reference (the 29 others are drawn
        # by position in this list), and each item's word and answer (masked in the texts)
        line_up = "\n".join(f"{i.word}\t{i.answer}\t{i.reference}" for i in self.items)
        self.line_up = hashlib.sha256(line_up.encode()).hexdigest()[:8]
        self.seed, self.tie_margin = seed, tie_margin
        self._loaded: tuple[Any, Any] | None = None  # (scorer, [references, d] unit vectors)
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """The judge's name as its verdicts store it: the tournament's, with the task
        version at which its reading last changed (`JUDGE_VERSION`), the line-up of
        references it reads against (a rebuilt pool draws other distractors) and any
        setting of ours that differs from the tournament's, since verdicts of two readings
        must not be pooled."""
        from benchmarks.tasks import JUDGE, JUDGE_VERSION  # light: no model code imported

        name = f"{JUDGE}, tournament v{JUDGE_VERSION}, references {self.line_up}"
        if (self.seed, self.tie_margin) == (0, TIE_MARGIN):
            return name
        return f"{name}; seed {self.seed}, tie margin {self.tie_margin:g}"

    def judges(self, item: Item) -> bool:
        """Whether this item has a reference among enough others to judge it."""
        return item in self._number and len(self.items) > 1

    def verdict(self, item: Item, output_a: str, output_b: str) -> VoteValue | None:
        """The tournament's verdict on A's and B's definitions of `item` (None: no reference)."""
        if not self.judges(item):
            return None
        from backends.definitions import CUT_MARK, first_sentence
        from benchmarks import metrics
        from benchmarks.defgen import battle_verdicts, judge

        number = self._number[item]
        scorer, references = self._load()
        # the texts the tournament would score: a cut one without the mark shown after it
        texts = [first_sentence(out.removesuffix(CUT_MARK)) for out in (output_a, output_b)]
        others = metrics.distractors(len(self.items), number, DISTRACTORS, self.seed)
        a, b = battle_verdicts(
            scorer, references, number, others, texts, item.answer, item.word, [item.word] * 2
        )
        return judge(a, b, self.tie_margin)  # type: ignore[return-value]

    def _load(self) -> tuple[Any, Any]:
        with self._lock:  # one load; concurrent battles wait for it
            if self._loaded is None:
                from benchmarks.bertscore import BertScoreConfig, BertScorer

                scorer = BertScorer(BertScoreConfig(), device="cpu")
                references = scorer.sentence_vectors([item.reference for item in self.items])
                log.info("automatic judge ready: %d reference glosses", len(self.items))
                self._loaded = (scorer, references)
            return self._loaded
