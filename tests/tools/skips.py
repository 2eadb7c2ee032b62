"""Which optional suites this machine cannot run, and why: `make test` prints it last.

python -m tests.tools.skips
"""

from __future__ import annotations

import os
import sys


def reasons() -> dict[str, str | None]:
    """Suite -> why it is skipped here (None: it runs)."""
    from tests.demo.test_browser import _missing as browser_missing
    from tests.tools.pgtemp import missing_reason

    slow = None if os.environ.get("NONCE_SLOW") == "1" else "NONCE_SLOW is not 1 (make test-all)"
    try:
        import torch

        gpu = None if torch.cuda.is_available() else "no CUDA device"
    except ImportError:
        gpu = "torch is not installed"
    return {
        "PostgreSQL store and load tests": missing_reason(),
        "browser test (Chromium)": browser_missing(),
        "slow tests (full load, model quality)": slow,
        "GPU tests": gpu,
    }


def main() -> int:
    print("suites on this machine:")
    for suite, why in reasons().items():
        print(f"  {suite}: {'runs' if why is None else 'SKIPPED — ' + why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
