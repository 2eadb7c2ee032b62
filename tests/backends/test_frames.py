"""The classes an example's syntax leaves a new word (backends/frames.py)."""

import pytest

from backends import lexicon
from backends.frames import allowed_classes, frame_classes

ALL = {"n", "v", "a", "r"}


def test_the_words_beside_the_new_word_rule_classes_out():
    nominal = {"n", "a", "r"}  # "a zimbly built house": an adverb before an adjective
    assert frame_classes("A blick of lightning lit up the sky.", "blick") == nominal
    assert frame_classes("We counted the seconds between the blick and the thunder.", "blick") == (
        nominal
    )
    assert frame_classes("dax a sonnet by Shakespeare", "dax") == {"v"}
    assert frame_classes("She quibbed a stone into the lake.", "quib") == {"v"}  # an ending
    assert frame_classes("The test was so snerk that everyone passed.", "snerk") == {"a", "r"}
    assert frame_classes("He sproked when he heard the sad news.", "sproke") == {"v", "r"}
    assert frame_classes("You will quib it.", "quib") == {"v", "r"}


def test_an_adverb_is_left_where_a_verb_would_stand():
    # "She quietly opened": a subject pronoun before the word allows an adverb as well
    assert frame_classes("She zimbly opened the door.", "zimbly") == {"v", "r"}
    # uses that leave only the adverb agree on nothing: the reading's class decides
    assert allowed_classes("zimbly", ["She zimbly opened the door.", "He walked so zimbly."]) == ALL


def test_to_before_a_particle_makes_a_verb():
    assert frame_classes("The puppy loves to snoggle into the blankets.", "snoggle") == {"v", "r"}
    assert frame_classes("They went to dax in the morning.", "dax") == ALL  # "to school in"
    assert frame_classes("The two countries went to dax over a strip of land.", "dax") == ALL
    assert frame_classes("He tried to snoggles into it.", "snoggle") == ALL  # not its plain form


@pytest.mark.skipif(
    not (lexicon.DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason=f"WordNet files absent from {lexicon.DEBIAN_WORDNET_DIR}; {lexicon.INSTALL_HINT}",
)
def test_after_a_plural_subject_a_verb():
    verbal = {"v", "r"}
    assert frame_classes("On cold mornings the children snoggle under the duvet.", "snoggle") == (
        verbal
    )
    assert frame_classes("The hikers dax slowly up the trail.", "dax") == verbal
    assert frame_classes("The drinks dax was sticky.", "dax") == ALL  # "drinks" may be a verb
    assert frame_classes("Children dax in the park.", "dax") == ALL  # no determiner before
    assert frame_classes("The children daxes in the park.", "dax") == ALL  # an ending


def test_a_frame_that_says_nothing_rules_nothing_out():
    assert frame_classes("The storm brought thunder and blicks of light.", "blick") == ALL
    assert frame_classes("I will quibs", "quib") == ALL  # a modal before a form with an ending
    assert frame_classes("I'm dax!", "dax") == ALL  # the "m" of "I'm" is no word of its own
    # "this" is a pronoun as often as a determiner
    assert frame_classes("This dax all my expectations", "dax") == ALL
    assert frame_classes("no word here", "dax") == ALL


def test_examples_that_disagree_rule_nothing_out():
    assert allowed_classes("cry", ["the cry was loud", "she cried"]) == ALL
    assert allowed_classes("cry", ["the cry was loud", "a cry for help"]) == {"n", "a", "r"}
    assert allowed_classes("cry", []) == ALL
