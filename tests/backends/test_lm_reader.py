"""The LM reader: the frozen LM's expectation at the new word's slot, pooled over examples."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from backends import lexicon
from backends.inputs import Example
from backends.learners.lm_reader import (
    BLANK_SHOTS,
    CLOSED_CLASS,
    FEATURES,
    MIXED_SHOTS,
    Candidates,
    ReaderConfig,
    Reading,
    base_form_ids,
    blank_logprobs,
    blank_prior,
    blank_prompt,
    candidate_features,
    candidate_scores,
    example_word_ids,
    left_contexts,
    lexeme_scores,
    nearest_words,
    read,
    score_weights,
    slot_logprobs,
    slot_prior,
    soft_guess,
    weigh,
    word_tokens,
    worked_examples,
)

needs_wordnet = pytest.mark.skipif(
    not (lexicon.DEBIAN_WORDNET_DIR / "data.noun").is_file(),
    reason=f"WordNet files absent from {lexicon.DEBIAN_WORDNET_DIR}; {lexicon.INSTALL_HINT}",
)


def test_word_tokens_are_whole_words_only(tiny_lm):
    mask = word_tokens(tiny_lm)
    pieces = tiny_lm.tokenizer.convert_ids_to_tokens(list(range(tiny_lm.vocab_size)))
    kept = {p for p, keep in zip(pieces, mask.tolist()) if keep}
    assert {"▁bird", "▁sang", "▁small"} <= kept
    assert not kept & {"<pad>", "<eos>", ".", "▁.", ",", "▁a"}  # specials, punctuation, 1 letter
    # closed-class words are never a new word's reading
    assert not kept & {"▁the", "▁was", "▁of", "▁this", "▁from"}
    assert {"the", "was", "of", "could", "themselves"} <= CLOSED_CLASS


def test_left_contexts_skip_examples_without_one(tiny_lm):
    examples = [Example("wug sang"), Example("the small wug sang"), Example("no word here")]
    prefixes = left_contexts(tiny_lm, "wug", examples)
    assert prefixes == [tiny_lm.encode("the small")]
    # no left context, no proposal, not asked outright: no candidate to read with
    assert soft_guess(tiny_lm, "wug", examples[:1], ReaderConfig(from_blank=0)) is None


def test_proposed_words_are_read_where_the_slot_has_nothing(tiny_lm):
    bird = tiny_lm.input_matrix[tiny_lm.encode(" bird", bos=False)[0]]
    guess = soft_guess(tiny_lm, "wug", [Example("wug sang at night")], proposal=bird)
    assert guess is not None and guess.shape == (tiny_lm.dim,)
    assert nearest_words(tiny_lm, bird, 1).tolist() == tiny_lm.encode(" bird", bos=False)


def test_left_only_guess_is_the_expected_row_of_the_pooled_top_words(tiny_lm):
    examples = [Example("the small wug sang"), Example("my daughter fed the wug")]
    plain = dict(
        right_tokens=0,
        from_blank=0,
        prior_weight=0.0,
        base_forms=False,
        exclude_example_words=False,
    )
    config = ReaderConfig(temperature=0.7, from_slot=5, **plain)
    guess = soft_guess(tiny_lm, "wug", examples, config)
    pooled = slot_logprobs(tiny_lm, left_contexts(tiny_lm, "wug", examples)).sum(0)
    pooled[~word_tokens(tiny_lm)] = float("-inf")
    top = pooled.topk(5)
    expected = torch.softmax(top.values / 0.7, -1) @ tiny_lm.input_matrix[top.indices]
    assert torch.allclose(guess, expected, atol=1e-6)
    # a sharp temperature gives the single most expected word's row
    sharp_config = ReaderConfig(1e-4, 5, 0, **plain)
    sharp = soft_guess(tiny_lm, "wug", examples, sharp_config)
    assert torch.allclose(sharp, tiny_lm.input_matrix[top.indices[0]], atol=1e-5)


def test_words_the_examples_use_are_never_candidates(tiny_lm):
    # the new word is the one missing from its examples: no word they show is it
    examples = [Example("the small wug sang"), Example("my daughter fed the wug seeds")]
    seen = example_word_ids(tiny_lm, "wug", examples)
    spelt = set(tiny_lm.tokenizer.convert_ids_to_tokens(sorted(seen)))
    assert {"▁small", "▁sang", "▁daughter", "▁fed", "▁seeds"} <= spelt
    assert "▁wug" not in spelt and "<unk>" not in spelt
    config = ReaderConfig(from_slot=64, from_blank=64, base_forms=False)
    index = candidate_features(tiny_lm, "wug", examples, config).rows
    assert len(index) and not set(index.tolist()) & seen
    # the same reading with them allowed: the pool takes some of them
    everything = replace(config, exclude_example_words=False)
    assert set(candidate_features(tiny_lm, "wug", examples, everything)[0].tolist()) & seen


@pytest.mark.integration
@needs_wordnet
def test_a_word_whose_base_form_the_examples_use_is_not_a_candidate(real_lm):
    # "expectations" in the sentence rules out "expectation" (and so any form of it)
    examples = [Example("She dax our expectations"), Example("This dax all my expectations")]
    seen = example_word_ids(real_lm, "dax", examples)
    spelt = set(real_lm.tokenizer.convert_ids_to_tokens(sorted(seen)))
    assert {"▁expectations", "▁expectation", "▁Expectations"} <= spelt
    index = candidate_features(real_lm, "dax", examples).rows
    assert not set(index.tolist()) & seen


def test_the_reading_names_its_heaviest_words(tiny_lm):
    examples = [Example("the small wug sang"), Example("my daughter fed the wug")]
    config = ReaderConfig(temperature=0.7, from_slot=5, right_tokens=0, from_blank=0)
    reading = read(tiny_lm, "wug", examples, config)
    assert torch.allclose(reading.vector, soft_guess(tiny_lm, "wug", examples, config))
    assert reading.weights.sum().item() == pytest.approx(1.0, abs=1e-5)
    words = reading.words(tiny_lm, n=3, least=0.0)
    assert len(words) == 3 and words == sorted(words, key=lambda w: -w[1])
    heaviest = int(reading.rows[reading.weights.argmax()])
    assert words[0][0] == tiny_lm.tokenizer.convert_ids_to_tokens(heaviest).lstrip("▁")


def test_reading_words_sum_a_row_read_twice_and_drop_light_ones(tiny_lm):
    bird, sang = (tiny_lm.encode(w, bos=False)[0] for w in (" bird", " sang"))
    # base forms can make one row a candidate twice (sings, sang -> sing)
    rows = torch.tensor([bird, sang, bird])
    reading = Reading(rows, torch.tensor([0.3, 0.695, 0.005]), torch.zeros(1), rows)
    assert reading.words(tiny_lm) == [("sang", 0.695), ("bird", 0.305)]
    assert reading.words(tiny_lm, least=0.5) == [("sang", 0.695)]
    assert reading.words(tiny_lm, n=1) == [("sang", 0.695)]


@pytest.mark.integration
@needs_wordnet
def test_the_class_is_read_from_the_candidates_as_read(real_lm):
    crying, cry, anvil = (real_lm.encode(w, bos=False)[0] for w in (" crying", " cry", " anvil"))
    rows, vector = torch.tensor([cry, anvil]), torch.zeros(1)
    # the slot read "crying": a verb, though its base form "cry" is also a noun
    as_read = Reading(rows, torch.tensor([0.6, 0.4]), vector, torch.tensor([crying, anvil]))
    assert as_read.word_class(real_lm) == "v"
    assert Reading(rows, torch.tensor([0.3, 0.7]), vector, rows).word_class(real_lm) == "n"
    # the examples' syntax may rule the reading's class out ("a crying" is no verb) ...
    assert as_read.word_class(real_lm, allowed={"n", "a"}) == "n"
    # ... but not where it leaves no class the reading weighs
    anvil_only = Reading(rows, torch.tensor([0.0, 1.0]), vector, rows)
    assert anvil_only.word_class(real_lm, allowed={"v"}) == "n"
    unknown = torch.tensor(real_lm.encode(" the", bos=False))  # no WordNet entry
    assert Reading(unknown, torch.ones(1), vector, unknown).word_class(real_lm) is None


def test_the_prior_is_taken_out_of_each_example_once(tiny_lm):
    examples = [Example("the small wug sang"), Example("my daughter fed the wug")]
    prior = slot_prior(tiny_lm)
    # a distribution: the mean of the neutral contexts' next-token distributions
    assert torch.logsumexp(prior, 0).item() == pytest.approx(0.0, abs=1e-4)
    plain = dict(right_tokens=0, from_blank=0, base_forms=False)
    guess = soft_guess(tiny_lm, "wug", examples, ReaderConfig(0.7, 5, prior_weight=0.5, **plain))
    scores = slot_logprobs(tiny_lm, left_contexts(tiny_lm, "wug", examples)).sum(0)
    scores = scores - 0.5 * len(examples) * prior  # k examples, k priors
    scores[~word_tokens(tiny_lm)] = float("-inf")
    scores[sorted(example_word_ids(tiny_lm, "wug", examples))] = float("-inf")
    top = scores.topk(5)
    expected = torch.softmax(top.values / 0.7, -1) @ tiny_lm.input_matrix[top.indices]
    assert torch.allclose(guess, expected, atol=1e-5)


def test_bayes_prior_counts_the_lms_prior_once(tiny_lm):
    """`prior_kept=1`, `prior_weight=1`: the product of k examples' distributions over the
    prior k - 1 times; with one example nothing is taken out (the plain slot)."""
    examples = [Example("the small wug sang"), Example("my daughter fed the wug")]
    plain = dict(right_tokens=0, from_blank=0, base_forms=False)
    bayes = ReaderConfig(0.7, 5, prior_weight=1.0, prior_kept=1, **plain)
    scores = slot_logprobs(tiny_lm, left_contexts(tiny_lm, "wug", examples)).sum(0)
    scores = scores - 1 * slot_prior(tiny_lm)  # two examples, the prior once
    scores[~word_tokens(tiny_lm)] = float("-inf")
    scores[sorted(example_word_ids(tiny_lm, "wug", examples))] = float("-inf")
    top = scores.topk(5)
    expected = torch.softmax(top.values / 0.7, -1) @ tiny_lm.input_matrix[top.indices]
    assert torch.allclose(soft_guess(tiny_lm, "wug", examples, bayes), expected, atol=1e-5)
    one = soft_guess(tiny_lm, "wug", examples[:1], bayes)
    none = ReaderConfig(0.7, 5, prior_weight=0.0, **plain)
    assert torch.allclose(one, soft_guess(tiny_lm, "wug", examples[:1], none), atol=1e-6)


def test_each_examples_evidence_adds_up_to_the_candidates(tiny_lm):
    examples = [Example("the small wug sang to me"), Example("wug seeds are red")]
    config = ReaderConfig(from_slot=6, from_blank=6, exact_right=3)  # the shortlist path too
    found = candidate_features(tiny_lm, "wug", examples, config)
    assert found.each.shape == (len(found.rows), 2, len(FEATURES))
    # the second example starts with the word: no slot, no slot prior taken out of it
    slot, prior = FEATURES.index("slot"), FEATURES.index("slot_prior")
    assert not found.each[:, 1, [slot, prior]].any()
    assert torch.allclose(found.each.sum(1), found.features, atol=1e-4)  # no proposal here


def test_a_lexeme_is_scored_on_its_best_form_in_each_example(tiny_lm):
    bird, group = (tiny_lm.encode(w, bos=False)[0] for w in (" bird", " group"))
    birds = tiny_lm.encode(" birds", bos=False)[0]
    slot = FEATURES.index("slot")
    each = torch.zeros(3, 2, len(FEATURES))
    # "The wugs were singing" fits birds, "A small wug built its nest" bird; group both
    each[:, :, slot] = torch.tensor([[-1.0, -9.0], [-9.0, -1.0], [-4.0, -4.0]])
    rows, forms = torch.tensor([bird, bird, group]), torch.tensor([birds, bird, group])
    found = Candidates(rows, each.sum(1), forms, each)
    weights = score_weights(ReaderConfig())
    # form by form, each of bird's forms scores -10 against group's -8
    assert (found.features @ weights).tolist() == [-10.0, -10.0, -8.0]
    # as a lexeme, bird scores -1 + -1, carried by one form (the first of a tie)
    assert lexeme_scores(found, weights).tolist() == [-2.0, float("-inf"), -8.0]
    pooled = weigh(tiny_lm, found, ReaderConfig(pool_forms=True))
    assert pooled.weights[1] == 0 and pooled.heaviest(1, 0)[0][0] == bird
    assert weigh(tiny_lm, found, ReaderConfig()).heaviest(1, 0)[0][0] == group


def test_a_candidates_score_is_its_evidence_weighed(tiny_lm):
    """The hand-set weights: the slot and the right context once, the blank prompt at
    `blank_weight`, `prior_weight` of each prior out; fitted weights replace them."""
    examples = [Example("the small wug sang to me"), Example("my daughter fed the wug")]
    bird = tiny_lm.input_matrix[tiny_lm.encode(" bird", bos=False)[0]]
    config = ReaderConfig(from_slot=6, from_blank=6, from_proposal=2)
    index, features = candidate_features(tiny_lm, "wug", examples, config, bird)[:2]
    assert features.shape == (len(index), len(FEATURES))
    assert score_weights(config).tolist() == [1.0, -0.5, 0.5, -0.25, 1.0, 0.0]
    assert torch.allclose(
        candidate_scores(tiny_lm, "wug", examples, config, bird)[1],
        features @ score_weights(config),
    )
    # the proposal's column is the cosine to it: the proposed bird's row is 1
    near = features[index == tiny_lm.encode(" bird", bos=False)[0], FEATURES.index("proposal")]
    assert near.tolist() == pytest.approx([1.0], abs=1e-5)
    fitted = replace(config, weights=(0.1, 0.0, 2.0, 0.0, 0.5, 3.0), temperature=1.0)
    expected = torch.softmax(features @ torch.tensor(fitted.weights), -1)
    expected = expected @ tiny_lm.input_matrix[index].float()
    assert torch.allclose(soft_guess(tiny_lm, "wug", examples, fitted, bird), expected, atol=1e-5)
    with pytest.raises(ValueError, match="one per"):
        ReaderConfig(weights=(1.0, 2.0))


def test_a_reader_with_from_score_also_weighs_its_own_best_words(tiny_lm):
    """`from_score` adds the words a reader's own weights score best on the evidence every
    word has (all but the right context), read on the right afterwards; gathered for a
    second reader, they leave the first reader's reading as it was without them."""
    examples = [Example("the small wug sang to me"), Example("my daughter fed the wug")]
    bird = tiny_lm.input_matrix[tiny_lm.encode(" bird", bos=False)[0]]
    config = ReaderConfig(from_slot=4, from_blank=4, from_proposal=2, exact_right=3)
    fitted = replace(config, weights=(0.5, -0.2, 1.0, -0.5, 0.5, 3.0), temperature=1.0)
    asker = replace(fitted, from_score=6)
    plain = candidate_features(tiny_lm, "wug", examples, config, bird)
    found = candidate_features(tiny_lm, "wug", examples, config, bird, gather=asker)
    n = len(plain.rows)
    assert plain.extra is None and found.extra[:n].logical_not().all()
    added = found.forms[n:]
    assert 0 < len(added) <= 6 and found.extra[n:].all()
    assert not set(added.tolist()) & set(plain.forms.tolist())  # new words only
    # the pool's own evidence is untouched, and so is the reading of a reader without it
    assert torch.equal(found.features[:n], plain.features)
    assert torch.equal(found.each[:n], plain.each)
    assert torch.equal(weigh(tiny_lm, found, config).vector, weigh(tiny_lm, plain, config).vector)
    assert weigh(tiny_lm, found, config).weights[n:].sum() == 0
    # the asker weighs them all; each added word's evidence is the same as the pool's
    assert weigh(tiny_lm, found, asker).weights[n:].sum() > 0
    assert torch.allclose(found.each[n:].sum(1)[:, :-1], found.features[n:, :-1], atol=1e-4)
    # they are the asker's best by its score without the right context, among the rest
    # (the whole-word tokens that are neither candidates nor the examples' own words)
    from backends.learners.lm_reader import split_at_word, with_left_context

    parts = split_at_word(tiny_lm, "wug", examples)
    prefixes = [parts[i][0] for i in with_left_context(tiny_lm, parts)]
    evidence = [
        slot_logprobs(tiny_lm, prefixes).sum(0),
        len(prefixes) * slot_prior(tiny_lm),
        blank_logprobs(tiny_lm, "wug", examples, config.blank_shots),
        len(parts) * blank_prior(tiny_lm, config.blank_shots),
        torch.zeros(tiny_lm.vocab_size),
        torch.cosine_similarity(tiny_lm.input_matrix.float(), bird.float()[None], dim=-1),
    ]
    left = sum(w * e for w, e in zip(asker.weights, evidence))
    allowed = word_tokens(tiny_lm).clone()
    allowed[plain.forms] = False
    allowed[list(example_word_ids(tiny_lm, "wug", examples))] = False
    best = left.masked_fill(~allowed, float("-inf")).topk(len(added)).indices
    assert sorted(added.tolist()) == sorted(best.tolist())
    # a reader asking for them itself gathers them too
    alone = candidate_features(tiny_lm, "wug", examples, asker, bird)
    assert torch.equal(alone.forms, found.forms)


def test_a_wide_pool_is_cut_on_the_left_before_it_is_read_on_the_right(tiny_lm):
    from backends.learners.lm_reader import candidate_scores, right_scores, split_at_word

    examples = [Example("the small wug sang at night"), Example("my daughter fed the wug")]
    plain = dict(from_blank=0, prior_weight=0.0, base_forms=False, right_tokens=2)
    every, every_scores = candidate_scores(tiny_lm, "wug", examples, ReaderConfig(**plain))
    cut, cut_scores = candidate_scores(
        tiny_lm, "wug", examples, ReaderConfig(right_pool=4, **plain)
    )
    # the 4 best by their left scores, in the pool's order, then read on the right
    left = slot_logprobs(tiny_lm, left_contexts(tiny_lm, "wug", examples)).sum(0)[every]
    assert cut.tolist() == every[left.topk(4).indices.sort().values].tolist()
    # read on the right, a kept candidate scores as it did in the whole pool
    assert torch.allclose(cut_scores, every_scores[left.topk(4).indices.sort().values], atol=1e-5)
    # cut after the pool's first right-context token: ranked by left + that token's score
    first = ReaderConfig(right_pool=4, cut_on_right=1, **plain)
    cut_first, _ = candidate_scores(tiny_lm, "wug", examples, first)
    parts = split_at_word(tiny_lm, "wug", examples)
    ranking = left + right_scores(
        tiny_lm, parts, every, ReaderConfig(**{**plain, "right_tokens": 1})
    )
    assert cut_first.tolist() == every[ranking.topk(4).indices.sort().values].tolist()


def test_only_the_best_candidates_need_the_full_softmax_on_the_right(tiny_lm):
    from backends.learners.lm_reader import right_scores, split_at_word

    examples = [Example("the small wug sang at night"), Example("my daughter fed the wug well")]
    parts = split_at_word(tiny_lm, "wug", examples)
    candidates = torch.arange(5, 45)  # 40 candidates
    full = ReaderConfig(right_tokens=3, exact_right=0)
    exact = right_scores(tiny_lm, parts, candidates, full)
    ranking = torch.linspace(2.0, 0.0, 40)  # their left scores: the first ones lead
    short = replace(full, exact_right=8, right_shortlist=16)
    cheap = right_scores(tiny_lm, parts, candidates, short, ranking=ranking)
    shortlisted = torch.zeros(40)
    for before, after in parts:  # every candidate on the shared shortlist alone
        hidden = _right_states(tiny_lm, before, after[:3], candidates)
        shortlisted += tiny_lm.shared_target_logprobs(hidden, torch.tensor(after[:3]), 16).sum(-1)
    best = (ranking + shortlisted).topk(8).indices
    rest = torch.ones(40, dtype=torch.bool).index_fill(0, best, False)
    assert torch.allclose(cheap[best], exact[best], atol=1e-4)  # re-read in full
    assert torch.allclose(cheap[rest], shortlisted[rest], atol=1e-4)
    assert not torch.allclose(cheap, exact, atol=1e-3)  # the shortlist was in use
    # as many exact reads as candidates: the full softmax throughout
    every = right_scores(tiny_lm, parts, candidates, replace(short, exact_right=40))
    assert torch.allclose(every, exact, atol=1e-5)


def _right_states(lm, before, after, candidates):
    """[n, R, d] final states of [before, candidate, after but its last token], read whole."""
    seqs = [[*before, c, *after[:-1]] for c in candidates.tolist()]
    ids, mask = lm.pad(seqs, left=False)
    with torch.no_grad():
        return lm.hidden(ids, mask, None).last_hidden_state[:, len(before) :]


def test_the_blank_prompts_read_their_worked_examples_once(tiny_lm):
    """The worked examples every blank prompt starts with are read once and kept: the
    answers are those of each prompt read whole."""
    prompts = [tiny_lm.encode(blank_prompt(s)) for s in ("the small ___ sang", "a ___ flew off")]
    shared = tiny_lm.encode(worked_examples())
    assert all(p[: len(shared)] == shared for p in prompts)
    whole = slot_logprobs(tiny_lm, prompts)
    assert torch.allclose(slot_logprobs(tiny_lm, prompts, shared=shared), whole, atol=1e-4)
    assert torch.allclose(slot_logprobs(tiny_lm, prompts, shared=shared), whole, atol=1e-4)  # kept
    other = tiny_lm.encode("Sentence: something else")
    assert torch.allclose(slot_logprobs(tiny_lm, prompts, shared=other), whole)  # read whole


def test_the_blank_prior_is_the_prompt_with_no_sentence(tiny_lm):
    expected = slot_logprobs(tiny_lm, [tiny_lm.encode(blank_prompt("___."))])[0]
    assert torch.allclose(blank_prior(tiny_lm), expected)


def test_right_scores_are_the_log_probability_of_what_follows(tiny_lm):
    from backends.learners.lm_reader import right_scores, split_at_word

    examples = [Example("the small wug sang at night"), Example("wug sang")]
    parts = split_at_word(tiny_lm, "wug", examples)
    candidates = torch.tensor(tiny_lm.encode(" bird dog", bos=False))
    scores = right_scores(tiny_lm, parts, candidates, ReaderConfig(right_tokens=2))
    for c, score in zip(candidates.tolist(), scores.tolist()):
        expected = 0.0
        for before, after in parts:
            seq = [*before, c, *after[:2]]
            expected += float(tiny_lm.token_logprobs([seq])[0][-len(after[:2]) :].sum())
        assert score == pytest.approx(expected, abs=1e-4)


def test_the_blank_prompt_shows_worked_examples_then_asks():
    prompt = blank_prompt("A ___ sang on the fence.")
    for sentence, answer in BLANK_SHOTS:
        assert f"Sentence: {sentence}\nMissing word: {answer}\n" in prompt
    assert prompt.endswith("Sentence: A ___ sang on the fence.\nMissing word:")


def test_no_worked_example_answer_is_an_evaluation_word():
    from backends.shared_data import excluded_words
    from benchmarks.data import chimera_sources

    evaluated = excluded_words() | {w.lower() for pair in chimera_sources().values() for w in pair}
    assert not {answer for _, answer in (*BLANK_SHOTS, *MIXED_SHOTS)} & evaluated


def test_the_reader_asks_with_its_own_worked_examples(tiny_lm):
    prompt = blank_prompt("A ___ sang.", MIXED_SHOTS)
    assert "Missing word: close\n" in prompt and "Missing word: hot\n" in prompt
    examples = [Example("the small wug sang"), Example("a wug flew")]
    pooled = blank_logprobs(tiny_lm, "wug", examples, MIXED_SHOTS)
    prompts = [
        tiny_lm.encode(blank_prompt(s, MIXED_SHOTS)) for s in ("the small ___ sang", "a ___ flew")
    ]
    assert torch.allclose(pooled, slot_logprobs(tiny_lm, prompts).sum(0), atol=1e-5)


def test_each_set_of_worked_examples_has_its_own_prior(real_lm):
    # (the tiny random LM's answer barely depends on the shots; the real one's does)
    shipped = blank_prior(real_lm)
    mixed = blank_prior(real_lm, MIXED_SHOTS)
    own = slot_logprobs(real_lm, [real_lm.encode(blank_prompt("___.", MIXED_SHOTS))])[0]
    assert torch.allclose(mixed, own, atol=1e-5) and not torch.allclose(mixed, shipped, atol=1e-2)


def test_blank_answers_are_pooled_over_the_examples_that_use_the_word(tiny_lm):
    examples = [Example("the small wug sang"), Example("no word here"), Example("a wug flew")]
    pooled = blank_logprobs(tiny_lm, "wug", examples)
    prompts = [tiny_lm.encode(blank_prompt(s)) for s in ("the small ___ sang", "a ___ flew")]
    assert torch.allclose(pooled, slot_logprobs(tiny_lm, prompts).sum(0), atol=1e-5)


def test_an_ending_is_read_as_part_of_the_word(tiny_lm):
    from backends.learners.lm_reader import split_at_word

    examples = [Example("the wugs sang"), Example("she wugged it"), Example("the wug's hat")]
    pooled = blank_logprobs(tiny_lm, "wug", examples)
    blanks = ("the ___ sang", "she ___ it", "the ___'s hat")  # a possessive stays outside
    prompts = [tiny_lm.encode(blank_prompt(s)) for s in blanks]
    assert torch.allclose(pooled, slot_logprobs(tiny_lm, prompts).sum(0), atol=1e-5)
    after = [right for _, right in split_at_word(tiny_lm, "wug", examples)]
    assert after == [tiny_lm.encode(t, bos=False) for t in (" sang", " it", "'s hat")]


def test_the_blank_prompt_proposes_words_when_the_word_starts_its_sentence(tiny_lm):
    # no left context and no proposal vector: only the blank prompt has candidates
    examples = [Example("wug sang at night")]
    assert soft_guess(tiny_lm, "wug", examples, ReaderConfig(from_blank=0)) is None
    guess = soft_guess(tiny_lm, "wug", examples, ReaderConfig(from_blank=4, blank_weight=1.0))
    assert guess is not None and torch.isfinite(guess).all() and guess.shape == (tiny_lm.dim,)


@pytest.mark.integration
@needs_wordnet
def test_candidates_are_read_at_their_base_forms(real_lm):
    ids = [real_lm.encode(" " + w, bos=False)[0] for w in ("drained", "trembled", "mind")]
    bases = [real_lm.encode(" " + w, bos=False)[0] for w in ("drain", "tremble", "mind")]
    assert base_form_ids(real_lm, ids) == bases
    # a word that is a base form of its own (a noun) keeps its row
    building = real_lm.encode(" building", bos=False)
    assert base_form_ids(real_lm, building) == building
    # nor does a participle that is mostly an adjective: "tired" read as "tire" was a tyre
    tired = real_lm.encode(" tired", bos=False)
    assert base_form_ids(real_lm, tired) == tired


@pytest.mark.integration
def test_the_real_lm_reads_past_frequent_words_in_a_verb_slot(real_lm):
    from backends.neighbours import vocabulary_index

    # a DefGen dev verb (drain): the plain product of experts reads a light verb
    examples = [
        Example("The rain water dax into this big vat"),
        Example("The exercise class dax me of energy"),
        Example("We dax the oil tank"),
    ]
    index = vocabulary_index(real_lm, "input")
    config = ReaderConfig(temperature=1e-3)  # the single best reading
    plain = soft_guess(real_lm, "dax", examples, replace(config, prior_weight=0.0))
    read = soft_guess(real_lm, "dax", examples, config)
    assert index.search(plain, 1)[0][0].token.strip() in {"get", "got", "had", "used"}
    assert index.search(read, 1)[0][0].token.strip() == "drain"


@pytest.mark.integration
def test_the_real_lm_reads_a_slot_as_the_word_that_fits(real_lm):
    from backends.neighbours import vocabulary_index

    examples = [
        Example("Every morning and every night I brush my dax."),
        Example("The dentist told me to floss between my dax."),
    ]
    guess = soft_guess(real_lm, "dax", examples, ReaderConfig(right_tokens=0))
    found = vocabulary_index(real_lm, "input").search(guess, 5)[0]
    words = {n.token.strip().lower() for n in found}
    assert "teeth" in words, words


@pytest.mark.integration
@needs_wordnet
def test_a_plural_is_read_as_the_plural_of_the_word_that_fits(real_lm):
    # Read with "s" as text after each candidate, "The ___s are ripe" was "annual" (92%):
    # the LM writes bananas as one token, annuals as annual + s.
    examples = [Example("The wiggins are ripe: their skins are yellow and they taste sweet.")]
    reading = read(real_lm, "wiggin", examples)
    words = [w for w, _ in reading.words(real_lm, n=3)]
    assert words[0] in {"fruit", "banana", "apple", "lemon", "pear", "mango"}, words


@pytest.mark.integration
def test_the_right_context_tells_a_fridge_from_an_oven(real_lm):
    from backends.neighbours import vocabulary_index

    examples = [
        Example("She opened the dax and took out a cold bottle of milk."),
        Example("Put the butter back in the dax so it does not melt."),
    ]
    index = vocabulary_index(real_lm, "input")
    # the slot and its right context alone (not asked outright)
    left_only = soft_guess(real_lm, "dax", examples, ReaderConfig(right_tokens=0, from_blank=0))
    both = soft_guess(real_lm, "dax", examples, ReaderConfig(right_tokens=4, from_blank=0))
    top = [n.token.strip().lower() for n in index.search(both, 3)[0]]
    assert "fridge" in top or "refrigerator" in top, top
    assert index.search(left_only, 1)[0][0].token.strip().lower() not in {"fridge"}
    default = soft_guess(real_lm, "dax", examples)  # also asked outright
    top = [n.token.strip().lower() for n in index.search(default, 3)[0]]
    assert "fridge" in top or "refrigerator" in top, top


@pytest.mark.integration
def test_right_contexts_read_through_the_int8_layer_give_the_fp32_guess(real_lm):
    """The right-context scores' normaliser comes from the int8 layer when it is on (the
    app's CPU default); the guess stays the fp32 one's, as do its nearest words."""
    from backends.neighbours import vocabulary_index

    examples = [
        Example("She opened the dax and took out a cold bottle of milk."),
        Example("Put the butter back in the dax so it does not melt."),
    ]
    assert real_lm.head_int8 is not None
    with_int8 = soft_guess(real_lm, "dax", examples)
    layer, real_lm.head_int8 = real_lm.head_int8, None
    try:
        fp32 = soft_guess(real_lm, "dax", examples)
    finally:
        real_lm.head_int8 = layer
    assert torch.nn.functional.cosine_similarity(with_int8, fp32, dim=0) > 0.999
    index = vocabulary_index(real_lm, "input")
    assert [n.token for n in index.search(with_int8, 3)[0]] == [
        n.token for n in index.search(fp32, 3)[0]
    ]


@pytest.mark.integration
def test_asked_outright_the_real_lm_names_a_word_that_starts_its_sentence(real_lm):
    from backends.neighbours import vocabulary_index

    examples = [Example("dax is a yellow fruit that monkeys like to eat.")]
    guess = soft_guess(real_lm, "dax", examples, ReaderConfig(from_blank=16))
    top = {n.token.strip().lower() for n in vocabulary_index(real_lm, "input").search(guess, 5)[0]}
    assert top & {"banana", "mango", "papaya", "pineapple", "lemon", "fruit"}, top


@pytest.mark.integration
@needs_wordnet
def test_an_adjectives_participle_is_read_as_itself(real_lm):
    from backends.learners.lm_reader import Reading, participles_as_read

    def ids(*words):
        return torch.tensor([real_lm.encode(" " + w, bos=False)[0] for w in words])

    forms, bases = ids("strapping", "drained", "kids"), ids("strap", "drain", "kid")
    weights = torch.tensor([0.5, 0.3, 0.2])
    vector = weights @ real_lm.input_matrix[bases].float()
    reading = Reading(bases, weights, vector, forms)
    kept = participles_as_read(real_lm, reading)
    # strapping and drained are WordNet adjectives too; kids is a plural only
    assert kept.rows.tolist() == ids("strapping", "drained", "kid").tolist()
    assert torch.allclose(kept.vector, weights @ real_lm.input_matrix[kept.rows].float())
    assert torch.equal(kept.weights, weights) and torch.equal(kept.forms, forms)
    as_nouns = Reading(ids("kid"), torch.ones(1), real_lm.input_matrix[ids("kid")][0], ids("kids"))
    assert participles_as_read(real_lm, as_nouns) is as_nouns  # nothing to change: the same
