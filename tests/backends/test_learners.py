"""Every learner on the tiny LM: the shared result shape, distinct vectors, and the effect
each paper claims (token tuning lowers its loss, the cache raises the word's probability)."""

from dataclasses import replace

import pytest
import torch

from backends.decoding import Decoding
from backends.definitions import define, ends_a_sentence, first_sentence, slot_for
from backends.inputs import Example
from backends.learners import learner_names, load_learner, parse_learners
from backends.learners.cache import CacheConfig, CacheLearner
from backends.learners.token_tuning import TokenTuningConfig, TokenTuningLearner, loss_note

EXAMPLES = [
    Example("the wug hopped across the garden and pecked at seeds ."),
    Example("my daughter fed a wug some bread at the pond ."),
]


def learn_all(lm):
    configs = {
        "token_tuning": TokenTuningConfig(steps=5, replay_per_step=1),
        "cache": CacheConfig(background_sentences=20),
    }
    return {
        name: load_learner(name, configs.get(name)).learn(lm, "wug", EXAMPLES)
        for name in learner_names()
        if name != "college"
    }


def test_registry_answers_a_bad_name_with_the_valid_ones():
    with pytest.raises(ValueError, match="did you mean 'centroid'.*available"):
        parse_learners("centriod")
    with pytest.raises(ValueError, match="available"):
        load_learner("nope")
    assert parse_learners("all") == learner_names()
    assert parse_learners("cache, centroid") == ["centroid", "cache"]


def test_every_learner_returns_vectors_of_the_lm_width_and_they_differ(tiny_lm):
    results = learn_all(tiny_lm)
    pairs = {}
    for name, emb in results.items():
        assert emb.input_vector.shape == (tiny_lm.dim,) and emb.output_vector.shape == (
            tiny_lm.dim,
        )
        assert torch.isfinite(emb.input_vector).all() and emb.seconds >= 0
        pairs[name] = torch.cat([emb.input_vector, emb.output_vector])
    names = list(pairs)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not torch.allclose(pairs[a], pairs[b]), (a, b)


@pytest.mark.integration
def test_the_centroid_averages_the_words_around_the_word_not_its_ending(real_lm):
    from backends.learners.centroid import centroid_vectors

    # the real tokenizer writes the ending as a token of its own after the nonce ("ed")
    ids = real_lm.encode("she wugged it", "wug", nonce_id=0)  # bos, she, nonce, ed, it
    assert real_lm.tokenizer.decode(ids[3:4]) == "ed"
    inflected = centroid_vectors(real_lm, "wug", [Example("The old wugs wugged loudly.")])
    plain = centroid_vectors(real_lm, "wug", [Example("The old wug wug loudly.")])
    assert all(torch.equal(a, b) for a, b in zip(inflected, plain))


def test_token_tuning_lowers_the_loss_on_its_examples(tiny_lm):
    emb = TokenTuningLearner(TokenTuningConfig(steps=15, lr=0.05)).learn(tiny_lm, "wug", EXAMPLES)
    losses = emb.info["losses"]  # each step's forward pass, before its update
    assert len(losses) == 15 == len(emb.info["word_losses"]) and losses[-1] < losses[0]
    assert "kept_step" not in emb.info  # keep_best is off by default
    assert emb.info["note"] == loss_note(emb.info["word_losses"], losses)


def test_token_tuning_returns_the_vectors_where_its_objective_was_lowest(tiny_lm):
    from backends.learners.token_tuning import kept_note

    loud = TokenTuningConfig(steps=6, lr=0.5, keep_best=True)  # these climb again at the end
    best = TokenTuningLearner(loud).learn(tiny_lm, "wug", EXAMPLES)
    objectives, kept = best.info["objectives"], best.info["kept_step"]
    assert len(objectives) == 7 and objectives[kept] == min(objectives) < objectives[-1]
    # the vectors after `kept` steps, as a run that stopped there returns them
    stopped = replace(loud, steps=kept, keep_best=False)
    there = TokenTuningLearner(stopped).learn(tiny_lm, "wug", EXAMPLES)
    assert torch.equal(best.input_vector, there.input_vector)
    assert torch.equal(best.output_vector, there.output_vector)
    last = TokenTuningLearner(replace(loud, keep_best=False)).learn(tiny_lm, "wug", EXAMPLES)
    assert not torch.equal(best.input_vector, last.input_vector) and "kept_step" not in last.info
    assert best.info["note"].endswith(f"after step {kept}, so it kept those vectors")
    assert kept_note(4, 4) == kept_note(None, 4) == ""  # the last step's: nothing to say
    assert kept_note(0, 4).endswith("so it kept the vectors it started from")


def test_token_tuning_says_in_its_card_how_the_loss_moved():
    assert loss_note([], []) == ""
    assert loss_note([6.04], [5.234]) == (
        "loss on the word where its examples use it 6.0 nats at its one step;"
        " on all their tokens 5.23"
    )
    assert loss_note([0.31, 8.2, 13.5, 15.54], [5.234, 4.87, 5.16, 5.241]) == (
        "loss on the word where its examples use it 0.3 nats at its first step, 15.5 at its"
        " 4th; on all their tokens 5.23, 5.24"
    )
    assert "at its 2nd" in loss_note([2, 1], [2, 1]) and "at its 12th" in loss_note(
        [1] * 12, [1] * 12
    )
    assert "at its 21st" in loss_note([1] * 21, [1] * 21)


def test_token_tuning_reads_the_words_own_loss_where_its_examples_use_it(tiny_lm):
    from backends.learners.base import example_ids
    from backends.learners.centroid import centroid_vectors
    from backends.nonce_lm import NonceSlot

    emb = TokenTuningLearner(TokenTuningConfig(steps=2)).learn(tiny_lm, "wug", EXAMPLES)
    assert emb.word == "wug" and emb.learner == "token_tuning"
    seqs = example_ids(tiny_lm, "wug", EXAMPLES, tiny_lm.vocab_size)
    vin, vout = centroid_vectors(tiny_lm, "wug", EXAMPLES)  # where its first step starts
    slot = NonceSlot(vin[None], vout[None])
    with torch.no_grad():
        logprobs = torch.cat(tiny_lm.token_logprobs(seqs, slot))
    targets = torch.tensor([t for seq in seqs for t in seq[1:]])
    word = -logprobs[targets == tiny_lm.vocab_size].mean()
    assert emb.info["word_losses"][0] == pytest.approx(float(word), rel=1e-5)
    assert emb.info["losses"][0] == pytest.approx(float(-logprobs.mean()), rel=1e-5)


def test_token_tuning_keeps_the_vectors_at_the_lms_row_length(tiny_lm):
    from backends.learners.base import mean_norms

    loud = TokenTuningConfig(steps=10, lr=0.5, replay_per_step=0)
    emb = TokenTuningLearner(loud).learn(tiny_lm, "wug", EXAMPLES)
    norm_in, norm_out = mean_norms(tiny_lm)
    assert float(emb.input_vector.norm()) == pytest.approx(norm_in, rel=1e-4)
    assert float(emb.output_vector.norm()) == pytest.approx(norm_out, rel=1e-4)
    free = TokenTuningLearner(replace(loud, keep_row_norm=False)).learn(tiny_lm, "wug", EXAMPLES)
    assert float(free.input_vector.norm()) > 2 * norm_in  # what the projection prevents


def test_token_tuning_rejects_absurd_settings():
    with pytest.raises(ValueError, match="steps"):
        TokenTuningConfig(steps=10**9)
    with pytest.raises(ValueError, match="lr"):
        TokenTuningConfig(lr=-1)


def test_cache_raises_the_words_probability_in_a_context_like_its_examples(tiny_lm):
    emb = CacheLearner(CacheConfig(background_sentences=20)).learn(tiny_lm, "wug", EXAMPLES)
    slot, hooks = slot_for(tiny_lm, [emb])
    probe = [tiny_lm.encode("the wug hopped across the garden", "wug", tiny_lm.vocab_size)]
    without = tiny_lm.token_logprobs(probe, slot)[0][0]  # log p(wug | "<bos> the")
    with_cache = tiny_lm.token_logprobs(probe, slot, hooks)[0][0]
    assert with_cache > without + 1.0


def test_prompting_puts_the_examples_before_the_prompt(tiny_lm):
    emb = load_learner("prompting").learn(tiny_lm, "wug", EXAMPLES)
    assert all(e.text in emb.prompt_prefix for e in EXAMPLES)


def test_definition_reader_reads_a_given_definition(tiny_lm):
    a = load_learner("definition_reader").learn(tiny_lm, "wug", EXAMPLES, "a small bird")
    b = load_learner("definition_reader").learn(tiny_lm, "wug", EXAMPLES, "a big horse")
    assert "definition" in a.info["sources"] and not torch.allclose(a.input_vector, b.input_vector)
    assert "note" not in a.info


def test_definition_reader_says_when_it_read_only_the_spelling(tiny_lm):
    from backends.learners.definition_reader import SPELLING_ONLY

    emb = load_learner("definition_reader").learn(tiny_lm, "wug", EXAMPLES)
    assert emb.info["sources"] == ["spelling"] and emb.info["note"] == SPELLING_ONLY


def test_define_batches_every_learner_into_one_generation(tiny_lm):
    results = list(learn_all(tiny_lm).values())
    definitions = define(tiny_lm, results, max_new_tokens=4)
    assert [d.learner for d in definitions] == [r.learner for r in results]
    assert all(isinstance(d.text, str) for d in definitions)


def test_an_embedding_with_readings_is_defined_from_their_mixture(tiny_lm):
    results = learn_all(tiny_lm)
    centroid, cache = results["centroid"], results["cache"]
    g = torch.Generator().manual_seed(5)
    rows = [torch.randn(tiny_lm.dim, generator=g) for _ in range(2)]
    split = replace(
        centroid, learner="split", readings=[(0.6, rows[0], rows[0]), (0.4, rows[1], rows[1])]
    )
    sure = replace(
        split, learner="sure", readings=[(1 - 1e-9, rows[0], rows[0]), (1e-9, rows[1], rows[1])]
    )
    first = replace(centroid, learner="first", input_vector=rows[0], output_vector=rows[0])
    found = define(tiny_lm, [cache, split, sure, first], max_new_tokens=6)
    assert [d.learner for d in found] == ["cache", "split", "sure", "first"]  # one per embedding
    assert found[2].text == found[3].text  # all the weight on one reading: its own definition
    assert found[0].text == define(tiny_lm, [cache], max_new_tokens=6)[0].text  # others unchanged


def test_first_sentence():
    assert first_sentence(" a small bird. It sings.") == "a small bird."
    assert first_sentence("a bird\nthat sings") == "a bird"
    assert first_sentence("no end") == "no end"
    # 'defined as:' and the definition on the next line (a dev item once scored ':')
    assert first_sentence(':\n"a thought." It') == '"a thought."'
    assert first_sentence(" :\n \n a thought\nthat") == "a thought"
    assert first_sentence("3.5 metres long. Yes") == "3.5 metres long."
    assert first_sentence('"a thought." It is a concept') == '"a thought."'
    assert first_sentence("a hill (or mound.) Then") == "a hill (or mound.)"
    assert first_sentence('an expression.The word "x" is') == "an expression."
    assert first_sentence("a U.S.Navy ship.") == "a U.S.Navy ship."  # initials go on


def test_a_sentence_goes_on_past_an_open_bracket_and_e_g():
    # shown as whole definitions: '... (1999, p.', '... porous structure (e.g.', '(U.N.'
    said = 'a "place of gathering" (1999, p. 12). It is'
    assert first_sentence(said) == 'a "place of gathering" (1999, p. 12).'
    assert first_sentence("a flow of water (e.g. through a sponge). It") == (
        "a flow of water (e.g. through a sponge)."
    )
    assert first_sentence("water, e.g. rain or snow. It") == "water, e.g. rain or snow."
    assert first_sentence("a branch of government (U.N. body) here. The") == (
        "a branch of government (U.N. body) here."
    )
    assert first_sentence("a hill (or mound.) Then") == "a hill (or mound.)"  # closed
    assert first_sentence("a cart, a wagon, etc. It") == "a cart, a wagon, etc."
    assert first_sentence("a knot (a loop") == "a knot (a loop"  # never closed: its budget cuts
    assert first_sentence("a knot (a loop\nthat") == "a knot (a loop"  # a line break still ends
    assert not ends_a_sentence("a flow of water (e.g. through")
    # a stored vote's decoding, from before the rule, ends where its battle ended
    old = {k: v for k, v in Decoding().record().items() if k != "brackets_go_on"}
    before = Decoding.from_record(old)
    assert first_sentence("a flow (e.g. water). It", before) == "a flow (e.g."
    assert ends_a_sentence("a flow (e.g. water", before)


def test_a_definition_is_shown_without_spaces_just_inside_its_quotation_marks():
    # Sampled for battles: '" the state or condition of certainty ".', '“ an imaginative
    # or strange state of mind”'.
    raw = '" the state or condition of certainty ". It is'
    assert first_sentence(raw) == '"the state or condition of certainty".'
    assert first_sentence('a " shed " or “ hut ” near it') == 'a "shed" or “hut” near it'
    assert first_sentence('" to make a sound by') == '"to make a sound by'  # left open
    # a mark whose side disagrees with its turn is left: not 'or"race"'
    scattered = 'an "age, society, or "race", that is'
    assert first_sentence(scattered) == scattered
    assert first_sentence('of force; "the taking " the act') == 'of force; "the taking" the act'
    assert (
        first_sentence(raw, Decoding(tidy_quotes=False))
        == '" the state or condition of certainty ".'
    )
    old = {k: v for k, v in Decoding().record().items() if k != "tidy_quotes"}
    assert not Decoding.from_record(old).tidy_quotes


def test_a_definition_is_shown_without_a_space_between_a_closing_quote_and_its_stop():
    # Greedy DefGen (centroid, skin) and sampled for battles
    raw = 'a "body" or "a part of the human being" . It is'
    assert first_sentence(raw) == 'a "body" or "a part of the human being".'
    assert first_sentence('a "plural noun" , a word.') == 'a "plural noun", a word.'
    assert first_sentence('being "bright" : dazzling.') == 'being "bright": dazzling.'
    # a stored vote's decoding, from before the rule, is shown as its battle was
    old = {k: v for k, v in Decoding().record().items() if k != "tidy_stops"}
    before = Decoding.from_record(old)
    assert first_sentence(raw, before) == 'a "body" or "a part of the human being" .'


def test_a_definition_is_shown_without_the_mark_it_began_with():
    # sampled for a battle: ', "to give up" or "to let go," in the English language.'
    assert first_sentence(', "to give up" or "to let go."') == '"to give up" or "to let go."'
    assert first_sentence(": to give up. It") == "to give up."
    assert first_sentence(" ;, a thing") == "a thing"
    old = {k: v for k, v in Decoding().record().items() if k != "drop_lead_marks"}
    assert first_sentence(", a thing.", Decoding.from_record(old)) == ", a thing."


def test_a_sentence_end_that_nothing_followed_still_ends_the_definition():
    from backends.definitions import ends_at_its_end

    assert ends_at_its_end('a share of "money over a period of time."')
    assert ends_at_its_end('a share of "money over a period of time".')
    assert ends_at_its_end("a share of money!  ")
    assert not ends_at_its_end("a share of money over a period of")
    # a full stop inside a bracket still open, or after 'e.g.', goes on (`brackets_go_on`)
    assert not ends_at_its_end("a share of money (e.g.")
    assert not ends_at_its_end("a share (in 1999, p.")
    assert not ends_at_its_end("")


def test_a_definition_its_budget_cut_is_shown_cut(tiny_lm):
    from backends.definitions import CUT_MARK, _definition

    def ids(text):
        return tiny_lm.tokenizer(text, add_special_tokens=False)["input_ids"]

    cut = _definition(tiny_lm, "centroid", "wug", ids("a small bird"), {})
    ended = _definition(tiny_lm, "centroid", "wug", ids("a small bird . it sings"), {})
    eos = tiny_lm.tokenizer.eos_token_id
    at_eos = _definition(tiny_lm, "centroid", "wug", ids("a small bird") + [eos], {})
    assert (cut.finished, ended.finished, at_eos.finished) == (False, True, True)
    assert cut.shown == cut.text + CUT_MARK and cut.text == "a small bird"  # scored unmarked
    assert (ended.shown, at_eos.shown) == (ended.text, at_eos.text)
    # its budget ran out right after the full stop, before the space that confirms an end
    whole = _definition(tiny_lm, "centroid", "wug", ids("a small bird ."), {})
    assert whole.finished and whole.shown == whole.text
    before = {k: v for k, v in Decoding().record().items() if k != "ends_at_budget"}
    old_rules = Decoding.from_record(before)
    stored = _definition(tiny_lm, "centroid", "wug", ids("a small bird ."), {}, old_rules)
    assert not stored.finished  # a vote stored before the rule replays as it was shown
    # a generation: only a row that wrote its whole budget with no end is marked
    for d in define(tiny_lm, list(learn_all(tiny_lm).values()), max_new_tokens=4):
        written = tiny_lm.tokenizer(d.raw, add_special_tokens=False)["input_ids"]
        assert d.finished or len(written) >= 4
        assert d.shown == (d.text if d.finished or not d.text else d.text + CUT_MARK)


def test_replay_shortcut_equals_the_full_forward_pass(tiny_lm):
    """Replay sentences hold no nonce: precomputed states give their exact log-likelihood."""
    from backends.learners.token_tuning import replay_nll, replay_states
    from backends.nonce_lm import NonceSlot

    sentences = ("the dog sang at night .", "my cat fed a big horse some bread .")
    vout = torch.randn(tiny_lm.dim) * 3
    slot = NonceSlot(torch.zeros(1, tiny_lm.dim), vout[None])
    full = -sum(
        float(lp.sum())
        for lp in tiny_lm.token_logprobs([tiny_lm.encode(s) for s in sentences], slot)
    )
    states = replay_states(tiny_lm, sentences)
    shortcut, count = replay_nll(tiny_lm, states, [0, 1], vout)
    assert float(shortcut) == pytest.approx(full, rel=1e-4)
    assert count == sum(len(tiny_lm.encode(s)) - 1 for s in sentences)


def test_cache_reports_how_much_its_store_raises_the_word(tiny_lm):
    emb = load_learner("cache").learn(tiny_lm, "wug", EXAMPLES)
    assert emb.info["p_word_with_store"] > emb.info["p_word_without_store"]
    assert f"{emb.info['p_word_with_store']:.2g}" in emb.info["note"]


def test_replay_states_are_kept_on_disk_and_read_back_the_same(tiny_lm, tmp_path, monkeypatch):
    from backends.learners.token_tuning import _stored_replay_states

    monkeypatch.setenv("NONCE_CACHE_DIR", str(tmp_path))
    sentences = ("the bird sang", "a dog ran across the garden")
    computed = _stored_replay_states(tiny_lm, sentences)
    (saved,) = (tmp_path / "stores").glob("tiny-*-replay-*.pt")
    read = _stored_replay_states(tiny_lm, sentences)
    for name in ("hidden", "target_logit", "lse", "sentence_of"):
        assert torch.equal(getattr(read, name), getattr(computed, name))
    assert saved.exists()
