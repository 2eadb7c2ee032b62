"""The arena: blind battles between two learners on one word, created and judged server-side.

The server picks the item and the learners, samples both definitions for this battle alone
(seeded per battle; the decoding and seed are stored with it, see demo/sampling.py), stores the
battle (`VoteStore.create_battle`) and hands the page only the battle's unguessable id; a vote
names that id and the store checks it belongs to the same annotator and has no vote yet, so a
client can neither forge nor replay one, nor recognise a learner by a text seen before.
On a prepared item the automatic judge's verdict on the two sampled texts (demo/judge.py) is
stored with the battle, so the leaderboard can compare people with it.
"""

from __future__ import annotations

import logging
import random
import secrets
import threading
from collections.abc import Sequence

from backends.definitions import ORACLE_IN_CONTEXT
from backends.inputs import check_examples, check_word
from backends.learners import example_learners, parse_learners
from demo.engine import EmbeddingCache, learner_configs, lm_name, run_battle, set_up_lm
from demo.items import arena_pool
from demo.judge import PoolJudge
from demo.ratelimit import TokenBuckets
from demo.settings import DemoSettings
from demo.store import Battle, Item, Matchup, Vote, VoteStore

log = logging.getLogger(__name__)

# what a repeated battle copies from the judged one
_MATCHUP_FIELDS = (
    "item",
    "learner_a",
    "learner_b",
    "output_a",
    "output_b",
    "lm",
    "decoding",
    "seed",
    "auto_vote",
    "auto_judge",
)


def checked_item(word: str, examples: Sequence[str]) -> Item:
    """A person's own word and sentences, checked as the library checks them."""
    word = check_word(word)
    return Item(word, tuple(e.text for e in check_examples(word, list(examples))))


class Arena:
    """Battles and votes over one store, with an embedding cache and rate limits."""

    def __init__(
        self,
        settings: DemoSettings,
        store: VoteStore,
        cache: EmbeddingCache,
        rng: random.Random | None = None,
    ) -> None:
        self.settings, self.store, self.cache = settings, store, cache
        self.sampling = settings.arena_sampling
        self._canned: dict[tuple[Item, str], str] = {}
        # a battle shows sentences and no definition: by default only learners that read
        # sentences, not the definition reader, which would only guess from the spelling
        self.learners = parse_learners(list(settings.arena_learners) or example_learners())
        if len(self.learners) < 2:
            raise ValueError(f"the arena needs two learners or more, got {self.learners}")
        self.pool = arena_pool(settings.arena_items)
        self.oracle_share = settings.arena_oracle_share
        self.judge = PoolJudge(self.pool)
        self.configs = learner_configs(settings.arena_tt_steps)
        self.battle_limit = TokenBuckets(
            {"annotator": settings.battle_limit, "address": settings.address_battle_limit},
            "new battles",
        )
        self.vote_limit = TokenBuckets(
            {"annotator": settings.vote_limit, "address": settings.address_vote_limit}, "votes"
        )
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()

    def pick(self, item: Item | None = None) -> tuple[Item, str, str, int]:
        """A random pool item (or `item`), an ordered pair of different sides, and a battle
        seed. The sides are two learners or, on `arena_oracle_share` of the items with a
        real word behind them, a learner and the LM told that word (`ORACLE_IN_CONTEXT`)."""
        with self._rng_lock:
            item = item or self._rng.choice(self.pool)
            if self.oracle_share and item.answer and self._rng.random() < self.oracle_share:
                a, b = self._rng.sample([ORACLE_IN_CONTEXT, self._rng.choice(self.learners)], 2)
            else:
                a, b = self._rng.sample(self.learners, 2)
        # from the OS's generator, not the Mersenne Twister above: exports publish seeds, and
        # enough of those would let someone predict the next battle's seed and texts
        return item, a, b, secrets.randbits(31)

    def new_battle(
        self,
        annotator: str,
        item: Item | None = None,
        lm: str | None = None,
        address: str | None = None,
    ) -> Battle:
        """Create a battle on `item` (None: a pool item) for `annotator` at `address`."""
        self.battle_limit.take(annotator=annotator, address=address)
        if item is None:
            earlier = self._repeat(annotator)
            if earlier is not None:
                return self.store.create_battle(earlier, annotator=annotator)
        item, a, b, seed = self.pick(item)
        canned = [self._canned.get((item, name)) for name in (a, b)]
        if None not in canned:  # ready-made stand-ins (load tests): no seed, nothing to judge
            texts, decoding, seed_kept, verdict = canned, None, None, None
        else:
            log.info("arena samples %s and %s on %r (seed %d)", a, b, item.word, seed)
            # loaded (converted, the first time on a machine: about a minute) before the
            # battle's GPU window, as a Learn click does: on ZeroGPU, where the warm-up is
            # skipped, a first battle converting inside its 20 s was cut off
            set_up_lm(lm, "auto")
            found = run_battle(
                item,
                [a, b],
                lm=lm,
                configs=self.configs,
                decoding=self.sampling.decoding(seed),
                max_new_tokens=self.sampling.max_new_tokens,
                cache=self.cache,
            )
            texts, decoding, seed_kept = [found[a], found[b]], self.sampling.as_json(seed), seed
            verdict = self.judge.verdict(item, *texts)
        judged_by = None if verdict is None else self.judge.name
        matchup = Matchup(
            item,
            a,
            b,
            *texts,
            lm_name(lm),
            decoding=decoding,
            seed=seed_kept,
            auto_vote=verdict,
            auto_judge=judged_by,
        )
        return self.store.create_battle(matchup, annotator=annotator)

    def vote(self, battle_id: str, choice: str, annotator: str, address: str | None = None) -> Vote:
        """Record the one vote a battle takes (VoteRefused for unknown, replayed or others')."""
        self.vote_limit.take(annotator=annotator, address=address)
        return self.store.record_vote(str(battle_id or "").strip(), choice, annotator)  # type: ignore[arg-type]

    def _repeat(self, annotator: str) -> Matchup | None:
        """Now and then (repeat_share), another annotator's judged battle, shown unchanged."""
        with self._rng_lock:
            draw = self._rng.random()
        if draw >= self.settings.repeat_share:
            return None
        earlier = self.store.repeat_candidate(annotator, among=self.pool)
        if earlier is None:
            return None
        fields = {name: getattr(earlier, name) for name in _MATCHUP_FIELDS}
        return Matchup(**fields, repeat_of=earlier.battle_id)

    def prefill(self, items: Sequence[Item], definitions: dict[str, str]) -> None:
        """Ready-made definitions per learner for these items, used instead of sampling (the
        load driver and tests use them to measure the API and the store, not the model)."""
        for item in items:
            for learner, text in definitions.items():
                self._canned[(item, learner)] = text
