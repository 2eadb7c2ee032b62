"""Each task's scoring on hand-made cases, with tiny fakes or a tiny random LM."""

import math

import numpy as np
import pytest
import torch

from backends.learners import NonceEmbedding
from backends.reference import cosines, normalise, rank_among_lemmas, reference_vectors
from benchmarks import metrics
from benchmarks.bertscore import greedy_f1
from benchmarks.cloze import pick, sentence_rows, sentence_scores
from benchmarks.defgen import Sample, Verdict, judge, read_rank, reading_scores
from benchmarks.word_tasks import chimera_level, chimera_rho, gold_rank, nanmean

# --- chimera ----------------------------------------------------------------------------


def test_chimera_perfect_ranking_gives_rho_one():
    assert chimera_rho([0.9, 0.5, 0.1, 0.3], [5.0, 4.0, 1.0, 2.0]) == pytest.approx(1.0)
    assert chimera_rho([0.1, 0.5, 0.9], [5.0, 4.0, 1.0]) == pytest.approx(-1.0)


def test_chimera_mean_skips_undefined_items():
    rho_constant = chimera_rho([0.2, 0.2, 0.2], [1.0, 2.0, 3.0])
    assert math.isnan(rho_constant)
    assert nanmean([1.0, rho_constant, 0.0]) == (0.5, 2)


def test_chimera_level_from_file_name(tmp_path):
    assert chimera_level(tmp_path / "chimeras.dataset.l4.tokenised.train.txt", []) == 4


def test_cosines_against_hand_worked_vectors():
    matrix = np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]], dtype=np.float32)
    assert cosines(torch.tensor([2.0, 0.0]), matrix) == pytest.approx([1.0, 0.0, -1.0])


# --- definitional nonce -----------------------------------------------------------------


def test_gold_ranked_third_gives_reciprocal_rank_one_third():
    sims = np.array([0.1, 0.9, 0.5, 0.7, 0.2])  # gold = row 2; rows 1 and 3 beat it
    rank = gold_rank(sims, 2)
    assert rank == 3
    assert metrics.reciprocal_rank(rank) == pytest.approx(1 / 3)
    others = [s for i, s in enumerate(sims) if i != 2]
    assert rank == metrics.rank_of(sims[2], others)


def test_reference_vector_is_mean_of_word_tokens(tiny_lm):
    ids = tiny_lm.tokenizer(" unbelievable", add_special_tokens=False)["input_ids"]
    expected = tiny_lm.input_matrix[ids].mean(0).numpy()
    got = reference_vectors(tiny_lm, ["unbelievable", "cat"])
    assert got.shape == (2, tiny_lm.dim)
    assert got[0] == pytest.approx(expected, abs=1e-6)
    assert np.linalg.norm(normalise(got), axis=1) == pytest.approx([1.0, 1.0])


def test_a_word_ranks_first_by_its_own_reference_vector_and_lower_by_another(tiny_lm):
    from backends.lexicon import single_word_lemmas

    bird, cat = (torch.from_numpy(v) for v in reference_vectors(tiny_lm, ["bird", "cat"]))
    ranks, among = rank_among_lemmas(tiny_lm, [bird, cat, 3 * bird], "Bird", bird.numpy())
    assert ranks[0] == ranks[2] == 1  # none nearer; a cosine does not see the length
    assert ranks[1] >= 2  # "cat" itself is nearer the cat's vector than "bird" is
    assert among == len(single_word_lemmas())  # "bird" is one of them, not counted twice


# --- defgen / bertscore / tournament -----------------------------------------------------


def test_bertscore_of_identical_strings_is_one(tiny_scorer):
    text = "a small bird that sings at dawn"
    assert tiny_scorer.f1([text], [text]) == [pytest.approx(1.0, abs=1e-5)]
    different = tiny_scorer.f1([text], ["an engine part made of steel"])[0]
    assert different < 1.0


def test_greedy_f1_hand_worked():
    ref = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    cand = torch.tensor([[1.0, 0.0]])
    # precision: the candidate token matches perfectly (1); recall: (1 + 0) / 2
    assert greedy_f1(ref, cand) == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert greedy_f1(ref, torch.zeros(0, 2)) == 0.0


@pytest.mark.parametrize(
    ("a", "b", "verdict"),
    [
        (Verdict(0.10, False), Verdict(0.00, False), "a"),
        (Verdict(-0.2, False), Verdict(0.05, False), "b"),
        (Verdict(0.105, False), Verdict(0.10, False), "tie"),
        (Verdict(0.30, True), Verdict(-0.5, False), "b"),  # a loop loses to anything usable
        (Verdict(0.30, True), Verdict(0.30, True), "both_bad"),
    ],
)
def test_judge_prefers_usable_then_identifiable(a, b, verdict):
    assert judge(a, b, tie_margin=0.01) == verdict


def test_the_tournament_judges_a_battle_with_the_real_word_masked(tiny_scorer):
    from benchmarks.defgen import battle_verdicts

    references = ["a heavy iron block to hammer metal on", "a small bird", "a cold drink"]
    refs = tiny_scorer.sentence_vectors(references)
    # naming the word is not a margin of its own: masked, the two texts are the same
    texts = ["an anvil, a heavy block", "an dax, a heavy block"]
    named, unnamed = battle_verdicts(tiny_scorer, refs, 0, [1, 2], texts, "anvil", "dax", "xx")
    assert named.margin == pytest.approx(unnamed.margin)
    assert judge(named, unnamed, tie_margin=0.01) == "tie"
    unmasked = battle_verdicts(tiny_scorer, refs, 0, [1, 2], texts, None, "dax", "xx")
    assert unmasked[0].margin != pytest.approx(named.margin)  # the mask is what made them equal
    # ... and a side saying its own word is degenerate: the oracle its real word, a
    # learner the made-up one (the tournament's `said`)
    oracle, learner = battle_verdicts(
        tiny_scorer, refs, 0, [1, 2], ["an anvil", "an anvil"], "anvil", "dax", ["anvil", "dax"]
    )
    assert oracle.degenerate and not learner.degenerate


def test_reading_scores_split_identification_by_what_the_lm_read():
    def sample(word, read_as, identified):
        s = Sample(0, word, 3, "college", "a thing", "a thing", read_as=read_as)
        s.scores = {"identified": identified}
        return s

    group = [
        sample("anvil", [["anvil", 0.9], ["forge", 0.1]], 1.0),
        sample("Mind", [["mind", 1.0]], 0.0),  # case does not matter
        sample("strangle", [["choke", 0.8], ["strangle", 0.2]], 1.0),  # first counts
        sample("bold", [], 0.0),  # nothing read
    ]
    assert reading_scores(group) == {
        "read_first": 0.5,
        "identified_read_first": 0.5,
        "identified_read_other": 0.5,
    }
    assert reading_scores([sample("anvil", None, 1.0)]) == {}  # a learner that does not say
    # with the real word's place among every word weighed: how often it was near the top
    for s, words in zip(
        group, (["anvil"], ["mind"], ["choke", "x", "y", "z", "q", "strangle"], [])
    ):
        s.read_rank = read_rank(words, s.word)
    assert [s.read_rank for s in group] == [0, 0, 5, -1]
    scores = reading_scores(group)
    assert (scores["read_top5"], scores["read_weighed"]) == (0.5, 0.75)
    assert group[2].record()["read_rank"] == 5 and read_rank(None, "anvil") is None
    assert group[0].record()["read_as"] == [["anvil", 0.9], ["forge", 0.1]]
    assert "read_as" not in sample("anvil", None, 1.0).record()


def test_sentence_vectors_are_unit_mean_pooled_token_embeddings(tiny_scorer):
    refs = ["a small bird that sings at dawn", "an engine part made of steel"]
    vectors = tiny_scorer.sentence_vectors([*refs, ""])
    assert torch.allclose(vectors[:2].norm(dim=-1), torch.ones(2), atol=1e-5)
    assert float(vectors[2].norm()) == 0.0  # an empty definition matches nothing
    pooled = torch.nn.functional.normalize(tiny_scorer.embed(refs[:1])[0].mean(0), dim=0)
    assert torch.allclose(vectors[0], pooled, atol=1e-6)


# --- cloze -------------------------------------------------------------------------------


def test_pick_takes_the_higher_score_first_on_ties():
    assert pick([-12.0, -3.5, -7.0]) == 1
    assert pick([-1.0, -1.0]) == 0


def _embedding(lm, word, seed, prefix=""):
    generator = torch.Generator().manual_seed(seed)
    vin, vout = torch.randn(lm.dim, generator=generator), torch.randn(lm.dim, generator=generator)
    return NonceEmbedding("fake", word, vin, vout, prompt_prefix=prefix)


def test_cloze_batch_equals_each_candidate_alone(tiny_lm):
    sentence = "the cat sat on the ___ all day"
    embeddings = [_embedding(tiny_lm, w, i) for i, w in enumerate(["dax", "wug", "fep"])]
    batched = sentence_scores(tiny_lm, sentence, embeddings)
    alone = [sentence_scores(tiny_lm, sentence, [e])[0] for e in embeddings]
    assert batched == pytest.approx(alone, abs=1e-4)  # row r sees only its own word
    assert pick(batched) == int(np.argmax(alone))


def test_cloze_picks_the_candidate_whose_word_the_lm_expects(tiny_lm):
    sentence = "the cat sat on the ___"
    plain = [_embedding(tiny_lm, w, i) for i, w in enumerate(["dax", "wug"])]
    # "dax" gets an output vector against the hidden state that predicts the blank (its
    # logit there is very negative), "wug" a zero one (an ordinary, unremarkable logit).
    rows, _ = sentence_rows(tiny_lm, sentence, plain)
    ids, mask = tiny_lm.pad(rows[1:], left=False)
    hidden = tiny_lm.hidden(ids, mask, None).last_hidden_state[0]
    blank = rows[1].index(tiny_lm.vocab_size + 1) - 1  # the position predicting the word
    plain[0].output_vector = -50 * hidden[blank] / hidden[blank].norm()
    plain[1].output_vector = torch.zeros(tiny_lm.dim)
    assert pick(sentence_scores(tiny_lm, sentence, plain)) == 1


def test_a_cloze_sentence_reads_the_word_as_its_one_reading(tiny_lm):
    """college's input vector also blends the linear head's reading (for the word-vector
    tasks); a filled sentence reads the word as its definition does, its one reading."""
    from dataclasses import replace

    from benchmarks.cloze import as_read_in_text

    sentence = "the cat sat on the ___"
    read = _embedding(tiny_lm, "dax", 1)
    blended = replace(
        _embedding(tiny_lm, "dax", 2), readings=[(1.0, read.input_vector, read.output_vector)]
    )
    assert sentence_scores(tiny_lm, sentence, [blended]) == sentence_scores(
        tiny_lm, sentence, [read]
    )
    plain = _embedding(tiny_lm, "dax", 3)  # no reading: its vectors
    assert as_read_in_text(plain) is plain
    mixed = replace(plain, readings=[(0.5, read.input_vector, read.output_vector)] * 2)
    assert as_read_in_text(mixed) is mixed  # a mixture of readings: its vectors too


def test_cloze_counts_only_the_sentence_tokens(tiny_lm):
    sentence = "the ___ barked"
    with_prefix = _embedding(tiny_lm, "dax", 0, prefix="a dax is a dog\n")
    rows, lengths = sentence_rows(tiny_lm, sentence, [with_prefix])
    body = tiny_lm.encode("the dax barked", "dax", tiny_lm.vocab_size, bos=False)
    assert lengths == [len(body)]
    assert rows[0][-len(body) :] == body


def test_names_word_and_masked_read_its_inflections_whole():
    assert metrics.names_word('"to bruise" or "to cause pain"', "bruise")
    assert metrics.names_word("Bruised skin.", "bruise")  # case and a regular ending
    assert not metrics.names_word("a mark on the skin, abruise", "bruise")  # part of a word
    # a real word's forms are English's regular ones: card is not car + d, cares not car + es
    assert metrics.names_word("Two cars and a carer.", "car")
    assert not metrics.names_word("a card, or what one cares for", "car")
    assert metrics.masked("cars and cards", "car", "dax") == "dax and cards"
    assert metrics.names_word('"to be occurring"', "occur")  # a stressed last syllable
    assert (
        metrics.masked('a "mind" or the minds of men', "mind", "dax") == 'a "dax" or the dax of men'
    )
    assert metrics.masked("a mark on the skin", "bruise", "dax") == "a mark on the skin"


def test_score_samples_masks_the_real_word_for_every_learner(tiny_scorer):
    from benchmarks.defgen import ORACLE, score_samples

    references = ["a heavy iron block to hammer metal on", "a small bird", "a cold drink"]
    samples = [
        Sample(0, "anvil", 3, "college", "an anvil, a heavy block of iron", references[0]),
        Sample(0, "anvil", 3, ORACLE, "a heavy block of iron", references[0]),
        Sample(1, "finch", 3, "centroid", "a small bird", references[1]),
    ]
    score_samples(samples, references, tiny_scorer, seed=0)
    assert [s.scores["names_word"] for s in samples] == [1.0, 0.0, 0.0]
    masked = [Sample(0, "anvil", 3, "college", "an dax, a heavy block of iron", references[0])]
    score_samples(masked, references, tiny_scorer, seed=0)
    # the named definition's masked score is the masked text's own identification
    assert samples[0].scores["identified_masked"] == masked[0].scores["identified"]
    for s in samples[1:]:  # nothing to mask: the same as identified
        assert s.scores["identified_masked"] == s.scores["identified"]


def test_the_in_context_oracle_reads_the_examples_with_the_real_word_before_the_probe(
    monkeypatch,
):
    from types import SimpleNamespace

    from backends.definitions import PROMPT
    from backends.learners.base import Example
    from backends.learners.college import CollegeConfig, examples_prefix
    from benchmarks import defgen
    from benchmarks.runs import RunOptions

    asked = []

    def fake_define_known(lm, words, max_new_tokens=32, prompt=PROMPT, prefix=""):
        asked.append(prefix + prompt.format(word=words[0]))
        return [SimpleNamespace(text=" a block of iron.")]

    monkeypatch.setattr(defgen, "define_known", fake_define_known)
    texts = ["He struck the <nonce> {twice}.", "The <nonce> rang."]
    said = defgen.define_in_context(None, "anvil", texts, RunOptions(data=(), learners=()))
    assert said == " a block of iron."
    filled = [Example("He struck the anvil {twice}."), Example("The anvil rang.")]
    layout = CollegeConfig().examples_in_prompt
    assert asked == [examples_prefix(filled, layout) + PROMPT.format(word="anvil")]


def test_the_tournaments_in_context_oracle_reads_the_battles_k_examples(monkeypatch):
    from types import SimpleNamespace

    from benchmarks import data, defgen
    from benchmarks.runs import RunOptions

    read = []

    def fake_define_in_context(lm, word, texts, options):
        read.append((word, list(texts)))
        return " a block of iron. It rings."

    monkeypatch.setattr(defgen, "define_in_context", fake_define_in_context)
    monkeypatch.setattr(defgen, "define_known", lambda *a, **k: [SimpleNamespace(text=" x.")])
    item = data.DefGenItem("anvil", ["The <nonce> rang.", "A <nonce>."], "a heavy iron block")
    options = RunOptions(data=(), learners=())
    text = defgen._battle_definition(None, defgen.ORACLE_IN_CONTEXT, item, 1, options)
    assert text == "a block of iron." and read == [("anvil", ["The <nonce> rang."])]
    # the plain oracle reads no examples
    assert defgen._battle_definition(None, defgen.ORACLE, item, 2, options) == "x."
    assert len(read) == 1


def test_both_oracles_are_degenerate_for_saying_the_real_word(tiny_scorer):
    from benchmarks.defgen import ORACLE, ORACLE_IN_CONTEXT, score_samples

    references = ["a heavy iron block to hammer metal on", "a small bird"]
    samples = [
        Sample(0, "anvil", 1, name, "an anvil of iron", references[0])
        for name in (ORACLE, ORACLE_IN_CONTEXT, "centroid")
    ]
    score_samples(samples, references, tiny_scorer, seed=0)
    assert [s.scores["degenerate"] for s in samples] == [1.0, 1.0, 0.0]


NEW_SCORES = ("names_word", "identified_masked")


def old_record(scorer, folder):
    """A DefGen record of three items as a run writes it, then stripped of the masked
    scores as records written before them are; and the scores it had."""
    import json

    from benchmarks.defgen import ORACLE, score_samples

    items = [
        {"word": w, "examples": [f"the <nonce> {w}"], "definition": d}
        for w, d in (("anvil", "an iron block"), ("finch", "a small bird"), ("tea", "a drink"))
    ]
    data = folder / "defgen.jsonl"
    data.write_text("\n".join(json.dumps(i) for i in items) + "\n")
    texts = {"centroid": "a bird", "college": "a tea, a drink", ORACLE: "a small bird"}
    samples = [
        Sample(i, item["word"], 1, name, text, item["definition"])
        for name, text in texts.items()
        for i, item in enumerate(items)
    ]
    score_samples(samples, [i["definition"] for i in items], scorer, seed=0)
    rows = [
        {
            "learner": name,
            "shots": 1,
            "n": 3,
            "identified": 0.0,
            "samples": [
                {"item": s.item, "word": s.word, "definition": s.definition, **s.scores}
                for s in samples
                if s.learner == name
            ],
        }
        for name in texts
    ]
    scores = [[{k: s[k] for k in NEW_SCORES} for s in row["samples"]] for row in rows]
    for row in rows:
        for s in row["samples"]:
            for k in NEW_SCORES:
                del s[k]
    record = {"task": "defgen", "data": str(data), "settings": {"offset": 0}, "command": "defgen"}
    return {**record, "results": rows}, scores


def test_rescore_adds_the_masked_scores_to_an_old_record(tiny_scorer, tmp_path):
    from benchmarks.defgen import rescore_masked

    record, scores = old_record(tiny_scorer, tmp_path)
    rows = record["results"]
    assert rescore_masked(record, tiny_scorer) == 0
    assert [[{k: s[k] for k in NEW_SCORES} for s in row["samples"]] for row in rows] == scores
    college = rows[1]
    assert college["names_word"] == pytest.approx(1 / 3, abs=1e-4)  # tea, the third item
    assert list(college)[-1] == "samples"  # the new means sit before it, as in a new run
    assert "gap_closed_identified_masked" in college
    rows[0]["samples"][0]["identified"] = 1.0 - rows[0]["samples"][0]["identified"]
    assert rescore_masked(record, tiny_scorer) == 1  # a record it does not reproduce


def test_rescore_command_writes_only_records_it_reproduces(tiny_scorer, tmp_path, monkeypatch):
    import json

    import benchmarks.bertscore
    from benchmarks.__main__ import main

    monkeypatch.setattr(benchmarks.bertscore, "BertScorer", lambda: tiny_scorer)
    record, _ = old_record(tiny_scorer, tmp_path)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(record))
    record["results"][0]["samples"][0]["identified"] = 2.0  # no identification reads 2
    bad.write_text(json.dumps(record))
    assert main(["rescore", str(good), str(bad)]) == 0
    assert "identified_masked" in json.loads(good.read_text())["results"][0]
    assert "rescore" in json.loads(good.read_text())["note"]
    assert json.loads(bad.read_text()) == record  # left as it was
    assert main(["rescore"]) == 2  # nothing to rescore
    (tmp_path / "perf.json").write_text(json.dumps({"task": "perf", "results": []}))
    assert main(["rescore", str(tmp_path / "perf.json")]) == 2
    assert main(["cloze", str(good)]) == 2  # a task takes no record files


def test_rescore_reads_a_version_4_records_degenerate_as_version_6_does(tiny_scorer, tmp_path):
    import json

    from benchmarks.__main__ import main
    from benchmarks.defgen import ORACLE, rescore_degenerate, rescore_masked

    record, _ = old_record(tiny_scorer, tmp_path)
    assert rescore_masked(record, tiny_scorer) == 0  # as version 4 records have them
    loop = "to run, to go, to do, to do something, to do."  # no counted word thrice in v4
    college = record["results"][1]
    college["samples"][0]["definition"] = loop
    # the oracle may say its own word ("anvil"), a learner the stand-in only
    oracle = next(row for row in record["results"] if row["learner"] == ORACLE)
    oracle["samples"][0]["definition"] = "an anvil, a block"
    assert rescore_degenerate(json.loads(json.dumps(record))) == 2
    assert main(["rescore", str(tmp_path / "none.json")]) == 2  # no such record
    path = tmp_path / "v4.json"
    path.write_text(json.dumps({**record, "version": 4}))
    assert main(["rescore", str(path)]) == 0
    done = json.loads(path.read_text())
    assert done["version"] == 6 and "2 of 9 definitions changed" in done["note"]
    assert done["results"][1]["samples"][0]["degenerate"] == 1.0
    assert done["results"][1]["degenerate"] == pytest.approx(1 / 3, abs=1e-4)
    assert main(["rescore", str(path)]) == 0  # a second time: nothing to add
    assert json.loads(path.read_text()) == done
