"""What each button does, as plain functions: unpack inputs, call one library function, format.

No Gradio here: results are dicts keyed by the layout's component names, errors are the
library's ValueError/RuntimeError (the layout turns them into gr.Error), and progress is any
`progress(fraction, desc=...)` callable.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from backends.definitions import ORACLE_IN_CONTEXT
from backends.inputs import check_definition, check_real_word
from backends.learners import parse_learners
from backends.models import LM_PRESETS

if TYPE_CHECKING:
    from backends.pipeline import LearnResult
from demo import engine
from demo.arena import Arena, checked_item
from demo.boards import POS_FILTERS, PRELIMINARY_BATTLES, SENTENCES, Board, Boards
from demo.exports import EXPORT_FORMATS, ExportFolder, export_votes, safe_export_name
from demo.hub import HubMirror
from demo.identity import Identities, Who
from demo.items import ready_examples, split_sentences
from demo.plots import map_figure, neighbours_figure, win_rate_figure
from demo.ratelimit import TokenBuckets
from demo.settings import DemoSettings
from demo.store import Battle, Vote, VoteRefused, VoteStore
from demo.text import definition_cards, literal
from demo.vocabulary import JUDGE_TITLES, JUDGES, VOTE_SAID

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
SPACES = ("input", "output")


@dataclass
class LearnView:
    """One session's last Learn result and the maps drawn from it, per space."""

    result: LearnResult
    maps: dict[str, tuple[list, str]] = field(default_factory=dict)


class Callbacks:
    """The app's actions over one store, definition cache, arena and leaderboards."""

    def __init__(
        self,
        settings: DemoSettings,
        store: VoteStore | None = None,
        mirror: HubMirror | None = None,
    ) -> None:
        self.settings = settings
        self.store = store or VoteStore.open(settings.db_target)
        self.cache = engine.EmbeddingCache(settings.embedding_cache_size)
        self.arena = Arena(settings, self.store, self.cache)
        self.boards = Boards(self.store, settings.leaderboard_rounds, self.arena.judge.name)
        self.identities = Identities(settings.id_secret, settings.id_salt)
        self.exports = ExportFolder(settings.export_files_kept)
        # an export reads every vote: a few per minute per client address
        self.export_limit = TokenBuckets({"address": settings.export_limit}, "exports")
        # Learn holds the LM, one click at a time: a few clicks per minute per client address
        self.learn_limit = TokenBuckets({"address": settings.learn_limit}, "Learn requests")
        if mirror is None and settings.hub_dataset:  # NONCE_HUB_DATASET: votes outlive the Space
            mirror = HubMirror.start(
                settings.hub_dataset, settings.cache_dir / "hub-mirror", settings.hub_every_minutes
            )
        self.mirror = mirror

    def warm_up_in_background(self):
        """The Learn tab's first ready example, learned once on a background thread with
        the learners the tab ticks at first (`engine.warm_up_in_background`; NONCE_WARM_UP
        turns it off). None where there is nothing to learn or it is skipped."""
        ready = ready_examples(self.settings.examples)
        if not ready:
            return None
        try:
            learners = parse_learners(list(self.settings.learn_learners) or "all")
        except ValueError as err:  # NONCE_LEARN_LEARNERS names no learner we have
            log.warning("no warm-up: %s", err)
            return None
        return engine.warm_up_in_background(ready[0].word, ready[0].examples, learners)

    # ---- Learn tab

    def learn(
        self,
        word: str,
        sentences: str,
        definition: str,
        learners: list[str],
        lm: str,
        device: str,
        space: str,
        tt_steps: int = engine.DEFAULT_TT_STEPS,
        progress: engine.Progress = engine.no_progress,
        who: Who | None = None,
        real_word: str | None = None,
    ) -> dict[str, Any]:
        """Every chosen learner on the word; cards, neighbour chart and map of `space`.

        `who` is the page's client, limited per address (`DemoSettings.learn_limit`); a
        caller in this process passes none and is not limited. `real_word` (optional) is
        the word the new one stands for: its card, each learner's cosine to it, its point
        on the map."""
        item = checked_item(word, split_sentences(sentences))
        real_word = check_real_word(real_word, item.word)
        names = parse_learners(_names(learners))
        lm, device = _choice(lm, list(LM_PRESETS), "LM"), _choice(device, DEVICES, "device")
        space = _choice(space, SPACES, "space")
        tt_steps = _whole(tt_steps, "token-tuning steps")
        configs = engine.learner_configs(tt_steps)
        check_definition(definition)  # here too, so that a hint too long costs no click
        if who is not None:  # after the checks: a typo costs no click
            self.learn_limit.take(address=who.address or "unknown")
        start = time.perf_counter()
        engine.set_up_lm(lm, device, progress)  # type: ignore[arg-type]
        progress(0.1, desc=_learning_note(item.word, names, int(tt_steps)))
        result = engine.run_learn(
            item.word,
            item.examples,
            names,
            definition=definition or None,
            lm=lm,
            device=device,  # type: ignore[arg-type]
            configs=configs,
            max_new_tokens=self.settings.max_new_tokens,
            on_step=lambda what, i, n: progress(0.1 + 0.75 * i / n, desc=_step_note(what)),
            real_word=real_word,
        )
        engine.remember(self.cache, result, item, configs)
        progress(0.85, desc="Drawing the t-SNE map…")
        view = LearnView(result)
        plots = self._plots(view, space)
        return {
            "status": _run_summary(result, time.perf_counter() - start),
            "cards": _cards(result),
            "view": view,
            **plots,
        }

    def redraw(self, view: LearnView | None, space: str) -> dict[str, Any]:
        """The two plots of the last result in another embedding space."""
        if view is None:
            return {}
        return self._plots(view, _choice(space, SPACES, "space"))

    def _plots(self, view: LearnView, space: str) -> dict[str, Any]:
        if space not in view.maps:
            view.maps[space] = engine.run_map(view.result, space)
        points, method = view.maps[space]
        return {
            "neighbours_plot": neighbours_figure(view.result, space),
            "map_plot": map_figure(points, method, view.result.word, space),
        }

    # ---- Arena tab

    def browser_id(self, sent: str | None) -> str:
        """The id a browser keeps: the one it sent if this server signed it, else a fresh one."""
        return self.identities.ensure(sent)

    def battle_pool(self, who: Who) -> dict[str, Any]:
        """A blind battle on a prepared word."""
        annotator = self.identities.annotator(who)
        return _battle_view(self.arena.new_battle(annotator, address=who.address))

    def battle_own(self, word: str, sentences: str, who: Who) -> dict[str, Any]:
        """A blind battle on the person's own word and sentences."""
        # None: a form never opened sends nothing, which is no word ("enter the new word")
        item = checked_item("" if word is None else word, split_sentences(sentences))
        annotator = self.identities.annotator(who)
        return _battle_view(self.arena.new_battle(annotator, item=item, address=who.address))

    def vote(self, battle_id: str, choice: str, who: Who) -> dict[str, Any]:
        """Record the vote, then reveal which learner was which."""
        annotator = self.identities.annotator(who)
        try:
            vote = self.arena.vote(battle_id, choice, annotator, address=who.address)
        except VoteRefused:
            # two keys or clicks in quick succession: the first vote stands, and the second
            # is told so with the same reveal rather than an error
            earlier = self.store.vote_on(str(battle_id or "").strip()[:64])
            if earlier is None or earlier.annotator != annotator:
                raise
            said = VOTE_SAID[earlier.vote]
            note = f"You had already judged this battle (**{said}**); one vote per battle.\n\n"
            return {"reveal": note + self._reveal(earlier, annotator), "voting_open": False}
        if self.mirror is not None:
            try:
                self.mirror.record(vote)
            except OSError as err:  # the vote is stored; only its copy for the Hub is late
                log.error("hub mirror could not append vote %s: %s", vote.battle_id, err)
        return {"reveal": self._reveal(vote, annotator), "voting_open": False}

    def _reveal(self, vote: Vote, annotator: str) -> str:
        """Which learner was which, the real word, and how many battles `annotator` judged."""
        reveal = (
            f"Thanks — you judged **{VOTE_SAID[vote.vote]}**. "
            f"A was **{literal(vote.learner_a)}**, B was **{literal(vote.learner_b)}**."
        )
        if vote.item.answer:
            reveal += (
                f" The real word behind “{literal(vote.item.word)}” is "
                f"**{literal(vote.item.answer)}**."
            )
        if ORACLE_IN_CONTEXT in (vote.learner_a, vote.learner_b):
            reveal += (
                f" **{literal(ORACLE_IN_CONTEXT)}** is no learner: the LM itself, told the real "
                "word and given the same sentences with it in them, the ceiling a learner aims at."
            )
        mine = self.store.count_votes("human", annotator=annotator)
        return reveal + f"\n\nYou have judged **{mine}** battle{'s' * (mine != 1)} so far."

    # ---- Leaderboard tab

    def leaderboards(self, sentences: str = "all", pos: str = "all") -> dict[str, Any]:
        """Both boards, human and automatic, over battles that showed `sentences` sentences of
        a hidden word of part of speech `pos`: each with its plain and style-controlled tables,
        agreement, and win-rate heat map."""
        sentences = _choice(sentences, SENTENCES, "number of sentences")
        pos = _choice(pos, POS_FILTERS, "part of speech")
        out: dict[str, Any] = {}
        for judge in JUDGES:
            board = self.boards.board(judge, sentences, pos)  # type: ignore[arg-type]
            out[f"{judge}_table"] = board.table()
            out[f"{judge}_style"] = board.style_table()
            out[f"{judge}_heat"] = win_rate_figure(
                board.ratings.learners, board.win_rate, f"{JUDGE_TITLES[judge]}: win rates"
            )
            out[f"{judge}_note"] = _board_note(board)
            out[f"{judge}_style_note"] = _style_note(board)
        return out

    def export(self, fmt: str, judge: str, who: Who | None = None) -> dict[str, Any]:
        """Write the votes to a fresh file the page offers for download."""
        fmt = _choice(fmt, EXPORT_FORMATS, "export format")
        judge = _choice(judge, (*JUDGES, "all"), "judge")
        self.export_limit.take(address=(who or Who()).address or "unknown")
        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        path = self.exports.new_path(safe_export_name(f"nonce-arena-votes-{judge}-{stamp}.{fmt}"))
        count = export_votes(self.store, path, fmt, None if judge == "all" else judge)  # type: ignore[arg-type]
        log.info("exported %d votes to %s", count, path)
        return {"export_file": str(path), "export_note": f"{count} votes exported as {fmt}."}

    def close(self) -> None:
        """Release the store, remove the export folder, stop the hub mirror."""
        self.store.close()
        self.exports.close()
        if self.mirror is not None:
            self.mirror.stop()


def _board_note(board: Board) -> str:
    """Who judged, how many votes, and how far judges agree (people with each other, and with
    the automatic judge, whose verdict each prepared-word battle stores)."""
    plural = "" if board.votes == 1 else "s"
    note = (
        f"**{JUDGE_TITLES[board.judge]}** — {board.votes} vote{plural}. "
        f"Inter-annotator agreement: {board.agreement.summary()}."
    )
    if board.judge == "human":
        note += (
            " Agreement with the automatic judge (the tournament's reader, on prepared words): "
            f"{board.with_judge.summary('it judged')}"
        )
        if board.other_verdicts:
            plural = "" if board.other_verdicts == 1 else "s"
            note += (
                f" ({board.other_verdicts} verdict{plural} by another version of the judge"
                " not counted)"
            )
        note += f". Position: {board.position.summary()}."
    if board.preliminary:
        note += (
            f" Preliminary (fewer than {PRELIMINARY_BATTLES} battles; each vote still moves"
            f" the score a lot): {', '.join(board.preliminary)}."
        )
    if len(board.ratings.groups) > 1:
        groups = " | ".join(", ".join(group) for group in board.ratings.groups)
        note += (
            f" Never compared, directly or through another learner: {groups}. Scores of two"
            " groups share no scale, and ranks count within a group."
        )
    if board.ratings.ordered_only:
        split = "; ".join(
            " | ".join(", ".join(part) for part in sets) for sets in board.ratings.ordered_only
        )
        note += (
            f" Ordered, not measured apart: {split}. Every battle between two of these sets"
            " went the same way, so the votes say which is above and only the fit's prior"
            " (worth one even battle) how far."
        )
    return note


def _style_note(board: Board) -> str:
    """What the style-controlled table means, with the length effect the fit found."""
    effect, (low, high) = board.style.length_effect, board.style.length_ci
    if not board.style.rows:
        return "Style-controlled scores appear with the first votes."
    return (
        "Bradley–Terry with the definitions' length difference held fixed (as LMArena's style "
        f"control): a definition as long again as the other gains {_points(effect / 3)} points "
        f"on its own (95% interval {_points(low / 3)} to {_points(high / 3)})."
    )


def _points(value: float) -> str:
    """Signed whole points, with no "-0" for a value just below zero ("n/a" if not a number)."""
    return f"{round(value):+d}" if math.isfinite(value) else "n/a"


def _choice(value: str, options, what: str) -> str:
    if value not in options:
        raise ValueError(f"unknown {what} {str(value)[:60]!r}; choose one of: {', '.join(options)}")
    return value


def _names(learners: Any) -> list[str]:
    if isinstance(learners, str):
        return [learners]
    if not isinstance(learners, (list, tuple)) or not all(isinstance(n, str) for n in learners):
        raise ValueError("learners must be a list of learner names")
    return list(learners)


def _whole(value: Any, what: str) -> int:
    """A whole number from a slider or an API call (floats like 20.0 allowed); else ValueError."""
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a number, got {str(value)[:40]!r}") from None
    if not number.is_integer():
        raise ValueError(f"{what} must be a whole number, got {str(value)[:40]!r}")
    return int(number)


def _step_note(what: str) -> str:
    if what == "definitions":
        return "Generating every learner's definition in one batch…"
    if what == "token_tuning":
        return "token_tuning: gradient steps on the new token (the slow one on a CPU)…"
    if what == "real_word":
        return "The real word: what the LM says of a word it knows…"
    return f"{what}: learning the word…"


def _learning_note(word: str, names: list[str], tt_steps: int) -> str:
    note = f"Learning “{word}” with {', '.join(names)}…"
    if "token_tuning" in names and tt_steps:
        note += f" Token tuning takes {tt_steps} gradient steps: the slow part on a CPU."
    return note


def _cards(result: LearnResult) -> str:
    """Every learner's card, and with a real word given, that word's."""
    rows = [
        (
            r.learner,
            r.definition,
            r.embedding.seconds,
            r.embedding.info.get("note", ""),
            [(n.token, n.similarity) for n in r.neighbours.get("input", ())],
        )
        for r in result.results
    ]
    return definition_cards(result.word, rows, result.known)


def _run_summary(result: LearnResult, seconds: float) -> str:
    define = result.timings.get("define_batched", 0.0)
    return (
        f"Ran on **{literal(result.device)}** with **{literal(result.lm)}** in {seconds:.1f} s "
        f"(definitions, one batch: {define:.1f} s)."
    )


def _battle_view(battle: Battle) -> dict[str, Any]:
    return {
        "battle_id": battle.id,
        "battle_word": battle.item.word,
        "battle_sentences": "\n".join(battle.item.examples),
        "definition_a": battle.output_a,
        "definition_b": battle.output_b,
        "reveal": "Which definition fits the word better? The learners' names show after you vote.",
        "voting_open": True,
    }
