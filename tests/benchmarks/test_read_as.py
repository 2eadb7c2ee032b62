"""benchmarks/read_as.py: a DefGen record's gap to the oracle, split by what the LM read."""

import json

import pytest

from benchmarks.read_as import main, part_of_speech, summarise


def test_parts_of_speech_follow_the_set_builders_blocks():
    dev, test = "benchmarks/sets/defgen.dev.jsonl", "x/defgen.test.jsonl"
    assert [part_of_speech(dev, i) for i in (0, 79, 80, 139, 140, 199)] == [
        "nouns", "nouns", "verbs", "verbs", "adjectives", "adjectives"
    ]  # fmt: skip
    assert [part_of_speech(test, i) for i in (39, 40, 70)] == ["nouns", "verbs", "adjectives"]
    written = "benchmarks/sets/defgen.test.natural.jsonl"  # the test words in written sentences
    assert [part_of_speech(written, i) for i in (39, 40, 70)] == ["nouns", "verbs", "adjectives"]
    assert part_of_speech("my-own.jsonl", 5) == "all"


def _record():
    def sample(item, word, identified, read_as=None):
        found = {"item": item, "word": word, "identified": identified}
        return {**found, "read_as": read_as} if read_as is not None else found

    college = [
        sample(0, "mind", 1.0, [["mind", 1.0]]),
        sample(1, "idea", 0.0, [["Idea", 0.9], ["plan", 0.1]]),
        sample(80, "drown", 1.0, [["call", 0.8]]),
        sample(81, "drain", 0.0, []),
    ]
    oracle = [sample(i, w, o) for i, w, o in ((0, "mind", 1.0), (1, "idea", 1.0),
                                              (80, "drown", 0.0), (81, "drain", 1.0))]  # fmt: skip
    return {
        "data": "benchmarks/sets/defgen.dev.jsonl",
        "results": [
            {"learner": "college", "shots": 3, "samples": college},
            {"learner": "centroid", "shots": 3, "samples": [sample(0, "mind", 0.0)]},
            {"learner": "oracle", "shots": 3, "samples": oracle},
        ],
    }


def test_rows_split_identification_by_the_word_read_first():
    rows = {row["pos"]: row for row in summarise(_record())}
    assert set(rows) == {"nouns", "verbs", "all"}  # centroid and oracle say nothing read
    nouns = rows["nouns"]
    assert (nouns["n"], nouns["read_first"], nouns["identified_read_first"]) == (2, 1.0, 0.5)
    assert nouns["oracle_read_first"] == 1.0 and nouns["oracle"] == 1.0
    verbs = rows["verbs"]
    assert (verbs["read_first"], verbs["identified_read_other"], verbs["oracle"]) == (0, 0.5, 0.5)
    assert rows["all"]["n"] == 4 and rows["all"]["read_first"] == 0.5


def test_ceilings_count_the_oracle_where_a_better_ranking_would_read_the_word_first():
    record = _record()
    college = record["results"][0]["samples"]
    for s, rank in zip(college, (0, 3, 9, -1)):  # first; fourth; tenth; never weighed
        s["read_rank"] = rank
    rows = {row["pos"]: row for row in summarise(record)}
    nouns, everything = rows["nouns"], rows["all"]
    # idea, fourth, would be the oracle's (identified) instead of college's (not)
    assert (nouns["top5"], nouns["ceiling_top5"]) == (1.0, 1.0)
    assert everything["top5"] == 0.5 and everything["weighed"] == 0.75
    # drown, tenth, is counted as the oracle's (not identified) only when anywhere counts
    assert everything["ceiling_top5"] == (1 + 1 + 1 + 0) / 4
    assert everything["ceiling_weighed"] == (1 + 1 + 0 + 0) / 4
    assert "top5" not in summarise(_record())[0]  # records without ranks: no such columns
    # a sample with a rank and no read_as (a run that lost it) is read first at rank 0
    for s in college:
        del s["read_as"]
    assert {row["pos"]: row["read_first"] for row in summarise(record)} == {
        "nouns": 0.5, "verbs": 0.0, "all": 0.25
    }  # fmt: skip


def test_the_cli_prints_a_table_or_says_why_not(tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_record()))
    main([str(path)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| learner | k | pos | n | read_first")
    assert len(lines) == 2 + 3
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps({"data": "d.jsonl", "results": []}))
    with pytest.raises(SystemExit):
        main([str(empty)])
    assert "no sample says what the LM read" in capsys.readouterr().err
