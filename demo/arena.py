"""The arena: blind battles between two learners on one word, created and judged server-side.

The server picks the item and the learners, stores the battle (`VoteStore.create_battle`) and
hands the page only the battle's unguessable id; a vote names that id and the store checks it
belongs to the same annotator and has no vote yet, so a client can neither forge nor replay one.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Sequence

from backends.inputs import check_examples, check_word
from backends.learners import learner_names, parse_learners
from demo.engine import (
    DefinitionCache,
    cache_key,
    learner_configs,
    lm_name,
    remember,
    run_learn,
)
from demo.items import arena_pool
from demo.ratelimit import TokenBuckets
from demo.settings import DemoSettings
from demo.store import Battle, Item, Matchup, Vote, VoteStore

log = logging.getLogger(__name__)


def checked_item(word: str, examples: Sequence[str]) -> Item:
    """A person's own word and sentences, checked as the library checks them."""
    word = check_word(word)
    return Item(word, tuple(e.text for e in check_examples(word, list(examples))))


class Arena:
    """Battles and votes over one store, with a definition cache and per-annotator limits."""

    def __init__(
        self,
        settings: DemoSettings,
        store: VoteStore,
        cache: DefinitionCache,
        rng: random.Random | None = None,
    ) -> None:
        self.settings, self.store, self.cache = settings, store, cache
        self.learners = parse_learners(list(settings.arena_learners) or learner_names())
        if len(self.learners) < 2:
            raise ValueError(f"the arena needs two learners or more, got {self.learners}")
        self.pool = arena_pool(settings.arena_items)
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

    def pick(self) -> tuple[Item, str, str]:
        """A random pool item and a random ordered pair of different learners."""
        with self._rng_lock:
            item = self._rng.choice(self.pool)
            a, b = self._rng.sample(self.learners, 2)
        return item, a, b

    def definitions(self, item: Item, learners: Sequence[str], lm: str | None) -> dict[str, str]:
        """Each learner's definition of the item, from the cache or from one batched run."""
        found = {n: self.cache.get(cache_key(item, n, lm, self.configs)) for n in learners}
        missing = [n for n, text in found.items() if text is None]
        if missing:
            log.info("arena runs %s on %r", missing, item.word)
            result = run_learn(
                item.word,
                item.examples,
                missing,
                lm=lm,
                configs=self.configs,
                max_new_tokens=self.settings.max_new_tokens,
            )
            remember(self.cache, result, item, self.configs)
            found.update({r.learner: r.definition for r in result.results})
        return found  # type: ignore[return-value]

    def new_battle(
        self,
        annotator: str,
        item: Item | None = None,
        lm: str | None = None,
        address: str | None = None,
    ) -> Battle:
        """Create a battle on `item` (None: a pool item) for `annotator` at `address`."""
        self.battle_limit.take(annotator=annotator, address=address)
        pooled, a, b = self.pick()
        item = item or pooled
        found = self.definitions(item, [a, b], lm)
        matchup = Matchup(item, a, b, found[a], found[b], lm_name(lm))
        return self.store.create_battle(matchup, annotator=annotator)

    def vote(self, battle_id: str, choice: str, annotator: str, address: str | None = None) -> Vote:
        """Record the one vote a battle takes (VoteRefused for unknown, replayed or others')."""
        self.vote_limit.take(annotator=annotator, address=address)
        return self.store.record_vote(str(battle_id or "").strip(), choice, annotator)  # type: ignore[arg-type]

    def prefill(self, items: Sequence[Item], definitions: dict[str, str], lm: str | None = None):
        """Put ready definitions in the cache (tests and warm-up use it to skip the LM)."""
        for item in items:
            for learner, text in definitions.items():
                self.cache.put(cache_key(item, learner, lm, self.configs), text)
