"""The reader ablation's item ranges and variants."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backends.learners.college import CollegeConfig
from backends.learners.lm_reader import BLANK_SHOTS, MIXED_SHOTS, ReaderConfig
from benchmarks.reader_ablation import VARIANTS, college_config, fitted_reader, main, parse_items


def test_item_ranges_are_half_open_and_kept_in_order():
    assert parse_items("80:83,5:6") == [80, 81, 82, 5]


def test_each_variant_changes_what_its_name_says():
    v3 = VARIANTS["v3"]
    assert v3.prior_weight > 0 and v3.base_forms
    assert (v3.from_slot, v3.from_blank, v3.blank_shots, v3.exact_right) == (16, 16, BLANK_SHOTS, 0)
    assert (VARIANTS["plain"].prior_weight, VARIANTS["plain"].base_forms) == (0.0, False)
    assert VARIANTS["prior"].prior_weight == v3.prior_weight
    assert VARIANTS["base"].base_forms and not VARIANTS["base"].prior_weight
    assert VARIANTS["mixed_shots"].blank_shots == MIXED_SHOTS != v3.blank_shots
    assert [VARIANTS[f"mixed_prior_{p}"].prior_weight for p in (25, 75)] == [0.25, 0.75]
    assert {VARIANTS[f"mixed_prior_{p}"].blank_shots for p in (25, 75)} == {MIXED_SHOTS}
    pool = VARIANTS["mixed_pool_64"]
    assert (pool.from_slot, pool.from_blank, pool.blank_shots) == (64, 64, MIXED_SHOTS)
    assert pool.exact_right == 0  # as measured before the shortlist
    assert VARIANTS["mixed_pool_64_shortlist"] == replace(pool, exact_right=16)
    # the fifth version leaves the examples' own words out; the earlier ones did not
    assert VARIANTS["shipped"].exclude_example_words and not v3.exclude_example_words
    assert VARIANTS["example_words"] == replace(VARIANTS["shipped"], exclude_example_words=False)
    fourth = VARIANTS["mixed_pool_64_shortlist"]
    assert VARIANTS["shipped"] == ReaderConfig() == replace(fourth, exclude_example_words=True)


def test_shipped_is_the_learner_as_shipped_and_every_other_variant_reads_by_hand():
    assert college_config("shipped") == CollegeConfig()  # fitted weights from 3 examples up
    hand = college_config("hand")
    assert (hand.reader, hand.fitted_from) == (ReaderConfig(), 0)
    assert college_config("pool_128").fitted_from == 0


def test_a_layout_after_a_plus_sets_where_the_examples_stand():
    config = college_config("pool_128+quoted")
    assert (config.reader, config.examples_in_prompt) == (VARIANTS["pool_128"], "quoted")
    assert college_config("v3").examples_in_prompt == college_config("shipped").examples_in_prompt


@pytest.mark.parametrize("name", ["nope", "shipped+columns"])
def test_an_unknown_variant_is_refused_before_any_model_loads(capsys, name):
    with pytest.raises(SystemExit):
        main(["--items", "0:1", "--variants", f"shipped,{name}"])
    assert "unknown variant" in capsys.readouterr().err


def test_word_uses_must_be_counts_before_any_model_loads(capsys):
    with pytest.raises(SystemExit):
        main(["--items", "0:1", "--variants", "shipped", "--word-uses", "1,two"])
    assert "--word-uses takes counts" in capsys.readouterr().err


def test_layouts_must_be_known_before_any_model_loads(capsys):
    with pytest.raises(SystemExit):
        main(["--items", "0:1", "--variants", "shipped", "--layouts", "quoted,columns"])
    assert "--layouts takes names from" in capsys.readouterr().err


def test_fitted_weights_come_from_the_trainers_file(tmp_path):
    path = tmp_path / "weights.json"
    path.write_text('{"weights": [1, 0, 2, 0, 3, 4], "features": []}', encoding="utf-8")
    fitted = fitted_reader(path)
    assert fitted == replace(ReaderConfig(), weights=(1, 0, 2, 0, 3, 4), temperature=1.0)


def test_a_missing_data_file_is_refused_before_any_model_loads(capsys, tmp_path):
    with pytest.raises(SystemExit):
        main(["--items", "0:1", "--variants", "shipped", "--data", str(tmp_path / "no.jsonl")])
    assert "no such file" in capsys.readouterr().err
