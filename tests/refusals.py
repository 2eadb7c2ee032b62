"""What every command line's tests check of an argument it refuses."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def refused(capsys, main: Callable, argv: list[str], usage: str | None = None) -> str:
    """The last line `main(argv)` printed refusing its arguments: argparse's exit 2, no
    traceback, and (given) its usage line first, naming the command as it is run."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    if usage is not None:
        assert err.startswith(f"usage: {usage}")
    assert "Traceback" not in err
    return err.splitlines()[-1]
