"""Command line: run a benchmark task, print its table, optionally write its JSON record.

python -m benchmarks chimera --learner all --limit 20 --json benchmarks/results/chimera.json
python -m benchmarks defgen --learner centroid,prompting --shots 1,3
python -m benchmarks perf --skip-cold
python -m benchmarks report          # rewrite benchmarks/RESULTS.md from results/*.json
python -m benchmarks rescore benchmarks/results/defgen-dev-wind.json  # today's DefGen scores
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import sys
import time
from pathlib import Path

from backends.arguments import file_to_write, number, whole_number, whole_numbers
from backends.learners import parse_learners
from backends.learners.token_tuning import MAX_STEPS
from backends.registry import unknown_name_message
from benchmarks.results import Run
from benchmarks.runs import RunOptions
from benchmarks.tasks import get_task, task_names

COMMANDS = ("report", "rescore")  # what the task argument names besides the tasks
# PQ codes of 8 bits train 256 centroids per sub-quantiser: a smaller store cannot be built
KNN_MIN = 256


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "task", help=f"one of: {', '.join(task_names())}, report, or rescore RECORD..."
    )
    parser.add_argument(
        "records",
        nargs="*",
        type=Path,
        default=[],  # not "required" in the usage: only rescore reads them
        help="rescore: DefGen run records to add the scores of the word masked to",
    )
    parser.add_argument("--data", help="data file(s), comma-separated (default: the dev sets)")
    parser.add_argument("--learner", default="all", help="NAME, NAME,NAME or all")
    parser.add_argument("--lm", default=None, help="LM preset (default: the settings' LM)")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument(
        "--shots",
        type=whole_numbers(1, distinct=True),
        default=(1, 2, 3),
        help="defgen/tournament: k values",
    )
    parser.add_argument(
        "--limit", type=whole_number(1), default=None, help="first N items per task (default: all)"
    )
    parser.add_argument(
        "--offset",
        type=whole_number(0),
        default=0,
        help="skip the first N items (a held-out range)",
    )
    parser.add_argument(
        "--json",
        type=file_to_write,
        default=None,
        help="write the run record here (a file there is replaced)",
    )
    parser.add_argument(
        "--tt-steps",
        type=whole_number(0, MAX_STEPS),
        default=RunOptions.tt_steps,
        help=f"token tuning steps (TT-N), 0..{MAX_STEPS}",
    )
    parser.add_argument(
        "--tt-lr", type=number(0, 1, above=True), default=0.01, help="token tuning lr, (0, 1]"
    )
    parser.add_argument(
        "--max-new-tokens", type=whole_number(1), default=32, help="definition length cap"
    )
    parser.add_argument("--seed", type=whole_number(0), default=0)
    parser.add_argument(
        "--db", default=None, help="tournament: vote store (default: benchmark-votes.sqlite)"
    )
    parser.add_argument("--tie-margin", type=number(0), default=0.01, help="tournament: tie band")
    parser.add_argument("--skip-cold", action="store_true", help="perf: skip the GGUF conversion")
    parser.add_argument("--big", action="store_true", help="perf: add 10^6 vectors and votes")
    parser.add_argument(
        "--knn-sizes",
        type=whole_numbers(KNN_MIN, distinct=True),
        default=(10_000, 100_000),
        help=f"perf: kNN store sizes, each >= {KNN_MIN}",
    )
    parser.add_argument(
        "--decode-only",
        action="store_true",
        help="perf: only definitions and decoding, with the fp32 and the int8 output layer",
    )
    parser.add_argument(
        "--knn-only", action="store_true", help="perf: only the kNN store (and peak memory)"
    )
    parser.add_argument(
        "--skip-knn",
        action="store_true",
        help="perf: leave out the kNN store and the ratings (CPU work, whatever the device)",
    )
    parser.add_argument(
        "--vote-sizes",
        type=whole_numbers(1, distinct=True),
        default=(10_000, 100_000),
        help="perf: votes rated",
    )
    parser.add_argument("--results", type=Path, default=None, help="report: folder of JSON runs")
    parser.add_argument(
        "--threads",
        type=whole_number(1),
        default=None,
        help="torch and faiss CPU threads (default: theirs)",
    )
    parser.add_argument(
        "--workers",
        type=whole_number(1),
        default=1,
        help="defgen: processes generating definitions, each a share of the items (scored "
        "together after)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    return parser


def _options(args: argparse.Namespace, task) -> RunOptions:
    data = tuple(Path(p) for p in args.data.split(",")) if args.data else task.default_data
    missing = [str(p) for p in data if not Path(p).is_file()]
    if missing:
        raise ValueError(f"data file(s) not found: {', '.join(missing)}")
    if args.json and any(args.json.resolve() == Path(p).resolve() for p in data):
        raise ValueError(f"--json {args.json} is a --data file; the run would overwrite it")
    big = (1_000_000,) if args.big else ()
    return RunOptions(
        data=tuple(Path(p) for p in data),
        learners=tuple(parse_learners(args.learner)),
        lm=args.lm,
        device=args.device,
        shots=args.shots,
        limit=args.limit,
        offset=args.offset,
        tt_steps=args.tt_steps,
        tt_lr=args.tt_lr,
        max_new_tokens=args.max_new_tokens,
        seed=args.seed,
        db=args.db,
        tie_margin=args.tie_margin,
        skip_cold=args.skip_cold,
        big=args.big,
        knn_only=args.knn_only,
        decode_only=args.decode_only,
        skip_knn=args.skip_knn,
        knn_sizes=tuple(args.knn_sizes) + big,
        vote_sizes=tuple(args.vote_sizes) + big,
        workers=args.workers,
    )


def set_threads(threads: int | None) -> None:
    """Pin torch's and faiss's CPU thread pools; on a shared CPU, 1 avoids OpenMP spin-waits
    (an IVF-PQ build at 10^4 vectors took 165 s with 2 threads, 11 s with 1, at load 13)."""
    if threads is None:  # the libraries' own default
        return
    import faiss
    import torch

    torch.set_num_threads(threads)
    faiss.omp_set_num_threads(threads)


def format_table(record: dict) -> str:
    """The run's rows as an aligned text table (the union of the rows' keys, config left out)."""
    rows = record["results"]
    columns = list(dict.fromkeys(k for row in rows for k in row if k not in ("config", "samples")))
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    widths = [
        max(len(c), *(len(r[i]) for r in cells)) if cells else len(c) for i, c in enumerate(columns)
    ]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def _cell(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s"
    )
    try:
        if args.task == "report":
            from benchmarks.report import write_report

            print(f"wrote {write_report(args.results)}")
            return 0
        if args.task == "rescore":
            return rescore(args.records)
        if args.records:
            raise ValueError(f"{args.task} takes no record files: {args.records[0]}")
        if args.task not in task_names():  # the commands are names too
            raise ValueError(unknown_name_message("task", args.task, [*task_names(), *COMMANDS]))
        task = get_task(args.task)
        options = _options(args, task)  # every check before the first import of torch
        set_threads(args.threads)
        start = time.perf_counter()
        results = task.run_function()(options)
    except (ValueError, RuntimeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from backends.pipeline import load_lm

    command = "python -m benchmarks " + shlex.join(sys.argv[1:] if argv is None else argv)
    run = Run(
        task.name,
        task.version,
        load_lm(options.lm, options.device).name,
        ",".join(_relative(p) for p in options.data),
        results,
        command,
        {
            "seconds": round(time.perf_counter() - start, 1),
            "device": options.device,
            "offset": options.offset,
        },
    )
    record = run.record()
    print(f"{task.name} on {record['lm']} ({record['data'] or 'no data'})")
    print(format_table(record))
    return write_record(run, args.json) if args.json else 0


def write_record(run: Run, path: Path) -> int:
    """Write the run's record to `path` (checked writable before the run); should that
    fail even so, keep it in a temporary file, or print it, rather than lose the run."""
    replaced = path.is_file()
    try:
        run.write(path)
    except OSError as err:
        import json
        import tempfile

        text = json.dumps(run.record(), indent=1, ensure_ascii=False) + "\n"
        try:
            with tempfile.NamedTemporaryFile(
                "w", prefix=f"benchmark-{run.task}-", suffix=".json", delete=False
            ) as file:
                file.write(text)
            kept = f"it is kept in {file.name}"
        except OSError:
            print(text)
            kept = "it is printed above"
        print(f"error: could not write {path} ({err}); {kept}", file=sys.stderr)
        return 1
    print(f"wrote {path}" + (" (replaced the record that was there)" if replaced else ""))
    return 0


def rescore(paths: list[Path]) -> int:
    """Bring DefGen run records up to the scores of today's version, in place, from the
    definitions they keep, with a note saying so: `names_word` and `identified_masked`
    where a record has none (a record whose recomputed identification differs from its
    own is left as it was), and a version 4 record's `degenerate` read as version 6 reads
    it (a form of "do" counted as a content word, babble; the definitions, decoded before
    `Decoding.count_do`, are the record's own)."""
    import json
    from datetime import datetime, timezone

    from benchmarks.bertscore import BertScorer
    from benchmarks.defgen import rescore_degenerate, rescore_masked

    if not paths:
        raise ValueError("rescore needs DefGen run records (JSON files) to rescore")
    version = get_task("defgen").version
    scorer = None
    when = f"{datetime.now(timezone.utc):%Y-%m-%d}"
    for path in paths:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise ValueError(f"{path}: not a readable run record ({err})") from err
        if not isinstance(record, dict) or record.get("task") != "defgen":
            raise ValueError(f"{path}: not a DefGen run record")
        notes = []
        kept = [row for row in record["results"] if row.get("samples")]
        if any("names_word" not in row for row in kept):
            scorer = scorer or BertScorer()
            differ = rescore_masked(record, scorer)
            if differ:
                print(f"{path}: left as it was, {differ} recomputed identifications differ")
                continue
            notes.append(
                f"names_word and identified_masked added on {when} from the kept definitions"
                " (`python -m benchmarks rescore`), which reproduced every recorded"
                " identification."
            )
        if record.get("version") == 4 and version == 6:
            changed = rescore_degenerate(record)
            total = sum(len(row["samples"]) for row in kept)
            notes.append(
                f"degenerate read again as task version 6 reads it on {when} (`python -m"
                f" benchmarks rescore`): {changed} of {total} definitions changed; decoded"
                " without `count_do`."
            )
            record["version"] = version
        if not notes:
            print(f"{path}: nothing to add")
            continue
        note = " ".join(notes)
        record["note"] = f"{record['note']} {note}" if record.get("note") else note
        path.write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
        print(f"rescored {path}: {note}")
    return 0


def _relative(path: Path) -> str:
    """The path relative to the repository root (shared data reads `../shared/...`)."""
    from backends.shared_data import REPO_ROOT

    return os.path.relpath(path.resolve(), REPO_ROOT)


if __name__ == "__main__":
    sys.exit(main())
