"""The corpus filters that keep CoLLEGe's training data to sentences that *use* a word."""

from __future__ import annotations

from training.corpus import CorpusConfig, defines_outright, is_excluded, keep_sentence


def test_definitional_sentences_are_dropped():
    assert defines_outright("kettle", "A kettle is a pot for boiling water.")
    assert defines_outright("kettle", "This pot is called a kettle in England.")
    assert not defines_outright("kettle", "She put the kettle on the stove and waited.")


def test_keep_sentence_length_repetition_and_presence():
    cfg = CorpusConfig()
    assert keep_sentence("kettle", "She put the kettle on the stove and waited.", cfg)
    assert not keep_sentence("kettle", "The kettle boiled.", cfg)  # under 5 words
    assert not keep_sentence("kettle", "She put the pot on the stove and waited.", cfg)
    assert not keep_sentence("kettle", "kettle kettle kettle kettle and a kettle too", cfg)


def test_evaluation_words_and_their_inflections_are_excluded():
    excluded = {"baritone", "run"}
    assert is_excluded("baritone", excluded)
    assert is_excluded("baritones", excluded)
    assert is_excluded("runs", excluded)
    assert not is_excluded("kettle", excluded)


def test_a_usage_example_pairs_with_its_own_senses_gloss():
    from training.corpus import sense_glosses

    glosses = sense_glosses(
        {
            "austere": ["a desert nomad's austere life", "not a WordNet example of austere"],
            # campaign.v.01 ('campaign', 'run'): its gloss "run, stand, or compete for an
            # office" uses the word itself, so it defines nothing for "run"
            "run": [
                "Interest rates run from 5 to 10 percent",
                "Who's running for treasurer this year?",
            ],
        }
    )
    # the first clause only ("practicing great self-denial; - William James")
    assert glosses[("austere", "a desert nomad's austere life")] == "practicing great self-denial"
    assert glosses[("run", "Interest rates run from 5 to 10 percent")] == (
        "change or be different within limits"
    )
    assert ("austere", "not a WordNet example of austere") not in glosses
    assert ("run", "Who's running for treasurer this year?") not in glosses


def test_no_definition_target_comes_from_a_synset_holding_an_evaluation_word():
    from backends.lexicon import wordnet
    from backends.shared_data import excluded_words
    from training.corpus import sense_glosses

    # agile.s.01 holds "agile" (a training word) and "quick", an evaluation word: its
    # gloss "moving quickly and lightly" would teach the answer for "quick".
    excluded = excluded_words()
    assert "quick" in excluded and "agile" not in excluded
    corpus = {"agile": ["sleek and agile as a gymnast"]}
    assert sense_glosses(corpus) == {
        ("agile", "sleek and agile as a gymnast"): wordnet().synset("agile.s.01").definition()
    }
    assert sense_glosses(corpus, excluded) == {}
