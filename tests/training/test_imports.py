"""Training uses the library, never the benchmarks that measure what it trains."""

from __future__ import annotations

import ast
from pathlib import Path

TRAINING = Path(__file__).resolve().parents[2] / "training"


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports inside functions too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_training_module_imports_the_benchmarks():
    files = sorted(TRAINING.rglob("*.py"))
    assert len(files) > 3  # the folder was found
    offending = {
        f"{path.name}: {name}"
        for path in files
        for name in imported_modules(path)
        if name == "benchmarks" or name.startswith("benchmarks.")
    }
    assert offending == set()


def test_the_check_sees_a_lazy_import_of_the_benchmarks(tmp_path):
    path = tmp_path / "lazy.py"
    path.write_text("def f():\n    from benchmarks.data import load_defgen\n\nimport benchmarks\n")
    assert imported_modules(path) == {"benchmarks.data", "benchmarks"}
