"""The arena-sampling benchmark's pieces: item ranges, its decodings, the seeds' variety,
and bad arguments refused before any model loads."""

from __future__ import annotations

import pytest

from benchmarks.arena_sampling import (
    GREEDY_ROW,
    decoding_rows,
    main,
    parse_changes,
    parse_items,
    seeds_differ,
    stopped_unfinished,
    stopped_wordless,
)
from tests.refusals import refused


def test_item_ranges_take_an_optional_step():
    assert parse_items("0:200:4")[:3] == [0, 4, 8] and len(parse_items("0:200:4")) == 50
    assert parse_items("3:5,10:12") == [3, 4, 10, 11]
    for bad in ("5", "0:10:0", "1:2:3:4"):
        with pytest.raises(ValueError, match="LO:HI"):
            parse_items(bad)


def test_greedy_comes_first_then_each_temperature_with_each_seed():
    rows = decoding_rows([0.5, 0.8], [1, 2], top_k=40)
    assert list(rows) == [
        GREEDY_ROW,
        "T=0.5 seed=1",
        "T=0.5 seed=2",
        "T=0.8 seed=1",
        "T=0.8 seed=2",
    ]
    assert rows[GREEDY_ROW].greedy
    sampled = rows["T=0.8 seed=2"]
    assert (sampled.temperature, sampled.top_k, sampled.seed) == (0.8, 40, 2)
    assert sampled.text_only and sampled.ban_word  # the library's controls, as a battle's


def test_a_setting_is_measured_in_every_row_before_it_becomes_the_default():
    changes = parse_changes("wind_down=12,wind_down_rate=0.75,quote_once=false")
    assert changes == {"wind_down": 12, "wind_down_rate": 0.75, "quote_once": False}
    rows = decoding_rows([0.8], [1], top_k=40, changes=changes)
    assert all(r.wind_down == 12 and not r.quote_once for r in rows.values())
    assert rows["T=0.8 seed=1"].temperature == 0.8 and rows[GREEDY_ROW].greedy
    for bad in ("wind_down", "no_such_rule=1", "=3"):
        with pytest.raises(ValueError, match="FIELD=VALUE"):
            parse_changes(bad)


def test_seeds_differ_counts_items_whose_texts_differ():
    texts = {("a", 0): "x", ("b", 0): "x", ("a", 1): "y", ("b", 1): "z"}
    assert seeds_differ(texts, ["a", "b"]) == 0.5


def test_a_definition_that_stopped_on_a_word_wanting_another_is_unfinished():
    assert stopped_unfinished("a", finished=True)
    assert stopped_unfinished("the order of", finished=True)
    assert not stopped_unfinished("the order of", finished=False)  # its budget cut it
    assert not stopped_unfinished("to cut into.", finished=True)
    assert not stopped_unfinished('a "word of"', finished=True)  # quoted: a mark after it
    assert not stopped_unfinished("a sound made by the mouth", finished=True)
    assert not stopped_unfinished("", finished=True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--items", "0:10:0"], "LO:HI"),
        (["--items", "0:2", "--temperatures", "0"], "temperature"),
        (["--items", "0:2", "--data", "/nonexistent.jsonl"], "no such file"),
        (["--items", "0:2", "--set", "wind_down=x"], "type int"),
    ],
)
def test_bad_arguments_are_refused_before_any_model_loads(capsys, argv, message):
    with pytest.raises(SystemExit):
        main(argv)
    assert message in capsys.readouterr().err


def test_a_definition_that_stopped_before_any_content_word_is_wordless():
    for text in ("1.", "a 1.", "a) 5.", "you can", '"a", "the" and "are".', ""):
        assert stopped_wordless(text, finished=True), text
    assert not stopped_wordless("a 1", finished=False)  # its budget cut it
    assert not stopped_wordless("a child.", finished=True)
    assert not stopped_wordless("1. a child.", finished=True)


def test_an_unknown_learner_is_refused_before_any_model_loads(capsys):
    from benchmarks.arena_sampling import main

    with pytest.raises(SystemExit):
        main(["--items", "0:1", "--learners", "centroid,nope"])
    assert "nope" in capsys.readouterr().err


def test_an_empty_or_malformed_item_range_is_refused():
    for bad in ("5:1", "3:3", "-3:2", "a:b", "", "0:2,"):
        with pytest.raises(ValueError, match="0 <= LO < HI"):
            parse_items(bad)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--items", "5:1"], "--items"),
        (["--items", "0:x"], "LO:HI"),
        (["--items", "0:2", "--temperatures", "nan"], "finite"),
        (["--items", "0:2", "--temperatures", "0.8,x"], "--temperatures"),
        (["--items", "0:2", "--seeds", "1.5"], "--seeds"),
        (["--items", "0:2", "--shots", "0"], "--shots"),
        (["--items", "0:2", "--threads", "-1"], "--threads"),
        (["--items", "0:2", "--top-k", "x"], "--top-k"),
    ],
)
def test_bad_numbers_get_one_line_naming_the_argument(capsys, argv, message):
    assert message in refused(capsys, main, argv, "python -m benchmarks.arena_sampling")
