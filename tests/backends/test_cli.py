"""The CLI turns every bad input into one clear line and exit code 2, never a traceback."""

import pytest

from backends.__main__ import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--word", "wug"], "at least one sentence"),
        (["--word", "wug", "--example", "A dog barked."], "does not contain"),
        (["--word", "", "--example", "a wug"], "enter the new word"),
        (["--word", "wug", "--example", "a wug " * 2_000_000], "limit"),
        (
            ["--word", "wug", "--example", "a wug", "--learner", "centriod"],
            "did you mean 'centroid'",
        ),
        (["--word", "wug", "--example", "a wug", "--lm", "gemma-9"], "unknown LM preset"),
        (["--word", "wug", "--example", "a wug", "--steps", "100000"], "steps"),
    ],
)
def test_bad_input_is_one_clear_line(argv, message, capsys):
    assert main(["learn", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err


def test_cuda_asked_for_but_absent(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert main(["learn", "--word", "wug", "--example", "a wug", "--device", "cuda"]) == 2
    assert "no GPU" in capsys.readouterr().err


def test_the_table_shows_what_a_learner_notes(capsys):
    from backends.__main__ import _print_table

    def row(learner, info):
        near = {"input": [{"token": "anvil", "score": 0.9}]}
        return {"learner": learner, "definition": "a tool.", "neighbours": near,
                "timings": {"learn": 0.5}, "info": info}  # fmt: skip

    record = {"word": "florp", "lm": "gemma-3-270m", "device": "cpu", "timings": {"total": 1.0}}
    record["learners"] = [row("college", {"note": "read as: anvil 97%"}), row("centroid", {})]
    record["real_word"] = None
    _print_table(record)
    out = capsys.readouterr().out
    assert "  note: read as: anvil 97%" in out
    assert out.count("note:") == 1  # a learner with nothing to say prints no note line
    assert "real word" not in out and "cosine to" not in out
    said = {"oracle": "a heavy iron block.", "oracle_in_context": "a block to hammer on."}
    record["real_word"] = {
        "word": "anvil",
        "definitions": said,
        "cosine": {"college": 0.98, "centroid": 0.2},
        "rank": {"college": 3, "centroid": 4051},
        "ranked_among": 77636,
    }
    _print_table(record)
    out = capsys.readouterr().out
    assert "  cosine to 'anvil': 0.98 (rank 3 of 77636 WordNet words)" in out
    assert "  cosine to 'anvil': 0.20 (rank 4051 of 77636 WordNet words)" in out
    assert "[the real word: anvil] (not a learner)" in out
    assert "  oracle_in_context: a block to hammer on." in out
