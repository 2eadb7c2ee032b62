"""Write benchmarks/RESULTS.md from the committed run records in benchmarks/results/*.json:
`python -m benchmarks report`. One table per task (rows of every file of that task), then
the exact commands, machines and dates the numbers came from."""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.data import REPO_ROOT
from benchmarks.tasks import TASKS

log = logging.getLogger(__name__)

RESULTS_DIR = REPO_ROOT / "benchmarks" / "results"
REPORT = REPO_ROOT / "benchmarks" / "RESULTS.md"

PREAMBLE = """\
# Benchmark results

Regenerate with `python -m benchmarks report` (reads `benchmarks/results/*.json`).
Each task is declared in `benchmarks/tasks.py`; every row is one learner (at a number of
shots) over `n` items. Choices that shape the numbers:

- The blank / `<nonce>` is filled with a made-up string WordNet does not know ("dax";
  Cloze candidates: dax, wug, blicket, toma, fep), so `definition_reader` cannot look the
  real word up; it reads only the string's spelling here (no definition is given).
- Word reference vector: mean of the LM's input embeddings of the tokens of " w"; cosine.
  Chimera and Definitional Nonce score the learned *input* vector. `cache`'s input vector
  is the centroid (its knowledge sits in the kNN store), so it equals `centroid` there;
  `prompting`'s is random (its knowledge sits in the prompt).
- Token tuning runs as TT-2 (2 Adam steps, lr 0.01, L2 0.01, 2 replay sentences per
  step, initialised at the centroid): CoLLEGe's TT-N with N = 2, as a step costs seconds
  on a shared 2-core CPU. The app's default is 20 steps.
- DefGen: first sentence of a greedy generation (<= 32 new tokens) after
  `The word "dax" is defined as`; BERTScore F1 with all-MiniLM-L6-v2, layer 6 (its last),
  greedy cosine matching, no idf, no baseline rescaling (so unrelated sentences still score
  well above 0: compare rows with each other); ROUGE-L F1.
- Tournament: per DefGen item a random pair of learners and a random k in 1..3; the
  higher BERTScore F1 to the reference wins, a difference <= 0.01 is a tie; online Elo
  (init 1000, K 4) and Bradley-Terry with 100 bootstrap rounds (95% interval).
- Definitional Nonce candidates: the 77,636 WordNet single-word lemmas ∪ the gold words.
- perf: one process measures everything side by side; definitions there are capped at 16
  new tokens; the kNN store holds synthetic hidden-like vectors (640-d, intrinsic
  dimension 32, 256 clusters; queries from the same distribution), k = 16, 256 queries;
  `bytes_per_vector` is the serialised faiss index over its size. Runs used `--threads 1`
  (torch and faiss), as the CPU was shared: with 2 OpenMP threads on a loaded machine an
  IVF-PQ build took 15x longer.
- Rows with a `--limit` cover the first n items of the file; the expensive learners
  (token_tuning, cache) ran on fewer items than the cheap ones, so compare within n.
"""


def load_runs(folder: Path) -> list[dict]:
    runs = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json"))]
    for run, path in zip(runs, sorted(folder.glob("*.json"))):
        run["_file"] = path.name
    return runs


def _cell(value) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def _config_label(row: dict) -> str:
    config = row.get("config") or {}
    return config.get("label", "")


def table(rows: list[dict]) -> list[str]:
    """A Markdown table over the union of the rows' keys (config reduced to its label)."""
    columns = list(dict.fromkeys(k for row in rows for k in row if k != "config"))
    if any(_config_label(r) for r in rows):
        columns.append("config")
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        values = [_config_label(row) if c == "config" else _cell(row.get(c)) for c in columns]
        lines.append("| " + " | ".join(values) + " |")
    return lines


def render(runs: list[dict]) -> str:
    lines = [PREAMBLE]
    for name, task in TASKS.items():
        mine = [r for r in runs if r["task"] == name]
        if not mine:
            continue
        lines += [f"## {name}", "", task.description + ".", ""]
        metrics = ", ".join(
            f"`{m.name}` ({'higher' if m.higher_is_better else 'lower'} is better)"
            for m in task.metrics
        )
        lines += [f"Metrics: {metrics}. LM: {', '.join(sorted({r['lm'] for r in mine}))}.", ""]
        lines += table([row for run in mine for row in run["results"]])
        lines.append("")
    lines += ["## How these numbers were made", ""]
    for run in runs:
        seconds = (run.get("settings") or {}).get("seconds")
        lines.append(f"- `{run['_file']}` ({run['date']}, {run['machine']}, {seconds} s):")
        lines.append(f"  `{run['command']}`")
    lines += ["", f"_Written {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC._", ""]
    return "\n".join(lines)


def write_report(folder: Path | None = None, out: Path | None = None) -> Path:
    folder, out = folder or RESULTS_DIR, out or REPORT
    runs = load_runs(folder)
    if not runs:
        raise ValueError(f"no run records (*.json) in {folder}; run a task with --json first")
    out.write_text(render(runs), encoding="utf-8")
    log.info("wrote %s from %d runs", out, len(runs))
    return out
