"""The nonce slot's mechanics, on a tiny randomly initialised Gemma-3-shaped LM."""

import math

import pytest
import torch
import torch.nn.functional as F

from backends.nonce_lm import (
    NonceSlot,
    inflect,
    inflected_pattern,
    mixed,
    word_pattern,
)


def random_slot(lm, n, seed=0):
    g = torch.Generator().manual_seed(seed)
    return NonceSlot(torch.randn(n, lm.dim, generator=g), torch.randn(n, lm.dim, generator=g))


def test_word_pattern_matches_whole_word_and_inflections():
    pattern = word_pattern("wug")
    assert pattern.search("Two wugs sat.") and pattern.search("A WUG.")
    assert not pattern.search("a wugly thing") and not pattern.search("bewug")


@pytest.mark.parametrize(
    ("word", "text", "stem", "rest"),
    [
        ("quib", "He quibbed the ball.", "quibb", "ed the ball."),  # doubled consonant
        ("quib", "quibbing", "quibb", "ing"),
        ("wug", "two wugged", "wugg", "ed"),
        ("glimble", "glimbling up", "glimbl", "ing up"),  # silent e dropped
        ("glimble", "a glimbler", "glimble", "r"),
        ("mimsy", "the mimsiest soup", "mimsi", "est soup"),  # y -> i
        ("mimsy", "she mimsied", "mimsi", "ed"),
        ("dax", "daxed", "dax", "ed"),  # x is never doubled
        ("splunk", "the splunkest day", "splunk", "est day"),  # an adjective's superlative
        ("glimble", "the glimblest", "glimble", "st"),
        ("wug", "the wuggest", "wugg", "est"),
    ],
)
def test_word_pattern_follows_english_spelling_before_an_ending(word, text, stem, rest):
    match = word_pattern(word).search(text)
    assert match.group() == stem and text[match.end() :] == rest


@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("quib", "a quibber"),  # no doubling before -er: it would read hammer as ham
        ("dax", "daxxed"),
        ("play", "plaied"),  # a vowel before the y keeps it
        ("flee", "fleing"),  # nor is a double e dropped
        ("mimsy", "mimsily"),
    ],
)
def test_word_pattern_changes_no_other_spelling(word, text):
    assert word_pattern(word).search(text) is None


@pytest.mark.parametrize(
    ("word", "ending", "spelled"),
    [
        ("frulisk", "d", "frulisked"),  # from stipulated: the e was the real word's
        ("pindle", "ed", "pindled"),
        ("pindle", "ing", "pindling"),
        ("migrax", "s", "migraxes"),
        ("wug", "es", "wugs"),  # from watches
        ("wug", "r", "wuger"),  # from baker: no doubling before -er, as word_pattern reads it
        ("quib", "ed", "quibbed"),
        ("krebip", "ed", "krebiped"),  # doubled in one syllable only: not krebipped
        ("mimsy", "s", "mimsies"),
        ("mimsy", "ed", "mimsied"),
        ("mimsy", "ing", "mimsying"),
        ("play", "s", "plays"),
        ("wug", "", "wug"),
        ("wug", "'s", "wug's"),
        ("splunk", "est", "splunkest"),
        ("wug", "est", "wuggest"),
        ("glimble", "est", "glimblest"),
    ],
)
def test_inflect_spells_an_ending_for_the_word_and_the_pattern_reads_it_back(word, ending, spelled):
    assert inflect(word, ending) == spelled
    assert word_pattern(word).match(spelled)
    if ending != "'s":  # a possessive stays outside the whole word
        assert inflected_pattern(word).fullmatch(spelled)


@pytest.mark.parametrize(
    ("word", "text", "span"),
    [
        ("弗洛普", "我喜欢弗洛普。", (3, 6)),  # Han: no spaces, no word boundary
        ("弗洛普", "弗洛普很好吃", (0, 3)),  # the letters after it are the next word's
        ("ふろっぷ", "これはふろっぷです", (3, 7)),  # Hiragana
        ("フロップ", "フロップが好き", (0, 4)),  # Katakana
        ("T恤", "我买了一件T恤。", (5, 7)),  # mixed with Latin
        ("ฟลอร์ป", "ฉันชอบฟลอร์ปมาก", (6, 12)),  # Thai, with a combining mark inside
    ],
)
def test_a_word_of_a_script_without_spaces_matches_as_typed_inside_its_sentence(word, text, span):
    assert word_pattern(word).search(text).span() == span
    assert inflected_pattern(word).search(text).span() == span  # takes no English ending


def test_a_spaceless_match_does_not_cut_a_letter_from_its_combining_mark():
    assert word_pattern("กร").search("กรี") is None  # ี belongs to ร
    assert word_pattern("กร").search("กรม").span() == (0, 2)


@pytest.mark.parametrize(
    ("word", "text"),
    [("wug", "wugwug"), ("wug", "a wug弗"), ("смурф", "смурфик"), ("가나", "가나다")],
)
def test_words_written_with_spaces_still_need_a_word_boundary(word, text):
    assert word_pattern(word).search(text) is None  # Hangul is written with spaces


def test_encode_replaces_a_spaceless_word_inside_its_sentence(tiny_lm):
    nonce = tiny_lm.vocab_size
    ids = tiny_lm.encode("我喜欢弗洛普。弗洛普很好吃", "弗洛普", nonce)
    assert ids.count(nonce) == 2


def test_encode_replaces_each_occurrence_with_one_id(tiny_lm):
    nonce = tiny_lm.vocab_size
    ids = tiny_lm.encode("the wug fed the wug", "wug", nonce)
    assert ids.count(nonce) == 2
    assert ids[0] == tiny_lm.tokenizer.bos_token_id
    assert tiny_lm.encode("the wug", "wug", nonce, bos=False)[0] != tiny_lm.tokenizer.bos_token_id


def test_embed_takes_nonce_rows_from_the_slot_scaled_like_the_lm(tiny_lm):
    slot = random_slot(tiny_lm, 2)
    ids = torch.tensor([[4, tiny_lm.vocab_size + 1, 5]])
    out = tiny_lm.embed(ids, slot)
    assert torch.allclose(out[0, 1], slot.inputs[1] * tiny_lm.embed_scale)
    assert torch.allclose(out[0, 0], tiny_lm.embedding(torch.tensor([4]))[0])


def test_logits_append_one_column_per_nonce_without_copying_the_matrix(tiny_lm):
    slot = random_slot(tiny_lm, 3)
    hidden = torch.randn(5, tiny_lm.dim)
    logits = tiny_lm.logits(hidden, slot)
    assert logits.shape == (5, tiny_lm.vocab_size + 3)
    assert torch.allclose(logits[:, -1], hidden @ slot.outputs[2])
    assert tiny_lm.input_matrix.shape[0] == tiny_lm.vocab_size  # the LM itself is unchanged


def test_fp32_logits_of_a_few_rows_equal_the_output_layers_and_keep_its_gradient(tiny_lm):
    """2-8 rows without a gradient are computed as (W h^T)^T (a faster path on the CPU):
    the same logits but for the order of the sums; with a gradient, the layer itself."""
    g = torch.Generator().manual_seed(0)
    d = tiny_lm.dim
    for shape in ((1, d), (3, d), (2, 4, d), (8, d), (12, d)):
        hidden = torch.randn(*shape, generator=g)
        with torch.no_grad():
            got, expected = tiny_lm.logits(hidden, None), tiny_lm.head(hidden)
        assert got.shape == expected.shape == (*shape[:-1], tiny_lm.vocab_size)
        assert torch.allclose(got, expected, atol=1e-5)
    hidden = torch.randn(3, d, generator=g, requires_grad=True)
    tiny_lm.logits(hidden, None).sum().backward()
    assert hidden.grad is not None and hidden.grad.abs().sum() > 0


def test_each_row_sees_only_its_own_nonce(tiny_lm):
    logits = torch.zeros(2, tiny_lm.vocab_size + 3)
    masked = tiny_lm.own_nonce_only(logits, tiny_lm.vocab_size + 1)
    assert torch.isinf(masked[:, tiny_lm.vocab_size]).all()
    assert torch.isfinite(masked[:, tiny_lm.vocab_size + 1]).all()
    assert torch.isinf(tiny_lm.own_nonce_only(logits, None)[:, tiny_lm.vocab_size :]).all()


def test_generation_masks_the_other_nonces_as_each_row_alone_would(tiny_lm):
    # `_next_logprobs` fills the other rows' nonce columns in one write over the batch;
    # each row must come out as `own_nonce_only` makes it, live rows in any order
    g = torch.Generator().manual_seed(3)
    slot = random_slot(tiny_lm, 3)
    hidden = torch.randn(3, tiny_lm.dim, generator=g)
    v = tiny_lm.vocab_size
    nonce_of_row = [v + 2, None, v, v + 1]  # original rows; row 1 has no nonce of its own
    live = [3, 1, 0]
    with torch.no_grad():
        got = tiny_lm._next_logprobs(hidden, slot, live, None, nonce_of_row)
        logits = tiny_lm.logits(hidden, slot).float()
    for i, row in enumerate(live):
        alone = F.log_softmax(tiny_lm.own_nonce_only(logits[i], nonce_of_row[row]), -1)
        assert torch.equal(torch.isinf(got[i]), torch.isinf(alone))
        assert torch.allclose(got[i], alone, atol=1e-5)


def test_gradients_reach_only_the_slot(tiny_lm):
    slot = random_slot(tiny_lm, 1)
    slot.inputs.requires_grad_(True), slot.outputs.requires_grad_(True)
    seq = tiny_lm.encode("the wug sang at night", "wug", tiny_lm.vocab_size)
    loss = -torch.cat(tiny_lm.token_logprobs([seq], slot)).sum()
    loss.backward()
    assert slot.inputs.grad.abs().sum() > 0 and slot.outputs.grad.abs().sum() > 0
    assert all(p.grad is None for p in tiny_lm.model.parameters())


def test_batched_generation_equals_one_by_one(tiny_lm):
    """Left padding and per-row nonces must not change what each row generates."""
    slot = random_slot(tiny_lm, 3, seed=1)
    v = tiny_lm.vocab_size
    prompts = [
        tiny_lm.encode("the wug is", "wug", v),
        tiny_lm.encode("my daughter fed the wug some bread and the wug sang", "wug", v + 1),
        tiny_lm.encode("wug", "wug", v + 2),
    ]
    rows = [v, v + 1, v + 2]
    batched = tiny_lm.generate(prompts, slot, max_new_tokens=6, nonce_of_row=rows)
    for prompt, row, out in zip(prompts, rows, batched):
        alone = tiny_lm.generate([prompt], slot, max_new_tokens=6, nonce_of_row=[row])[0]
        assert out == alone


def test_score_batched_equals_one_by_one(tiny_lm):
    slot = random_slot(tiny_lm, 2)
    v = tiny_lm.vocab_size
    seqs = [
        tiny_lm.encode("the wug sang", "wug", v),
        tiny_lm.encode("a big wug fed the cat", "wug", v + 1),
    ]
    together = tiny_lm.score(seqs, slot, nonce_of_row=[v, v + 1])
    apart = [tiny_lm.score([s], slot, nonce_of_row=[r])[0] for s, r in zip(seqs, [v, v + 1])]
    assert torch.allclose(torch.tensor(together), torch.tensor(apart), atol=1e-4)


def test_token_tuning_gradients_batched_equal_one_by_one(tiny_lm):
    # token_logprobs reads every row's positions through the output layer in one product;
    # token tuning's gradient on the slot must be the sum of each sentence's own
    v = tiny_lm.vocab_size
    seqs = [
        tiny_lm.encode("the wug sang", "wug", v),
        tiny_lm.encode("a big wug fed the cat and the wug slept", "wug", v),
        tiny_lm.encode("wug", "wug", v),
    ]

    def gradients(groups):
        slot = random_slot(tiny_lm, 1, seed=4)
        slot.inputs.requires_grad_(True), slot.outputs.requires_grad_(True)
        for group in groups:
            logprobs = tiny_lm.token_logprobs(group, slot)
            assert [len(lp) for lp in logprobs] == [len(s) - 1 for s in group]
            (-torch.cat(logprobs).sum()).backward()
        return slot.inputs.grad, slot.outputs.grad

    together, apart = gradients([seqs]), gradients([[s] for s in seqs])
    for a, b in zip(together, apart):
        assert torch.allclose(a, b, atol=1e-5)


def test_decode_prints_nonce_ids_as_their_word(tiny_lm):
    v = tiny_lm.vocab_size
    ids = tiny_lm.encode("the wug sang", "wug", v, bos=False)
    assert "wug" in tiny_lm.decode(ids, {v: "wug"})


def test_rows_that_finish_early_leave_the_batch_without_changing_the_others(tiny_lm):
    slot = random_slot(tiny_lm, 3, seed=2)
    v = tiny_lm.vocab_size
    prompts = [
        tiny_lm.encode("the wug", "wug", v),
        tiny_lm.encode("my daughter fed the wug some bread", "wug", v + 1),
        tiny_lm.encode("a big wug sang at night and the wug", "wug", v + 2),
    ]
    rows = [v, v + 1, v + 2]

    def stop(ids):  # each row stops after a length set by its own first token
        return len(ids) >= 1 + ids[0] % 5

    batched = tiny_lm.generate(prompts, slot, max_new_tokens=8, stop=stop, nonce_of_row=rows)
    alone = [
        tiny_lm.generate([p], slot, max_new_tokens=8, stop=stop, nonce_of_row=[r])[0]
        for p, r in zip(prompts, rows)
    ]
    assert batched == alone
    assert len({len(out) for out in batched}) > 1  # rows really did finish at different steps


def test_mixed_takes_each_texts_rows_weighted_by_their_normalised_beliefs():
    logprobs = torch.log_softmax(torch.randn(4, 7, generator=torch.Generator().manual_seed(0)), -1)
    alone = mixed(logprobs, torch.zeros(4), torch.arange(4), 4)
    assert torch.equal(alone, logprobs)  # one row per text: unchanged
    belief = torch.tensor([0.0, math.log(0.2), math.log(0.6), 5.0])  # rows 0-2 are text 0
    out = mixed(logprobs, belief, torch.tensor([0, 0, 0, 1]), 2)
    weights = torch.tensor([1.0, 0.2, 0.6]) / 1.8
    expected = (weights[:, None] * logprobs[:3].exp()).sum(0).log()
    assert torch.allclose(out[0], expected, atol=1e-6)
    assert torch.allclose(out[1], logprobs[3])
    assert torch.allclose(out.exp().sum(-1), torch.ones(2), atol=1e-5)  # still distributions


def _mixture_prompts(lm):
    v = lm.vocab_size
    return [lm.encode("my daughter fed the wug", "wug", v + i) for i in range(3)] + [
        lm.encode("the wug sang", "wug", v + 3)
    ]


def test_a_mixtures_rows_write_one_text_and_a_sure_reading_writes_its_own():
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm()
    slot = random_slot(lm, 4, seed=3)
    prompts, rows = _mixture_prompts(lm), [lm.vocab_size + i for i in range(4)]
    split = [(0, 0.5), (0, 0.3), (0, 0.2), (1, 1.0)]
    out = lm.generate(prompts, slot, max_new_tokens=6, nonce_of_row=rows, mixture=split)
    assert out[0] == out[1] == out[2]  # the readings of text 0 share every token
    alone = lm.generate(prompts[3:], slot, max_new_tokens=6, nonce_of_row=rows[3:])[0]
    assert out[3] == alone  # a text of one row is generated as without a mixture
    sure = [(0, 1 - 2e-9), (0, 1e-9), (0, 1e-9), (1, 1.0)]
    out = lm.generate(prompts, slot, max_new_tokens=6, nonce_of_row=rows, mixture=sure)
    first = lm.generate(prompts[:1], slot, max_new_tokens=6, nonce_of_row=rows[:1])[0]
    assert out[0] == first  # nearly all the weight on one reading: that reading's text


@pytest.mark.parametrize("finish_after", [1, 3])
def test_a_mixture_finishes_as_one_text(tiny_lm, finish_after):
    slot = random_slot(tiny_lm, 4, seed=4)
    prompts, rows = _mixture_prompts(tiny_lm), [tiny_lm.vocab_size + i for i in range(4)]

    def stop(ids):
        return len(ids) >= finish_after

    split = [(0, 0.4), (0, 0.4), (0, 0.2), (1, 1.0)]
    out = tiny_lm.generate(
        prompts, slot, max_new_tokens=6, stop=stop, nonce_of_row=rows, mixture=split
    )
    assert [len(o) for o in out] == [finish_after] * 4


def test_int8_head_shortlists_and_the_choice_is_made_in_fp32():
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm()  # its own copy: the session's tiny LM stays fp32
    hidden = torch.randn(6, lm.dim)
    slot = NonceSlot(torch.randn(1, lm.dim), torch.randn(1, lm.dim))
    with torch.no_grad():
        exact = lm.logits(hidden, slot)
        lm.use_int8_head(outliers=4, shortlist=3)
        chosen = lm.logits(hidden, slot, choosing=True)
        assert torch.equal(lm.logits(hidden, slot), exact)  # scoring keeps the fp32 layer
    assert chosen.shape == exact.shape
    assert (chosen - exact).abs().max() < 0.05 * exact.abs().max()  # int8 off the shortlist
    top = chosen.topk(3, dim=-1).indices
    assert torch.allclose(chosen.gather(1, top), exact.gather(1, top), atol=1e-5)
    assert torch.equal(chosen.argmax(-1), exact.argmax(-1))
    with torch.enable_grad():  # gradients: the fp32 layer (`exact` summed in another order)
        assert torch.allclose(lm.logits(hidden, slot, choosing=True), exact, atol=1e-5)
    lm.head_int8 = None


def test_int8_head_reads_its_outlier_columns_as_fp16_or_else_fp32(monkeypatch):
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm()
    hidden = torch.randn(6, lm.dim) * 3
    lm.use_int8_head(outliers=4, shortlist=3)
    head = lm.head_int8
    assert head.outlier_half is not None  # fbgemm's fp16 product runs on this CPU
    half_bytes = head.nbytes
    with torch.no_grad():
        halved = head(hidden)
        head.outlier_half = None  # the fp32 columns, as before
        whole = head(hidden)
    assert head.nbytes - half_bytes == head.outlier_cols.numel() * 2
    assert (halved - whole).abs().max() < 1e-2  # fp16 rounding of 4 weights a logit
    assert torch.equal(halved.argmax(-1), whole.argmax(-1))

    def cannot(*args):
        raise RuntimeError("no fp16 here")

    monkeypatch.setattr(torch.ops.quantized, "linear_prepack_fp16", cannot)
    lm.use_int8_head(outliers=4, shortlist=3)
    assert lm.head_int8.outlier_half is None  # a CPU without it reads the fp32 columns
    with torch.no_grad():
        assert torch.allclose(lm.head_int8(hidden), whole)
    lm.head_int8 = None


def test_target_logprobs_take_the_normaliser_from_the_int8_head_when_it_is_on():
    """The reader's right-context scores: exact fp32 without the int8 head (and under a
    gradient); with it, the target's logit exact and the normaliser within rounding."""
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm()
    hidden = torch.randn(5, 3, lm.dim)
    targets = torch.randint(0, lm.vocab_size, (5, 3))
    with torch.no_grad():
        full = torch.log_softmax(lm.logits(hidden, None).float(), dim=-1)
        exact = full.gather(-1, targets[..., None])[..., 0]
        assert torch.allclose(lm.target_logprobs(hidden, targets), exact, atol=1e-6)
        lm.use_int8_head(outliers=4, shortlist=3)
        close = lm.target_logprobs(hidden, targets)
    assert close.shape == (5, 3)
    assert not torch.equal(close, exact)  # the int8 normaliser is in use
    assert (close - exact).abs().max() < 0.05
    with torch.enable_grad():
        assert torch.allclose(lm.target_logprobs(hidden, targets), exact, atol=1e-6)
    lm.head_int8 = None


def fresh_lm_and_two_prompts():
    """A tiny LM of the test's own (kernels get switched on it), two prompts each with
    its own nonce, and their slot."""
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm()
    prompts = [
        lm.encode("the wug sat on", "wug", lm.vocab_size),
        lm.encode("a wug is", "wug", lm.vocab_size + 1),
    ]
    return lm, prompts, random_slot(lm, 2)


def test_greedy_generation_with_the_int8_head_matches_fp32():
    lm, prompts, slot = fresh_lm_and_two_prompts()
    fp32 = lm.generate(
        prompts, slot, max_new_tokens=10, nonce_of_row=[lm.vocab_size, lm.vocab_size + 1]
    )
    lm.use_int8_head(outliers=4, shortlist=8)
    int8 = lm.generate(
        prompts, slot, max_new_tokens=10, nonce_of_row=[lm.vocab_size, lm.vocab_size + 1]
    )
    assert int8 == fp32
    lm.head_int8 = None


def test_int8_head_setting_is_on_unless_turned_off(monkeypatch):
    from backends.settings import load_settings

    monkeypatch.delenv("NONCE_INT8_HEAD", raising=False)
    assert load_settings().int8_head
    monkeypatch.setenv("NONCE_INT8_HEAD", "0")
    assert not load_settings().int8_head


def test_prompts_are_read_in_groups_of_similar_length():
    from backends.nonce_lm import length_groups

    assert length_groups([9, 48, 9, 9, 46, 9]) == [[0, 2, 3, 5], [4, 1]]
    assert length_groups([10, 12, 20]) == [[0, 1, 2]]  # 20 <= 1.5 x 10 + 8
    assert length_groups([5]) == [[0]]


def test_scored_rows_go_through_the_output_layer_in_runs_of_bounded_positions():
    from backends.nonce_lm import consecutive_groups

    assert consecutive_groups([14, 15, 16], 256) == [[0, 1, 2]]  # token tuning's sentences
    assert consecutive_groups([100, 100, 100, 300, 5], 256) == [[0, 1], [2], [3], [4]]
    assert consecutive_groups([], 256) == []


def test_prompts_are_read_in_groups_by_default_on_the_cpu_only(tiny_lm):
    """A GPU reads them as one padded batch (tests/backends/test_gpu.py checks that side)."""
    assert tiny_lm.group_prompts is None and tiny_lm.grouping_prompts()
    tiny_lm.group_prompts = False
    try:
        assert not tiny_lm.grouping_prompts()
    finally:
        tiny_lm.group_prompts = None


def test_grouped_prefill_matches_one_padded_batch(tiny_lm):
    """The joined caches of short and long prompts read apart give the hidden states that
    one padded batch gives."""
    from transformers import DynamicCache

    from backends.nonce_lm import length_groups

    slot = random_slot(tiny_lm, 3, seed=2)
    v = tiny_lm.vocab_size
    prompts = [
        tiny_lm.encode("the wug", "wug", v),
        tiny_lm.encode("my daughter fed the wug some bread and then the wug sang", "wug", v + 1),
        tiny_lm.encode("a wug is", "wug", v + 2),
    ]
    assert len(length_groups([len(p) for p in prompts])) == 2  # read apart
    last, _, mask = tiny_lm.prefill(prompts, slot)
    ids, padded = tiny_lm.pad(prompts, left=True)
    positions = (padded.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        one = tiny_lm.hidden(ids, padded, slot, past=DynamicCache(), positions=positions)
    assert torch.equal(mask, padded)
    assert torch.allclose(last, one.last_hidden_state[:, -1], atol=1e-5)
    # (what the rows then generate: test_batched_generation_equals_one_by_one, whose
    # prompts are read in two groups too)


def test_a_shared_shortlist_normaliser_is_exact_when_it_holds_the_vocabulary():
    """The LM reader's cheap right-context scores: with the whole vocabulary on the
    shortlist they are the full softmax's; with a short one, rows near their mean state
    (whose likely tokens the list holds) stay close, and no score tops 0."""
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm()
    torch.manual_seed(0)
    centre = torch.randn(1, 3, lm.dim)
    hidden = centre + 0.05 * torch.randn(6, 3, lm.dim)  # six readings, three targets
    targets = torch.randint(0, lm.vocab_size, (3,))
    with torch.no_grad():
        exact = lm.target_logprobs(hidden, targets.expand(6, -1))
        whole = lm.shared_target_logprobs(hidden, targets, shortlist=lm.vocab_size)
        short = lm.shared_target_logprobs(hidden, targets, shortlist=lm.vocab_size // 4)
    assert torch.allclose(whole, exact, atol=1e-5)
    assert 1e-4 < (short - exact).abs().max() < 0.05
    far = torch.randn(6, 3, lm.dim) * 3  # rows unlike each other: rough, never above 0
    with torch.no_grad():
        assert (lm.shared_target_logprobs(far, targets, shortlist=4) <= 1e-6).all()


def test_packed_linears_give_the_plain_layers_results_without_a_gradient():
    """oneDNN's packed weights (backends/packed_linear.py): the same products up to float
    rounding for 1 row, a few rows and a prefill; the plain layer whenever a gradient is
    recorded (oneDNN's kernel has none), so token tuning still trains."""
    from tests.conftest import build_tiny_lm

    lm = build_tiny_lm()
    body = [m for m in lm.model.base_model.modules() if isinstance(m, torch.nn.Linear)]
    lm.use_packed_linears()
    assert lm.packed.count == len(body) > 0
    assert lm.packed.nbytes == sum(m.weight.numel() * 4 for m in body)
    layer = body[0]
    for shape in [(1, 1), (3, 1), (2, 17)]:  # decoding's rows, and a prefill
        x = torch.randn(*shape, layer.in_features)
        plain = torch.nn.functional.linear(x, layer.weight, layer.bias)
        with torch.no_grad():
            packed = layer(x)
        assert packed.shape == plain.shape
        assert torch.allclose(packed, plain, atol=1e-5, rtol=1e-4)
    slot = random_slot(lm, 1)
    slot.inputs.requires_grad_(True)
    seq = lm.encode("the wug sang at night", "wug", lm.vocab_size)
    loss = -torch.cat(lm.token_logprobs([seq], slot)).sum()
    loss.backward()  # through the plain layers: would fail through oneDNN's
    assert slot.inputs.grad.abs().sum() > 0


def test_greedy_generation_with_packed_linears_matches_the_plain_layers():
    lm, prompts, slot = fresh_lm_and_two_prompts()
    rows = [lm.vocab_size, lm.vocab_size + 1]
    plain = lm.generate(prompts, slot, max_new_tokens=10, nonce_of_row=rows)
    lm.use_packed_linears()
    assert lm.generate(prompts, slot, max_new_tokens=10, nonce_of_row=rows) == plain
    lm.packed.on = False
    assert lm.generate(prompts, slot, max_new_tokens=10, nonce_of_row=rows) == plain


def test_packed_linears_setting_is_on_unless_turned_off(monkeypatch):
    from backends.settings import load_settings

    monkeypatch.delenv("NONCE_PACKED_LINEARS", raising=False)
    assert load_settings().packed_linears
    monkeypatch.setenv("NONCE_PACKED_LINEARS", "off")
    assert not load_settings().packed_linears


def test_rows_past_the_tokenizers_vocabulary_are_spelt_empty_and_never_offered():
    """An embedding matrix longer than the tokenizer's vocabulary (padded rows, or a
    conversion that dropped tokens: an H200's transformers 5.17 gave Gemma 3 so) has rows
    the tokenizer spells None; every vocabulary scan reads them as "" rather than failing."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    from backends.definitions import define
    from backends.inputs import Example
    from backends.learners.centroid import CentroidLearner
    from backends.learners.lm_reader import word_tokens
    from backends.neighbours import VocabularyIndex
    from backends.nonce_lm import NonceLM
    from tests.conftest import TINY_LM_SHAPE, tiny_tokenizer

    torch.manual_seed(0)
    tokenizer, padding = tiny_tokenizer(), 8
    config = Gemma3TextConfig(
        vocab_size=len(tokenizer) + padding,
        head_dim=16,
        max_position_embeddings=128,
        sliding_window=16,
        **TINY_LM_SHAPE,
    )
    lm = NonceLM(Gemma3ForCausalLM(config).eval().requires_grad_(False), tokenizer, "padded")
    assert tokenizer.convert_ids_to_tokens(lm.vocab_size - 1) is None

    pieces = lm.pieces()
    assert len(pieces) == lm.vocab_size and pieces[-padding:] == [""] * padding
    padded = set(range(len(tokenizer), lm.vocab_size))
    assert not padded & set(VocabularyIndex(lm, "input").ids.tolist())
    assert not word_tokens(lm)[len(tokenizer) :].any()
    assert lm.token_forms() is not None and lm.unwritable_ids().numel() >= 0
    emb = CentroidLearner().learn(lm, "wug", [Example("the wug sat on the mat .")])
    assert len(define(lm, [emb], max_new_tokens=4)) == 1
