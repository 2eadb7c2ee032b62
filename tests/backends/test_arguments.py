"""The command lines' shared argparse types refuse what a run cannot use, with the value."""

from __future__ import annotations

import argparse

import pytest

from backends.arguments import number, whole_number, whole_numbers


def test_whole_numbers():
    parse = whole_number(1, 500)
    assert [parse(t) for t in ("1", " 20 ", "1e2", "2.0")] == [1, 20, 100, 2]
    for bad in ("0", "-1", "501", "1.9", "inf", "nan", "abc", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="a whole number >= 1 and <= 500"):
            parse(bad)


def test_finite_numbers():
    rate = number(0, 1, above=True)
    assert rate("0.01") == 0.01 and rate("1") == 1.0
    for bad in ("0", "-0.5", "1.5", "nan", "inf", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="a finite number > 0 and <= 1"):
            rate(bad)
    assert number(0)("0") == 0.0


def test_argparse_names_the_argument(capsys):
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--limit", type=whole_number(1))
    with pytest.raises(SystemExit) as exit_:
        parser.parse_args(["--limit", "-1"])
    assert exit_.value.code == 2
    assert "argument --limit: expected a whole number >= 1, got '-1'" in capsys.readouterr().err


def test_lists_of_whole_numbers_as_reader_weights_reads_counts_and_shots():
    assert list(whole_numbers(0, most=3)("100,0,20")) == [100, 0, 20]
    assert list(whole_numbers(1, 3, most=3)("1,2,3")) == [1, 2, 3]
    with pytest.raises(argparse.ArgumentTypeError, match="1 to 3"):
        whole_numbers(1, 3, most=3)("2,3,4")
    with pytest.raises(argparse.ArgumentTypeError, match="given twice"):
        whole_numbers(1, distinct=True)("1,1")
