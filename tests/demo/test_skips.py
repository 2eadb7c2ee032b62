"""`make test` ends by naming each optional suite and whether it ran here, with the reason."""

from __future__ import annotations

from tests.tools import skips


def test_every_optional_suite_is_named_with_its_reason(capsys, monkeypatch):
    monkeypatch.delenv("NONCE_SLOW", raising=False)
    assert skips.main() == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "suites on this machine:" and len(lines) == 5
    slow = next(line for line in lines if "slow tests" in line)
    assert slow.endswith("SKIPPED — NONCE_SLOW is not 1 (make test-all)")
    for line in lines[1:]:
        assert line.endswith(": runs") or "SKIPPED — " in line
