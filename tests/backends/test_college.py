"""CoLLEGe generator mechanics on tiny random models; one integration test on the shipped asset."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

from backends.inputs import Example
from backends.learners.college import (
    CLASS_PROBES,
    DEFAULT_PATH,
    CollegeConfig,
    CollegeGenerator,
    CollegeLearner,
    ConceptState,
    GeneratorConfig,
    examples_prefix,
    read_as_note,
    reading_record,
    sure_band,
)
from training.college_losses import regression_loss


class TinyTokenizer:
    """Whitespace tokenizer over a growing vocabulary, with a mask token."""

    mask_token = "[MASK]"

    def __init__(self):
        self.vocab = {"[PAD]": 0, "[MASK]": 1}

    def __call__(self, texts, padding, truncation, max_length, return_tensors):
        rows = [
            [self.vocab.setdefault(w, len(self.vocab)) for w in t.split()][:max_length]
            for t in texts
        ]
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        return _Batch(input_ids=ids, attention_mask=mask)


class _Batch(dict):
    def to(self, device):
        return self


class TinyEncoder(torch.nn.Module):
    """A frozen embedding table standing in for the masked-LM encoder."""

    def __init__(self, d: int):
        super().__init__()
        self.table = torch.nn.Embedding(200, d)
        self.device = torch.device("cpu")

    def forward(self, input_ids, attention_mask):
        return type("Out", (), {"last_hidden_state": self.table(input_ids)})


@pytest.fixture
def tiny():
    torch.manual_seed(0)
    cfg = GeneratorConfig(d_enc=16, d_lm=24, n_heads=2, d_ff=32, norm_in=1.5, norm_out=0.7)
    return CollegeGenerator(cfg).eval(), TinyEncoder(16).requires_grad_(False), TinyTokenizer()


SENTENCES = ["the wug sat on a fence", "a wug sang at dawn", "two wugs ate the seeds"]


def test_running_mean_equals_batch(tiny):
    generator, encoder, tokenizer = tiny
    together = ConceptState(generator, encoder, tokenizer, "wug").add(SENTENCES).embedding()
    state = ConceptState(generator, encoder, tokenizer, "wug")
    for sentence in SENTENCES:
        state.add([sentence])
    apart = state.embedding()
    for a, b in zip(together, apart):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_word_is_masked(tiny):
    generator, encoder, tokenizer = tiny
    ConceptState(generator, encoder, tokenizer, "wug").add(SENTENCES)
    assert "wug" not in tokenizer.vocab and "wugs" not in tokenizer.vocab
    assert "[MASK]s" in tokenizer.vocab  # the inflection stays, as on the LM side


def test_save_load_round_trip(tiny, tmp_path):
    generator, encoder, tokenizer = tiny
    generator.save(tmp_path, fp16=False)
    loaded = CollegeGenerator.load(tmp_path)
    assert loaded.config == generator.config
    a = ConceptState(generator, encoder, tokenizer, "wug").add(SENTENCES).embedding()
    b = ConceptState(loaded, encoder, tokenizer, "wug").add(SENTENCES).embedding()
    torch.testing.assert_close(a, b)


def test_head_norms_match_lm_after_calibration(tiny):
    generator, *_ = tiny
    features, mask = torch.randn(256, 7, 16), torch.ones(256, 7, dtype=torch.bool)
    generator.calibrate_heads(features, mask)
    with torch.no_grad():
        vin, vout = generator(features, mask, torch.arange(256), 256)
    assert vin.norm(dim=-1).mean() == pytest.approx(1.5, rel=0.15)
    assert vout.norm(dim=-1).mean() == pytest.approx(0.7, rel=0.15)


@pytest.mark.parametrize("fixed_in, fixed_out", [(True, False), (False, True), (True, True)])
def test_fixed_length_keeps_direction_and_sets_norm(tiny, fixed_in, fixed_out):
    generator, encoder, tokenizer = tiny
    free = ConceptState(generator, encoder, tokenizer, "wug").add(SENTENCES).embedding()
    config = replace(generator.config, fixed_length_in=fixed_in, fixed_length_out=fixed_out)
    fixed_gen = CollegeGenerator(config).eval()
    fixed_gen.load_state_dict(generator.state_dict())
    state = ConceptState(fixed_gen, encoder, tokenizer, "wug").add(SENTENCES[:1])
    one = state.embedding()
    fixed = state.add(SENTENCES[1:]).embedding()  # still a running mean, then the length
    for v, is_fixed, target in zip(fixed + one, (fixed_in, fixed_out) * 2, (1.5, 0.7) * 2):
        if is_fixed:
            assert float(v.norm()) == pytest.approx(target, rel=1e-5)
    for v, w, is_fixed in zip(free, fixed, (fixed_in, fixed_out)):
        if is_fixed:  # the direction is the head's, untouched
            assert float(torch.cosine_similarity(v, w, dim=0)) == pytest.approx(1.0, abs=1e-5)
            assert float(v.norm()) != pytest.approx(float(w.norm()), rel=1e-3)  # it did rescale
        else:  # a head left free is exactly as before
            torch.testing.assert_close(v, w)


def test_training_step_lowers_loss(tiny):
    generator, *_ = tiny
    generator.train()
    torch.manual_seed(1)
    features, mask = torch.randn(8, 5, 16), torch.ones(8, 5, dtype=torch.bool)
    target = torch.randn(8, 24)
    optimizer = torch.optim.AdamW(generator.parameters(), lr=1e-3, weight_decay=0.1)

    def loss():
        vin, vout = generator(features, mask, torch.arange(8), 8)
        return regression_loss(vin, target, 1.5) + regression_loss(vout, target, 0.7)

    generator.eval()
    with torch.no_grad():
        before = float(loss())
    generator.train()
    for _ in range(5):
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()
    generator.eval()
    with torch.no_grad():
        assert float(loss()) < before


def test_examples_prefix_layouts():
    examples = [Example("A wug sang. "), Example("Two wugs flew.")]
    assert examples_prefix(examples, "off") == ""
    assert examples_prefix(examples, "lines") == "A wug sang.\nTwo wugs flew.\n"
    assert examples_prefix(examples, "paragraph") == "A wug sang. Two wugs flew.\n"
    quoted = 'Examples: "A wug sang."; "Two wugs flew.".\n'
    assert examples_prefix(examples, "quoted") == quoted


def test_unknown_prompt_layout_is_refused():
    with pytest.raises(ValueError, match="examples_in_prompt='columns'"):
        CollegeConfig(examples_in_prompt="columns")
    with pytest.raises(ValueError, match="common_directions=33: choose 0..32"):
        CollegeConfig(common_directions=33)


def test_missing_asset_names_the_training_command(tmp_path):
    with pytest.raises(RuntimeError, match="python -m training.college"):
        CollegeLearner.from_pretrained(tmp_path / "nothing-here")


def test_an_lm_the_generator_was_not_trained_for_is_refused_before_any_learner_runs(
    tiny_lm, monkeypatch
):
    import backends.pipeline
    from backends.learners.centroid import CentroidLearner

    monkeypatch.setattr(backends.pipeline, "load_lm", lambda *a, **k: tiny_lm)
    ran = []
    monkeypatch.setattr(CentroidLearner, "_learn", lambda *a: ran.append(a))
    with pytest.raises(ValueError, match="trained for 'gemma-3-270m'.*or leave college out"):
        backends.pipeline.learn("wug", ["A wug sat."], ["centroid", "college"])
    assert ran == []  # refused at once, not after the other learners' seconds


def test_a_learner_takes_plain_sentences_and_checks_them(tiny_lm):
    from backends.learners.centroid import CentroidLearner

    learned = CentroidLearner().learn(tiny_lm, "wug", ["A wug sat."])
    assert learned.input_vector.shape == (tiny_lm.dim,)
    assert torch.equal(
        learned.input_vector, CentroidLearner().learn(tiny_lm, "wug", "A wug sat.").input_vector
    )
    with pytest.raises(ValueError, match="does not contain the word 'wug'"):
        CentroidLearner().learn(tiny_lm, "wug", ["No such word."])


@pytest.mark.integration
def test_shipped_generator_learns_wug():
    from backends.learners.base import mean_norms
    from backends.pipeline import load_lm

    lm = load_lm(device="cpu")
    learner = CollegeLearner.from_pretrained(DEFAULT_PATH)
    examples = [Example("A wug sat on the fence and sang."), Example("The wugs flew south.")]
    embedding = learner.learn(lm, "wug", examples)
    assert embedding.input_vector.shape == (lm.dim,)
    assert embedding.output_vector.shape == (lm.dim,)
    norm_in, norm_out = mean_norms(lm)
    # the shipped generator writes both vectors at the length of Gemma's rows
    assert float(embedding.input_vector.norm()) == pytest.approx(norm_in, rel=1e-4)
    assert float(embedding.output_vector.norm()) == pytest.approx(norm_out, rel=1e-4)
    # the examples also go in front of the definition prompt, one paragraph
    assert embedding.prompt_prefix == "A wug sat on the fence and sang. The wugs flew south.\n"
    # shipped: the definition is written from one reading of the word's lexemes, at the
    # generator's lengths; read form by form, it is the vectors' own
    [(weight, vin, vout)] = embedding.readings
    assert weight == 1.0 and float(vin.norm()) == pytest.approx(norm_in, rel=1e-4)
    forms = CollegeConfig(define_lexemes=False, fitted_from=0, linear_head_weight=0)
    assert CollegeLearner(forms).learn(lm, "wug", examples).readings == []
    # readings asked for: the heaviest words, their weights renormalised, each at the
    # generator's lengths (what the learner writes when the LM reads that word alone)
    config = CollegeConfig(define_readings=3, reading_least=0.0)
    split = CollegeLearner(config).learn(lm, "wug", examples)
    assert len(split.readings) == 3
    assert sum(w for w, _, _ in split.readings) == pytest.approx(1.0)
    for _, vin, vout in split.readings:
        assert float(vin.norm()) == pytest.approx(norm_in, rel=1e-4)
        assert float(vout.norm()) == pytest.approx(norm_out, rel=1e-4)
    assert torch.equal(split.input_vector, embedding.input_vector)  # the vectors do not change
    # the card says what the LM read the word as, heaviest first
    read_as = embedding.info["read_as"]
    assert read_as and all(isinstance(w, str) and 0 < p <= 1 for w, p in read_as)
    assert [p for _, p in read_as] == sorted((p for _, p in read_as), reverse=True)
    assert embedding.info["word_class"] == "a noun"  # "A wug sat on the fence and sang."
    record = embedding.info["read_record"]  # how often readings as sure were right
    then = [w for w in embedding.info["read_words"] if w not in dict(read_as)][:4]
    assert embedding.info["note"] == read_as_note(read_as, "a noun", record, then)
    assert embedding.probe == ""
    weighed = embedding.info["read_words"]  # every word weighed, the heaviest first
    assert weighed[: len(read_as)] == [w for w, _ in read_as] and len(set(weighed)) == len(weighed)
    assert embedding.info["reader_weights"] == "hand-set"  # two examples
    # from three examples up the definition is written from the fitted reading's vector
    # (one entry at the generator's lengths); the vectors stay the hand-set reading's
    three = [*examples, Example("A wug built its nest in the hedge.")]
    fitted = learner.learn(lm, "wug", three)
    hand = CollegeLearner(forms).learn(lm, "wug", three)  # no fitted weights, nor the head
    headed = replace(forms, linear_head_weight=CollegeConfig().linear_head_weight)
    assert torch.equal(
        fitted.input_vector, CollegeLearner(headed).learn(lm, "wug", three).input_vector
    )
    assert hand.readings == []
    [(weight, vin, vout)] = fitted.readings
    assert weight == 1.0 and not torch.equal(vin, fitted.input_vector)
    assert float(vin.norm()) == pytest.approx(norm_in, rel=1e-4)
    assert float(vout.norm()) == pytest.approx(norm_out, rel=1e-4)
    assert (fitted.info["reader_weights"], hand.info["reader_weights"]) == ("fitted", "hand-set")


@pytest.mark.integration
def test_a_word_used_as_a_verb_or_an_adjective_is_defined_as_one(real_lm):
    from backends.definitions import define

    learner = CollegeLearner()
    # read as "cry", the word was defined with CoLLEGe's probe as "a cry."
    sentences = [
        "The baby was sproking because she was hungry.",
        "He sproked when he heard the sad news.",
        "Tears ran down her face as she sproked.",
    ]
    verb = learner.learn(real_lm, "sproke", [Example(t) for t in sentences])
    assert verb.info["word_class"] == "a verb" and verb.probe == CLASS_PROBES["v"]
    named, plain = define(real_lm, [verb, replace(verb, probe="")])
    assert named.text.lstrip('"').startswith("to "), named.text
    assert not plain.text.lstrip('"').startswith("to "), plain.text
    sentences = ["The test was so snerk that everyone passed.", "This puzzle is too snerk."]
    adjective = learner.learn(real_lm, "snerk", [Example(t) for t in sentences])
    assert adjective.info["word_class"] == "an adjective" and adjective.probe == CLASS_PROBES["a"]
    assert "(an adjective)" in adjective.info["note"]


def test_the_examples_syntax_keeps_a_noun_from_the_verb_probe(real_lm):
    # read as "flash", mostly a verb by WordNet's counts; "a blick", "the blick": a noun
    sentences = [
        "A blick of lightning lit up the sky.",
        "The storm brought thunder and blicks of light.",
        "We counted the seconds between the blick and the thunder.",
    ]
    examples = [Example(t) for t in sentences]
    framed = CollegeLearner().learn(real_lm, "blick", examples)
    assert framed.info["read_as"][0][0] == "flash"
    assert framed.info["word_class"] == "a noun" and framed.probe == ""
    unframed = CollegeLearner(CollegeConfig(class_frames=False)).learn(real_lm, "blick", examples)
    assert unframed.info["word_class"] == "a verb" and unframed.probe == CLASS_PROBES["v"]


def test_a_word_used_as_an_adverb_is_defined_as_one(real_lm):
    # read as "softly", it was taken for a verb by the verbs in the reading's tail, and
    # "She zimbly opened" (a subject pronoun before it) left the verb in
    sentences = [
        "She zimbly opened the door so as not to wake the baby.",
        "He walked zimbly across the creaky floor.",
    ]
    adverb = CollegeLearner().learn(real_lm, "zimbly", [Example(t) for t in sentences])
    assert adverb.info["read_as"][0][0] in {"softly", "quietly", "slowly", "gently"}
    assert adverb.info["word_class"] == "an adverb" and adverb.probe == CLASS_PROBES["r"]
    assert "(an adverb)" in adverb.info["note"]


def test_a_definition_reads_the_word_as_one_lexeme_in_all_its_forms(real_lm):
    # "birds" fits the first example and "bird" the second; "group" fits both as one form
    sentences = ["The wugs were singing in the trees at dawn.", "A small wug built its nest."]
    examples = [Example(t) for t in sentences]
    lexemes = CollegeLearner().learn(real_lm, "wug", examples)
    assert lexemes.info["read_as"][0][0] == "bird"
    forms = CollegeLearner(CollegeConfig(define_lexemes=False)).learn(real_lm, "wug", examples)
    assert forms.info["read_as"][0][0] != "bird"
    # the vectors' reading is the same either way
    assert torch.equal(lexemes.input_vector, forms.input_vector)


def test_read_as_note():
    assert read_as_note([("anvil", 0.974), ("forge", 0.02)]) == "read as: anvil 97%, forge 2%"
    assert read_as_note([("cry", 1.0)], "a verb") == "read as: cry 100% (a verb)"
    assert read_as_note([("cry", 1.0)], "a verb", (26, 44, 3)) == (
        "read as: cry 100% (a verb); readings this sure from 3 sentences were the word itself"
        " 26 times in 44 (words no benchmark uses)"
    )
    assert read_as_note([("cry", 1.0)], "a verb", None, ["sob", "weep"]) == (
        "read as: cry 100% (a verb); then: sob, weep"
    )


def test_how_often_a_reading_as_sure_was_right():
    table = {"by_k": {"1": [[5, 0], [4, 1], [0, 0], [2, 1]], "3": [[0, 0], [1, 0], [3, 1], [9, 6]]}}
    assert sure_band(0.3) == 0 and sure_band(0.5) == 1 and sure_band(0.99) == 3
    assert reading_record(table, 1, 0.6) == (1, 4, 1)
    assert reading_record(table, 1, 0.95) is None  # nothing that sure was read from one
    assert reading_record(table, 3, 1.0) == (6, 9, 3)
    assert reading_record(table, 5, 0.999) == (6, 9, 3)  # past the largest k measured: its
    assert reading_record(table, 2, 1.0) is None  # a k the table skipped


def test_a_generator_folder_without_a_calibration_table_says_nothing_of_it(tmp_path):
    assert CollegeLearner(CollegeConfig(path=tmp_path)).calibration == {}
    assert CollegeLearner().calibration["by_k"]  # the shipped folder has one


def test_the_shipped_calibration_counts_what_its_readings_say():
    # the table beside the generator is the count of the readings it keeps, per k and band
    from backends.learners.college import READING_CALIBRATION, SURE_EDGES

    shipped = json.loads((DEFAULT_PATH / READING_CALIBRATION).read_text(encoding="utf-8"))
    assert shipped["edges"] == list(SURE_EDGES)
    counted = {k: [[0, 0] for _ in range(len(SURE_EDGES) + 1)] for k in shipped["by_k"]}
    for r in shipped["readings"]:
        cell = counted[str(r["k"])][sure_band(r["weight"])]
        cell[0], cell[1] = cell[0] + 1, cell[1] + r["right"]
    assert counted == shipped["by_k"] and sum(n for n, _ in counted["3"]) >= 100
    # and none of its words is an evaluation word
    from backends.shared_data import excluded_words
    from training.corpus import is_excluded

    excluded = frozenset(excluded_words())
    assert not [r["word"] for r in shipped["readings"] if is_excluded(r["word"], excluded)]


def test_definitions_of_three_examples_or_more_are_read_with_the_fitted_weights(tmp_path, caplog):
    from backends.learners.college import READER_WEIGHTS
    from backends.learners.lm_reader import FEATURES, ReaderConfig

    shipped = json.loads((DEFAULT_PATH / READER_WEIGHTS).read_text(encoding="utf-8"))
    assert shipped["features"] == list(FEATURES)  # the trainer's file, in the reader's order
    learner = CollegeLearner()
    hand, fitted = learner.defining_reader(2), learner.defining_reader(3)
    lexemes = replace(ReaderConfig(), pool_forms=True)  # the definition reads lexemes
    assert hand == lexemes and learner.defining_reader(6) == fitted
    weights = tuple(shipped["weights"])
    assert fitted == replace(lexemes, weights=weights, temperature=1.0, from_score=64)
    # with define_from_score 0 the fitted reading weighs only the words the others do
    alone = CollegeLearner(CollegeConfig(define_from_score=0)).defining_reader(3)
    assert alone == replace(lexemes, weights=weights, temperature=1.0)
    # never with fitted_from 0; a reader given its own weights keeps them
    assert CollegeLearner(CollegeConfig(fitted_from=0)).defining_reader(3) == lexemes
    own = replace(ReaderConfig(), weights=(1.0,) * len(FEATURES))
    assert CollegeLearner(CollegeConfig(reader=own)).defining_reader(3) == replace(
        own, pool_forms=True
    )
    forms = CollegeConfig(fitted_from=0, define_lexemes=False)
    assert CollegeLearner(forms).defining_reader(3) == ReaderConfig()
    # a generator folder without the file reads with the hand-set weights, and says so
    assert CollegeLearner(CollegeConfig(path=tmp_path)).defining_reader(3) == lexemes
    assert READER_WEIGHTS in caplog.text
