"""Decoding controls: n-gram blocking, the banned word, the repetition penalty, sampling."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from backends.decoding import (
    GREEDY,
    Decoding,
    TokenForms,
    adjust,
    adjust_,
    blocked_tokens,
    is_markup,
    pick,
    sampler,
)
from backends.learners.base import NonceEmbedding


def test_blocked_tokens_are_those_that_would_repeat_an_ngram():
    # "7 8 9 7 8" -> a 9 would repeat the trigram "7 8 9"; nothing else is blocked.
    assert blocked_tokens([7, 8, 9, 7, 8], 3) == {9}
    assert blocked_tokens([7, 8, 9, 7, 8], 2) == {9}  # bigram "8 9" seen after 8
    assert blocked_tokens([7, 8, 9, 7, 8], 0) == set()
    assert blocked_tokens([7], 3) == set()
    assert blocked_tokens([5, 5], 1) == {5}  # unigrams: every seen token


def test_adjust_bans_the_word_blocks_ngrams_and_penalises_repeats():
    logprobs = torch.log(torch.full((10,), 0.1))
    generated = [1, 2, 3, 1, 2]
    out = adjust(logprobs, generated, banned=[7], decoding=Decoding(repetition_penalty=2.0))
    assert out[7] == float("-inf")  # the defined word
    assert out[3] == float("-inf")  # would repeat the trigram "1 2 3"
    assert out[1] == pytest.approx(math.log(0.1) - math.log(2.0))  # seen: penalised
    assert out[4] == pytest.approx(math.log(0.1))  # unseen: untouched
    assert torch.equal(adjust(logprobs, generated, [7], GREEDY), logprobs)


def test_greedy_pick_is_argmax_and_sampling_replays_with_its_seed():
    logprobs = torch.log_softmax(torch.randn(4, 50, generator=torch.Generator().manual_seed(1)), -1)
    assert torch.equal(pick(logprobs, GREEDY, None), logprobs.argmax(-1))
    hot = Decoding(temperature=1.5, top_k=5, seed=3)
    draws = [pick(logprobs, hot, sampler(hot)) for _ in range(2)]
    assert torch.equal(draws[0], draws[1])  # same seed, same draw
    allowed = logprobs.topk(5, dim=-1).indices
    assert all(int(draws[0][r]) in allowed[r].tolist() for r in range(4))
    runs = [pick(logprobs, hot, torch.Generator().manual_seed(s)) for s in range(4)]
    seeds = {tuple(r.tolist()) for r in runs}
    assert len(seeds) > 1  # sampling does vary with the seed


def test_bad_settings_name_the_value():
    with pytest.raises(ValueError, match="temperature"):
        Decoding(temperature=-1)
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        Decoding(no_repeat_ngram=-2)


def test_generation_never_says_the_banned_word_or_repeats_a_word(tiny_lm):
    from backends.definitions import define

    d = tiny_lm.dim
    # An output vector far longer than any row: undecoded, the tiny LM says the word forever.
    loud = NonceEmbedding("loud", "wug", torch.zeros(d), torch.full((d,), 5.0))
    looping = define(tiny_lm, [loud], max_new_tokens=12, decoding=GREEDY)[0]
    assert "wug" in looping.raw
    controlled = define(tiny_lm, [loud], max_new_tokens=12)[0]
    assert "wug" not in controlled.raw
    # the rules read words (punctuation read through): no word trigram twice, no content
    # word twice (without the once-rule: 'apple car car apple car apple apple car ...')
    words = tiny_lm.token_forms().words(tiny_lm.encode(controlled.raw, bos=False))
    trigrams = [tuple(words[i : i + 3]) for i in range(len(words) - 2)]
    assert len(trigrams) == len(set(trigrams))
    assert len(words) == len(set(words))


def test_markup_pieces_are_those_with_an_angle_bracket():
    assert all(is_markup(p) for p in ("<b>", "</td>", "▁<", "=>", "<start_of_image>"))
    assert not any(is_markup(p) for p in ("▁a", "night", '"', "≤"))


def test_the_real_lm_writes_neither_tags_nor_control_tokens_but_may_end(real_lm):
    unwritable = set(real_lm.unwritable_ids().tolist())
    tokens = real_lm.tokenizer.convert_tokens_to_ids
    assert {tokens(t) for t in ("<b>", "</b>", "<start_of_image>", "<pad>", "<bos>")} <= unwritable
    assert real_lm.tokenizer.eos_token_id not in unwritable
    assert not {tokens(t) for t in ("▁a", "▁night", ".")} & unwritable


def test_sampling_never_writes_a_special_token_but_the_end_of_text(tiny_lm):
    # a random LM at temperature 2 writes '<pad>', '<bos>' and '<unk>' among its words
    prompts = [tiny_lm.encode("the bird is defined as")] * 4
    special = set(tiny_lm.unwritable_ids().tolist())
    assert special == {0, 2, 3}  # the tiny tokenizer's specials, '<eos>' (1) left writable

    def written(decoding: Decoding) -> list[int]:
        return [
            t
            for row in tiny_lm.generate(prompts, max_new_tokens=16, decoding=decoding)
            for t in row
        ]

    free = Decoding(ban_word=False, temperature=2.0, seed=1, text_only=False)
    assert special & set(written(free))  # the rule has something to stop
    banned = written(replace(free, text_only=True))
    assert not special & set(banned)
    # an arena vote stored before the rule replays without it
    assert Decoding.from_record({**free.record(), "text_only": True}).text_only
    old = {k: v for k, v in free.record().items() if k != "text_only"}
    assert not Decoding.from_record(old).text_only


def test_token_forms_read_tokens_as_words():
    pieces = ["the", "▁the", "▁The", "cat", "▁cat", ",", '"the', '▁"', '"', "▁counter", "feit"]
    forms = TokenForms.of_vocabulary(pieces + ["▁counterfeit", "counter"])
    assert forms.words([1, 7, 4, 5, 0]) == ["the", "cat", "the"]  # quotes, commas read through
    assert forms.words([2, 6]) == ["thethe"]  # '"the' has no space: it continues the word
    assert forms.words([9, 10, 5, 11]) == ["counterfeit", "counterfeit"]  # pieces joined
    assert forms.words([7, 12, 10, 8]) == ["counterfeit"]  # after a quote a word begins
    assert forms.words([99, 4]) == ["<99>", "cat"]  # a nonce id is a word of its own
    # what may begin "counterfeit" next: spellings of its prefixes that start a word there
    assert forms.beginning("counterfeit", [4]) == {9, 11}
    assert forms.beginning("counterfeit", [7]) == {9, 11, 12}  # after a quote, "counter" too


def test_no_repeat_rule_compares_word_forms():
    # "▁the cat , the": another token of the same word "the"; a "cat" now would repeat
    # the word bigram "the cat", though no token bigram repeats.
    forms = TokenForms.of_vocabulary(["the", "▁the", "▁cat", ","])
    logprobs = torch.zeros(4)
    out = adjust(logprobs, [1, 2, 3, 0], [], Decoding(no_repeat_ngram=2), forms)
    assert out[2] == float("-inf")
    assert torch.equal(adjust(logprobs, [1, 2, 3, 0], [], Decoding(no_repeat_ngram=2)), logprobs)
    # 'the , cat , the ,' : commas are read through, so a 'cat' would repeat 'the cat'
    out = adjust(logprobs, [1, 3, 2, 3, 0, 3], [], Decoding(no_repeat_ngram=2), forms)
    assert out[2] == float("-inf")


def test_no_repeat_rule_joins_a_words_pieces():
    # The dev item that looped: 'a "counterfeit" or "counterfeit" is a counterfeit or' —
    # a single-token "counterfeit" now would repeat "counterfeit or counterfeit".
    pieces = ["▁a", '▁"', "counter", "feit", '"', "▁or", "▁is", "▁counterfeit", "▁goods"]
    forms = TokenForms.of_vocabulary(pieces)
    said = [0, 1, 2, 3, 4, 5, 1, 2, 3, 4, 6, 0, 7, 5]
    out = adjust(torch.zeros(len(pieces)), said, [], Decoding(no_repeat_ngram=3), forms)
    assert out[7] == float("-inf") and out[8] == 0


def test_a_content_word_said_its_limit_of_times_is_not_said_again():
    # The test item that looped past the n-gram rule: 'a " shed " or " shed " is a " shed "'
    # (the words between the "shed"s change, so no word 3-gram repeats).
    pieces = ["▁a", '▁"', "shed", '"', "▁or", "▁is", "▁shed", "▁small", "▁building", "▁sh", "ed"]
    forms = TokenForms.of_vocabulary(pieces)
    said = [0, 1, 2, 3, 4, 1, 2, 3, 5, 0]  # a " shed " or " shed " is a
    twice = Decoding(word_uses=2)
    out = adjust(torch.zeros(len(pieces)), said, [], twice, forms)
    assert out[6] == float("-inf")  # ' shed' a third time
    assert out[7] == 0 and out[8] == 0  # other words, and "a" (a function word), are free
    assert adjust(torch.zeros(len(pieces)), said, [], Decoding(word_uses=0), forms)[6] == 0
    # a third "shed" spelled in two pieces: the piece that would finish it is blocked
    out = adjust(torch.zeros(len(pieces)), [*said, 9], [], twice, forms)
    assert out[10] == float("-inf")
    # once is the limit: the second "shed" is blocked as well
    assert adjust(torch.zeros(len(pieces)), [0, 1, 2, 3, 4], [], Decoding(word_uses=1), forms)[
        6
    ] == float("-inf")


def test_do_is_said_once_like_a_content_word():
    # college's reading of a verb, DefGen dev: 'to run, to go, ..., to do, to do something,
    # to do.' -- "do" is a function word, so the once rule let it loop
    pieces = ["▁to", "▁run", ",", "▁do", "▁something", "▁does", "▁not", "▁d", "o"]
    forms = TokenForms.of_vocabulary(pieces)
    said = [0, 1, 2, 0, 3, 2, 0]  # to run, to do, to
    out = adjust(torch.zeros(len(pieces)), said, [], Decoding(), forms)
    assert out[3] == float("-inf")  # ' do' a second time
    assert out[5] == 0 and out[6] == 0  # "does" and other function words are free
    assert adjust(torch.zeros(len(pieces)), [*said, 7], [], Decoding(), forms)[8] == float(
        "-inf"
    )  # nor in two pieces
    assert adjust(torch.zeros(len(pieces)), said, [], Decoding(count_do=False), forms)[3] == 0
    assert Decoding.from_record({}).count_do is False  # a stored battle decoded without it


def test_no_word_follows_itself():
    # 'the study of past events, events' and 'a "to "to reduce"': a word right after itself
    pieces = ["▁the", "▁events", ",", "▁a", "▁to", '▁"', "to", "▁study"]
    forms = TokenForms.of_vocabulary(pieces)
    out = adjust(torch.zeros(len(pieces)), [0, 7, 1, 2], [], Decoding(word_uses=2), forms)
    assert out[1] == float("-inf") and out[0] == 0
    out = adjust(torch.zeros(len(pieces)), [3, 4, 5], [], Decoding(word_uses=2), forms)
    assert out[6] == float("-inf")  # function words too, through the quote
    assert out[4] == float("-inf") and out[7] == 0


@pytest.mark.integration
def test_a_vector_that_copies_a_known_word_may_not_name_it(real_lm):
    from backends.definitions import copied_tokens, define, define_known, own_tokens, word_forms

    on = Decoding(copy_cosine=0.75)
    oven = real_lm.encode(" oven", bos=False)
    assert len(oven) == 1
    row = real_lm.input_matrix[oven[0]].detach().float()
    copy = NonceEmbedding("copy", "dax", row.clone(), row.clone())
    forms = set(word_forms(real_lm, "oven"))
    # ' oven', 'oven', ' Oven', ' ovens', ... every spelling and inflection, nothing else
    assert oven[0] in forms and len(forms) > 2
    assert all(real_lm.token_forms().key[t].startswith("oven") for t in forms)
    assert set(copied_tokens(real_lm, copy, on)) >= forms
    assert copied_tokens(real_lm, copy, Decoding()) == []  # off by default
    # a vector half way to another word is still read as both (cosine ~0.77 to each)
    door = real_lm.input_matrix[real_lm.encode(" door", bos=False)[0]].detach().float()
    half = NonceEmbedding("half", "dax", 0.5 * row + 0.5 * door, row.clone())
    both = set(copied_tokens(real_lm, half, on))
    assert forms <= both and set(word_forms(real_lm, "door")) <= both

    text = define(real_lm, [copy], decoding=on)[0].text.lower()
    assert text and "oven" not in text
    # the oracle's real word is banned with its forms alike
    assert set(own_tokens(real_lm, "oven", on)) == forms
    assert set(own_tokens(real_lm, "oven")) < forms  # by default its own tokens only
    assert "oven" not in define_known(real_lm, ["oven"], decoding=on)[0].text.lower()


def test_a_word_quoted_alone_does_not_open_a_quotation_again():
    # The definition reader's loop, as Gemma spells it: 'a "small" or "a" or "a" (plural)'
    pieces = ["▁a", '▁"', "small", '"', "▁or", "a", '▁"a', "▁small", "▁thing", "▁(", "plural"]
    forms = TokenForms.of_vocabulary(pieces)
    quoted_a = [0, 1, 2, 3, 4, 1, 5, 3, 4]  # a "small" or "a" or
    out = adjust(torch.zeros(len(pieces)), [*quoted_a, 1], [], Decoding(), forms)  # ... "
    assert out[5] == float("-inf")  # "a" again, after the opening mark
    assert out[2] == float("-inf")  # "small" too (content words are the once rule's as well)
    assert out[8] == 0  # another word may open it
    out = adjust(torch.zeros(len(pieces)), quoted_a, [], Decoding(), forms)
    assert out[6] == float("-inf")  # the mark and the word in one token
    assert out[0] == 0 and out[1] == 0  # the article itself, and a quotation of another word
    # inside a quotation of several words, and with the rule off, "a" is free
    inside = [*quoted_a, 1, 8]  # ... "thing
    assert adjust(torch.zeros(len(pieces)), inside, [], Decoding(), forms)[0] == 0
    off = Decoding(quote_once=False, word_uses=0)
    assert adjust(torch.zeros(len(pieces)), [*quoted_a, 1], [], off, forms)[5] == 0
    # a vote stored before the rule replays without it
    old = {k: v for k, v in Decoding().record().items() if k != "quote_once"}
    assert Decoding.from_record(old).quote_once is False


def test_a_token_follows_itself_at_most_token_run_times():
    # prompting's sampled definition of "dependent" (arena sampling, dev): '2.444444...'
    pieces = ["2", ".", "4", "▁number", "0", "1"]
    forms = TokenForms.of_vocabulary(pieces)
    at_limit = [0, 1, 2, 2, 2, 2, 2]  # 2.44444
    numbers = Decoding(content_first=False)  # a full stop may come before any content word
    out = adjust(torch.zeros(len(pieces)), at_limit, [], numbers, forms)
    assert out[2] == float("-inf") and out[0] == 0 and out[1] == 0
    assert adjust(torch.zeros(len(pieces)), at_limit[:-1], [], numbers, forms)[2] == 0
    # "10000" (four of a digit) is a number, not a loop; without token forms alike (where
    # the n-gram rule, reading token ids, would block a third "000" on its own)
    alone = Decoding(no_repeat_ngram=0)
    assert adjust(torch.zeros(len(pieces)), [5, 4, 4, 4, 4], [], alone, None)[4] == 0
    assert adjust(torch.zeros(len(pieces)), [5, *[4] * 5], [], alone, None)[4] < 0
    assert adjust(torch.zeros(len(pieces)), at_limit, [], Decoding(token_run=0), forms)[2] == 0
    assert GREEDY.token_run == 0  # plain argmax
    with pytest.raises(ValueError, match="token_run"):
        Decoding(token_run=-1)
    # a vote stored before the rule replays without it
    old = {k: v for k, v in Decoding().record().items() if k != "token_run"}
    assert Decoding.from_record(old).token_run == 0


def test_slurs_are_never_said_in_one_token_or_in_pieces():
    from backends.blocked_words import SLURS

    slur = sorted(SLURS)[0]
    head, tail = slur[:3], slur[3:]
    pieces = ["▁a", "▁" + slur, "▁" + head, tail, "▁horse", '▁"']
    forms = TokenForms.of_vocabulary(pieces)
    out = adjust(torch.zeros(len(pieces)), [0], [], Decoding(), forms)
    assert out[1] == float("-inf") and out[4] == 0  # the whole word, not the others
    out = adjust(torch.zeros(len(pieces)), [0, 2], [], Decoding(), forms)
    assert out[3] == float("-inf")  # the piece that would finish it
    assert adjust(torch.zeros(len(pieces)), [0, 2], [], GREEDY, forms)[3] == 0
    assert not GREEDY.word_uses and not GREEDY.no_repeat_ngram  # plain argmax


def test_a_sentence_does_not_stop_on_a_word_that_wants_another():
    # The prompting baseline's 'a word that is used to describe a' / 'person or thing.':
    # the LM copied the examples' short lines and broke the line after "a".
    pieces = ["▁a", "▁word", "▁to", "▁describe", "\n", "\n\n", ".", '."', "▁person", ",", "?"]
    pieces += ["▁state", "▁of", "▁being"]
    forms = TokenForms.of_vocabulary(pieces)
    stops = [4, 5, 6, 7, 10]
    out = adjust(torch.zeros(len(pieces)), [0, 1, 2, 3, 0], [], Decoding(), forms)  # ... a
    assert all(out[t] == float("-inf") for t in stops)
    assert out[8] == 0 and out[9] == 0  # the next word, or a comma, may come
    out = adjust(torch.zeros(len(pieces)), [0, 1, 2, 3, 0, 8], [], Decoding(), forms)
    assert all(out[t] == 0 for t in stops)  # after "person" the sentence may end
    out = adjust(torch.zeros(len(pieces)), [0, 11, 12, 13], [], Decoding(), forms)
    assert all(out[t] == 0 for t in stops)  # 'a state of being.' is whole
    # after a mark the word is closed ('to be called "a".' quotes it); with the rule off, free
    assert adjust(torch.zeros(len(pieces)), [1, 0, 9], [], Decoding(), forms)[6] == 0
    off = Decoding(finish_sentence=False)
    assert adjust(torch.zeros(len(pieces)), [0, 1, 2], [], off, forms)[4] == 0
    # an arena vote stored before the rule replays without it
    old = {k: v for k, v in Decoding().record().items() if k != "finish_sentence"}
    assert not Decoding.from_record(old).finish_sentence


def test_a_phrasal_verb_may_end_a_sentence():
    # College's 'to tear apart, break into pieces, or to cut into' went on, with the stop
    # blocked after "into", to '... into" in the Cambridge English Dictionary.'
    pieces = ["▁to", "▁cut", "▁into", "▁a", "▁piece", "▁of", "▁go", ".", "\n"]
    forms = TokenForms.of_vocabulary(pieces)
    stops = [7, 8]
    out = adjust(torch.zeros(len(pieces)), [0, 1, 2], [], Decoding(), forms)  # to cut into
    assert all(out[t] == 0 for t in stops)
    out = adjust(torch.zeros(len(pieces)), [3, 4, 5], [], Decoding(), forms)  # a piece of
    assert all(out[t] == float("-inf") for t in stops)
    out = adjust(torch.zeros(len(pieces)), [0, 6, 0], [], Decoding(), forms)  # to go to
    assert all(out[t] == float("-inf") for t in stops)  # "to" wants its object
    out = adjust(torch.zeros(len(pieces)), [0, 3, 2], [], Decoding(), forms)  # to a into
    assert all(out[t] == float("-inf") for t in stops)  # no verb before it
    strict = Decoding(particle_ends=False)
    assert adjust(torch.zeros(len(pieces)), [0, 1, 2], [], strict, forms)[7] == float("-inf")
    old = {k: v for k, v in Decoding().record().items() if k != "particle_ends"}
    assert not Decoding.from_record(old).particle_ends


def test_a_blank_token_does_not_free_a_word_that_wants_another():
    # Sampled for an arena battle, college wrote "▁a", "▁", "\n": shown as 'a'.
    pieces = ["▁a", "▁", "▁▁▁▁", "\n", ".", "▁word"]
    forms = TokenForms.of_vocabulary(pieces)
    for after in ([0, 1], [0, 1, 2]):
        out = adjust(torch.zeros(len(pieces)), after, [], Decoding(), forms)
        assert out[3] == float("-inf") and out[4] == float("-inf") and out[5] == 0
    assert adjust(torch.zeros(len(pieces)), [0, 5, 1], [], Decoding(), forms)[3] == 0
    later = ("stop_past_blanks", "content_first")
    old = {k: v for k, v in Decoding().record().items() if k not in later}
    assert adjust(torch.zeros(len(pieces)), [0, 1], [], Decoding.from_record(old), forms)[3] == 0


def test_no_line_break_inside_an_open_quotation():
    # Prompting's kraiweant (a compliment) was shown as '"a person or thing that is'.
    pieces = ['▁"', "a", "▁thing", '"', "\n", ".", '."', "▁“", "”"]
    forms = TokenForms.of_vocabulary(pieces)
    breaks_only = Decoding(quotes_close=False)  # the rule alone, full stops left to the next
    out = adjust(torch.zeros(len(pieces)), [0, 1, 2], [], breaks_only, forms)  # "a thing
    assert out[4] == float("-inf")
    assert out[5] == 0 and out[6] == 0 and out[3] == 0  # a full stop or the closing mark
    out = adjust(torch.zeros(len(pieces)), [0, 1, 2, 3], [], Decoding(), forms)  # "a thing"
    assert out[4] == 0
    out = adjust(torch.zeros(len(pieces)), [7, 1, 2], [], Decoding(), forms)  # “a thing
    assert out[4] == float("-inf")
    assert adjust(torch.zeros(len(pieces)), [7, 1, 2, 8], [], Decoding(), forms)[4] == 0
    off = Decoding(close_quotes=False, quotes_close=False)
    assert adjust(torch.zeros(len(pieces)), [0, 1, 2], [], off, forms)[4] == 0
    old = {k: v for k, v in Decoding().record().items() if k != "close_quotes"}
    assert not Decoding.from_record(old).close_quotes


def test_no_sentence_ends_inside_an_open_quotation_unless_the_mark_closes_it():
    # Sampled for battles: '"extreme.' and '"a person, event or thing that takes place.'
    pieces = ['▁"', "▁extreme", ".", '."', '"', "!", "▁“", "”.", "▁and"]
    forms = TokenForms.of_vocabulary(pieces)
    out = adjust(torch.zeros(len(pieces)), [0, 1], [], Decoding(), forms)  # "extreme
    assert out[2] == float("-inf") and out[5] == float("-inf")  # '.', '!' leave it open
    assert out[3] == 0 and out[4] == 0 and out[8] == 0  # '."' closes it, or it goes on
    out = adjust(torch.zeros(len(pieces)), [6, 1], [], Decoding(), forms)  # “extreme
    assert out[2] == float("-inf") and out[7] == 0
    assert adjust(torch.zeros(len(pieces)), [0, 1, 4], [], Decoding(), forms)[2] == 0  # closed
    assert adjust(torch.zeros(len(pieces)), [0, 1], [], Decoding(quotes_close=False), forms)[2] == 0
    old = {k: v for k, v in Decoding().record().items() if k != "quotes_close"}
    assert not Decoding.from_record(old).quotes_close


def test_adjust_in_place_writes_the_row_it_is_given_as_adjust_returns_it():
    # generation adjusts each row of its batch in place (`adjust_`): the same values as
    # `adjust`'s copy, in every state of the rules that fill whole token sets at once
    pieces = ['▁"', "▁extreme", ".", '."', '"', "!", "\n", "▁and", "▁a", ":", "▁thing"]
    forms = TokenForms.of_vocabulary(pieces)
    seeded = torch.Generator().manual_seed(0)
    logprobs = torch.log_softmax(torch.randn(len(pieces) + 2, generator=seeded), 0)
    states = [[], [8], [0, 1], [0, 1, 4], [8, 10, 9], [8, 10, 7, 1, 10]]
    for generated in states:
        for decoding in (Decoding(), Decoding(wind_down=4), Decoding(close_quotes=False)):
            expected = adjust(logprobs, generated, [len(pieces)], decoding, forms, 6)
            batch = torch.stack([logprobs, logprobs])
            returned = adjust_(batch[1], generated, [len(pieces)], decoding, forms, 6)
            assert torch.equal(batch[1], expected) and returned.data_ptr() == batch[1].data_ptr()
            assert torch.equal(batch[0], logprobs)  # the other row untouched


def test_no_definition_stops_before_it_says_a_content_word():
    # Sampled for battles: '1.' and 'a 1.' (a numbered list begun); greedy, prompting's
    # 'you can' (the line broken after it) were shown as definitions.
    pieces = ["▁a", "▁1", ".", "\n", "▁you", "▁can", "▁child", ":", '▁"', ","]
    forms = TokenForms.of_vocabulary(pieces)
    stops = [2, 3]
    for begun in ([1], [0, 1], [4, 5], [0, 9]):  # '1', 'a 1', 'you can', 'a,'
        out = adjust(torch.zeros(len(pieces)), begun, [], Decoding(), forms)
        assert all(out[t] == float("-inf") for t in stops), begun
        assert out[6] == 0 and out[7] == 0  # a word, or another mark, may come
    out = adjust(torch.zeros(len(pieces)), [0, 6], [], Decoding(), forms)  # a child
    assert all(out[t] == 0 for t in stops)
    # nothing said yet: a first line of marks alone is skipped, not taken for a definition
    assert adjust(torch.zeros(len(pieces)), [7], [], Decoding(), forms)[3] == 0
    assert adjust(torch.zeros(len(pieces)), [], [], Decoding(), forms)[3] == 0
    off = Decoding(content_first=False, finish_sentence=False)
    assert adjust(torch.zeros(len(pieces)), [0, 1], [], off, forms)[2] == 0
    old = {k: v for k, v in Decoding().record().items() if k != "content_first"}
    assert not Decoding.from_record(old).content_first


def test_no_definition_stops_right_after_a_colon():
    # Sampled for battles: 'the following:' and 'a knot:', the list left for the next line.
    pieces = ["▁a", "▁knot", ":", "▁", "\n", ".", "▁loop", '":']
    forms = TokenForms.of_vocabulary(pieces)
    for after in ([0, 1, 2], [0, 1, 2, 3], [0, 1, 7]):  # 'a knot:', then a blank, 'a knot":'
        out = adjust(torch.zeros(len(pieces)), after, [], Decoding(), forms)
        assert out[4] == float("-inf") and out[5] == float("-inf"), after
        assert out[6] == 0  # what the colon announces
    assert adjust(torch.zeros(len(pieces)), [0, 1, 2, 0, 6], [], Decoding(), forms)[4] == 0
    assert adjust(torch.zeros(len(pieces)), [2], [], Decoding(), forms)[4] == 0  # 'as:' + line
    old = {k: v for k, v in Decoding().record().items() if k != "colon_goes_on"}
    assert adjust(torch.zeros(len(pieces)), [0, 1, 2], [], Decoding.from_record(old), forms)[4] == 0


def test_no_sentence_stops_on_a_modal_verb_or_the_verb_after_it():
    # Sampled for a battle: prompting's 'a series of characters that can be' (a line break).
    pieces = ["▁that", "▁can", "▁be", "▁have", "▁seen", "\n", ".", "▁to", "▁of"]
    forms = TokenForms.of_vocabulary(pieces)
    for after in ([4, 0, 1], [4, 0, 1, 2], [4, 0, 1, 3]):  # that can / can be / can have
        out = adjust(torch.zeros(len(pieces)), after, [], Decoding(), forms)
        assert out[5] == float("-inf") and out[6] == float("-inf"), after
    for after in ([4, 0, 1, 2, 4], [4, 7, 2], [4, 8, 7, 2]):  # can be seen / to be: whole
        assert adjust(torch.zeros(len(pieces)), after, [], Decoding(), forms)[5] == 0, after
    old = {k: v for k, v in Decoding().record().items() if k != "modals_go_on"}
    assert (
        adjust(torch.zeros(len(pieces)), [4, 0, 1, 2], [], Decoding.from_record(old), forms)[5] == 0
    )


def test_a_definition_near_its_budget_winds_down_to_a_sentence_end():
    # Sampled for battles, 90 of 700 definitions ran to the token budget and were shown cut
    # ('"to do, to succeed, to be successful, ... or to get …'): in the budget's last
    # `wind_down` tokens each stop still allowed gains `wind_down_rate` nats a token more,
    # and a ban still holds.
    pieces = ["▁a", "▁thing", "▁or", ".", "\n", "▁b", "▁c", "▁d", '."']
    forms = TokenForms.of_vocabulary(pieces)
    winding, off = Decoding(wind_down=3, wind_down_rate=0.5), Decoding(wind_down=0)

    def gain(generated, budget=6):  # what the rule adds to each token's log-probability
        return (
            adjust(torch.zeros(len(pieces)), generated, [], winding, forms, budget)
            - adjust(torch.zeros(len(pieces)), generated, [], off, forms, budget)
        ).nan_to_num(nan=0.0)

    assert gain([0, 1]).tolist() == [0.0] * len(pieces)  # the 3rd token of 6: untouched
    fourth, fifth, sixth = gain([0, 1, 5]), gain([0, 1, 5, 6]), gain([0, 1, 5, 6, 7])
    assert fourth[3] == 0.5 and fifth[3] == fifth[4] == fifth[8] == 1.0 and sixth[3] == 1.5
    assert fifth[0] == fifth[2] == 0  # only stops
    assert gain([0, 1, 5, 6], budget=None).tolist() == [0.0] * len(pieces)
    # a budget as small as the window: no end before a content word is said ('a'), then on
    assert gain([0], budget=3).tolist() == [0.0] * len(pieces)
    assert gain([0, 1], budget=3)[3] == 1.5
    out = adjust(torch.zeros(len(pieces)), [0, 1, 5, 2], [], winding, forms, 6)  # '... or'
    assert out[3] == out[4] == float("-inf")
    old = {k: v for k, v in Decoding().record().items() if k != "wind_down"}
    assert Decoding.from_record(old).wind_down == 0
    assert GREEDY.wind_down == 0  # training reads a fixed number of the LM's tokens
    with pytest.raises(ValueError, match="wind_down"):
        Decoding(wind_down=-1)


def test_greedy_is_plain_argmax_whatever_the_text_so_far():
    # Training reads the LM's own answers with GREEDY: no rule may forbid or boost a token,
    # not even a stop after "a", inside a quotation, before a content word or near the end.
    pieces = ["▁a", '▁"', "▁thing", ".", "\n", "▁a", ":"]
    forms = TokenForms.of_vocabulary(pieces)
    for generated in ([], [0], [1, 2], [2, 6], [0, 2, 0, 2]):
        out = adjust(torch.zeros(len(pieces)), generated, [], GREEDY, forms, budget=5)
        assert out.tolist() == [0.0] * len(pieces), generated


def test_generation_places_the_wind_down_at_the_end_of_its_budget(tiny_lm, monkeypatch):
    import backends.nonce_lm
    from backends.definitions import define

    seen = []  # (tokens so far, budget) of each call

    def spy(logprobs, generated, banned, decoding, forms=None, budget=None):
        seen.append((len(generated), budget))
        return adjust_(logprobs, generated, banned, decoding, forms, budget)

    monkeypatch.setattr(backends.nonce_lm, "adjust_", spy)
    d = tiny_lm.dim
    loud = NonceEmbedding("loud", "wug", torch.zeros(d), torch.full((d,), 5.0))
    define(tiny_lm, [loud], max_new_tokens=7, decoding=Decoding(wind_down=3))
    assert seen and all(budget == 7 for _, budget in seen)
