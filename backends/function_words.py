"""English function words: the ones that carry little of a word's meaning.

The centroid learner leaves them out of its average (Lazaridou et al. 2017 sum content
words only); decoding and the degenerate-definition metric let them repeat freely while
limiting how often a content word may be said ('a shed or shed is a shed')."""

FUNCTION_WORDS = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being "
    "it its this that these those he she they them his her their we you i me my our your not "
    "no so than then there here which who whom what when where how do does did has have had "
    "will would can could should may might must also very just into out up down over".split()
)


def is_content_word(word: str) -> bool:
    """A word that carries meaning: it has a letter and is not a function word."""
    return word not in FUNCTION_WORDS and any(c.isalpha() for c in word)


# "Do" is a function word to the centroid (as an auxiliary it means nothing of its own),
# but a definition that says it again and again loops as one that repeats a content word
# does, though no word 3-gram comes back: 'to run, to go, to travel, to race, to compete,
# to do, to do something, to do.' (college, DefGen dev). Of the 5 357 distinct DefGen
# definitions in benchmarks/results, 28 say "to do" three times or more.
DO_FORMS = frozenset("do does did".split())


def is_counted_word(word: str, count_do: bool = True) -> bool:
    """A word whose every use counts towards a loop (`Decoding.word_uses`,
    `benchmarks.metrics.repeats_word`): a content word, or with `count_do` a form of "do"."""
    return is_content_word(word) or (count_do and word in DO_FORMS)


# Words a sentence cannot stop on: an article, a possessive, a preposition that wants its
# object, a conjunction ('a word that is used to describe a', 'a great or a lot of'). A
# definition may not stop right after one (`Decoding.finish_sentence`). Not "be" in any
# form: 'a state of being.' and 'where something is or has been.' are whole.
UNFINISHED = frozenset(
    "a an the my your its our their of to with from by for at into and or but than which "
    "who whom whose very".split()
)

# The prepositions of `UNFINISHED` that may end a phrasal verb, where "to" and a verb come
# right before ('to cut into.', 'to look at.', 'to deal with.'; `Decoding.particle_ends`).
# Not "to": 'to go to.' and 'to listen to.' want their object.
PARTICLES = frozenset("of with from by for at into".split())

# Modal verbs: they want a verb after them, and a sentence stops neither on one nor on
# "be" or "have" right after one ('a series of characters that can be', sampled for a
# battle; `Decoding.modals_go_on`). The class guess reads them too (backends/frames.py).
MODALS = frozenset("will would can could should must might may shall".split())
