"""The abuse script's arguments: bad counts and durations refused before any app launches."""

from __future__ import annotations

import pytest

from tests.refusals import refused
from tests.tools.abuse import main


@pytest.mark.parametrize(
    "argv, message",
    [
        (["rotate", "--threads", "0"], "--threads"),
        (["rotate", "--threads", "x"], "--threads"),
        (["rotate", "--seconds", "nan"], "--seconds"),
        (["rotate", "--seconds", "inf"], "--seconds"),
        (["rotate", "--seconds", "-1"], "--seconds"),
        (["recur", "--battles", "0"], "--battles"),
        (["recur", "--battles", "-3"], "--battles"),
    ],
)
def test_bad_numbers_are_refused_in_one_line(capsys, argv, message):
    assert message in refused(capsys, main, argv)
