"""One typed result schema for every benchmark task (after lm-evaluation-harness).

A run writes `{"task", "lm", "data", "results": [{"learner", "shots", "n", <metric>: value,
...}], ...}`: one `Result` per (learner, shots) row, metrics flattened into the row. A
perf row (`kind: "perf"`) names what it measured in `learner` (a learner, the LM, an
index kind, the process) and what was timed in `case`.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

RowKind = Literal["learner", "perf"]


@dataclass(frozen=True)
class Result:
    """One row of a task's results: a learner at a number of shots, over n items."""

    learner: str
    shots: int | None  # example sentences seen (Chimera: the level); None where it does not apply
    n: int  # items scored
    metrics: dict[str, float]  # metric name -> value (see the task's declared metrics)
    config: dict = field(default_factory=dict)  # learner settings and scoring choices
    case: str = ""  # perf only: what was measured
    kind: RowKind = "learner"  # "learner": a learner's scores; "perf": a measurement
    # Per-item outputs (DefGen: each definition and its scores), as lm-evaluation-harness
    # keeps samples, so a reader can see what a learner said, not only the means.
    samples: list[dict] = field(default_factory=list)

    def record(self) -> dict:
        row: dict = {"learner": self.learner, "shots": self.shots, "n": self.n}
        if self.kind != "learner":  # learner rows keep the shape older records have
            row["kind"] = self.kind
        if self.case:
            row["case"] = self.case
        row.update({k: _rounded(v) for k, v in self.metrics.items()})
        if self.config:
            row["config"] = self.config
        if self.samples:
            row["samples"] = self.samples
        return row


@dataclass(frozen=True)
class Run:
    """A task run: where the rows came from and how to reproduce them."""

    task: str
    version: int
    lm: str
    data: str
    results: list[Result]
    command: str
    settings: dict = field(default_factory=dict)  # run-wide choices (nonce string, judge, ...)

    def record(self) -> dict:
        return {
            "task": self.task,
            "version": self.version,
            "lm": self.lm,
            "data": self.data,
            "results": [r.record() for r in self.results],
            "settings": self.settings,
            "command": self.command,
            "machine": machine(),
            "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        }

    def write(self, path: Path) -> None:
        """Write the record whole or not at all: a record it replaces is kept should the
        write fail part way (a full disk)."""
        path = path.resolve() if path.is_symlink() else path  # the file a link points to
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.record(), indent=1, ensure_ascii=False) + "\n"
        part = path.with_name(f".{path.name}.{os.getpid()}.part")
        try:
            part.write_text(text, encoding="utf-8")
            os.replace(part, path)
        finally:
            part.unlink(missing_ok=True)


def row_kind(row: dict) -> RowKind:
    """A record row's kind. Records written before rows had one mark perf rows by their
    `case`, or by a "/" in `learner` (a ratio of two learners)."""
    if "kind" in row:
        return row["kind"]
    return "perf" if row.get("case") or "/" in row["learner"] else "learner"


def _rounded(value: float) -> float | None:
    """4 significant decimals keep the committed JSON small; nan becomes null."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return round(float(value), 4) if isinstance(value, float) else value


def machine() -> str:
    """'Linux x86_64, 2 CPUs, Python 3.x, torch 2.x (cpu)' — enough to compare runs."""
    import os

    import torch

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}, torch {torch.__version__} ({device})"
    )
