"""The task registry, the CLI's error handling, the result schema, the report and perf's
pure parts, without a real model."""

import json

import numpy as np
import pytest

from benchmarks.__main__ import _parser, main, write_record
from benchmarks.knn_vectors import hidden_like, tiled
from benchmarks.perf import knn_store, labelled, latency_ratios, ratings, synthetic_votes
from benchmarks.report import README_END, README_START, headline, render, table, update_readme
from benchmarks.results import Result, Run, row_kind
from benchmarks.runs import CLOZE_NONCES, STAND_IN
from benchmarks.tasks import TASKS, get_task


def test_every_task_is_declared_with_metrics_and_a_runner():
    for task in TASKS.values():
        assert task.metrics and task.version >= 1
        assert callable(task.run_function())


def test_unknown_task_suggests_the_close_name():
    with pytest.raises(ValueError, match=r"did you mean 'chimera'\? available: chimera, cloze"):
        get_task("chimeras")


def test_cli_reports_bad_names_without_a_traceback(capsys):
    assert main(["clozee"]) == 2
    assert "did you mean 'cloze'" in capsys.readouterr().err
    assert main(["cloze", "--learner", "centriod"]) == 2
    assert "did you mean 'centroid'" in capsys.readouterr().err
    assert main(["cloze", "--data", "no/such.jsonl"]) == 2


def _refused(capsys, *argv: str) -> str:
    """The one-line argparse error a bad command line gets (exit 2, no traceback)."""
    with pytest.raises(SystemExit) as exit_:
        _parser().parse_args(list(argv))
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "option, value",
    [
        ("--limit", "-1"), ("--limit", "0"), ("--limit", "1.5"), ("--offset", "-5"),
        ("--shots", "-1"), ("--shots", "0"), ("--shots", "inf"), ("--shots", "nan"),
        ("--shots", "1.9"), ("--shots", "1,1.9"), ("--shots", "1,1"), ("--shots", ","),
        ("--max-new-tokens", "0"), ("--max-new-tokens", "-1"), ("--threads", "-1"),
        ("--threads", "0"), ("--workers", "0"), ("--seed", "-1"), ("--tt-steps", "-1"),
        ("--tt-steps", "501"), ("--tt-lr", "0"), ("--tt-lr", "nan"), ("--tt-lr", "2"),
        ("--tie-margin", "-0.1"), ("--tie-margin", "inf"), ("--knn-sizes", "100"),
        ("--vote-sizes", "0"),
    ],
)  # fmt: skip
def test_cli_refuses_bad_numbers_before_any_work(capsys, option, value):
    line = _refused(capsys, "defgen", f"{option}={value}")
    assert line.startswith(f"python -m benchmarks: error: argument {option}: ")


def test_cli_reads_whole_numbers_and_keeps_the_defaults():
    args = _parser().parse_args(["perf", "--knn-sizes", "1e4,2000", "--shots", "1,3"])
    assert args.knn_sizes == (10_000, 2000) and args.shots == (1, 3)
    assert (args.limit, args.offset, args.threads, args.workers) == (None, 0, None, 1)
    args = _parser().parse_args(["chimera", "--limit", "2.0", "--offset", "0", "--tt-steps", "0"])
    assert (args.limit, args.offset, args.tt_steps) == (2, 0, 0)


def test_cli_checks_the_json_destination_before_the_run(capsys, tmp_path):
    line = _refused(capsys, "chimera", "--json", str(tmp_path))
    assert "argument --json:" in line and "is a folder" in line
    line = _refused(capsys, "chimera", "--json", str(tmp_path / "no" / "run.json"))
    assert "argument --json:" in line and "does not exist" in line
    (tmp_path / "file").write_text("kept")
    line = _refused(capsys, "chimera", "--json", str(tmp_path / "file" / "run.json"))
    assert "is not a folder" in line
    old = tmp_path / "old.json"
    old.write_text("{}")  # a record there is replaced, as the README's commands do
    assert _parser().parse_args(["chimera", "--json", str(old)]).json == old


def test_cli_refuses_a_json_record_over_its_own_data(capsys, tmp_path):
    data = tmp_path / "items.txt"
    data.write_text("kept")
    argv = ["chimera", "--learner", "centroid", "--data", str(data), "--json", str(data)]
    assert main(argv) == 2
    assert "is a --data file" in capsys.readouterr().err and data.read_text() == "kept"


def test_cli_usage_and_unknown_task_name_the_commands(capsys):
    line = _refused(capsys)
    assert line.endswith("the following arguments are required: task")
    assert main(["zzz"]) == 2
    err = capsys.readouterr().err
    assert "unknown task 'zzz'; available: chimera, " in err
    assert ", report, rescore, " in err


def test_unknown_name_message_punctuates_its_parts():
    from backends.registry import unknown_name_message

    message = unknown_name_message("learner", "zzz", ["b", "a"])
    assert message == "unknown learner 'zzz'; available: a, b"
    assert unknown_name_message("learner", "centriod", ["centroid"]) == (
        "unknown learner 'centriod' — did you mean 'centroid'? available: centroid"
    )


def test_a_record_that_cannot_be_written_is_kept(capsys, tmp_path, monkeypatch):
    import tempfile

    run = Run("chimera", 1, "lm", "d.txt", [Result("centroid", 1, 1, {"x": 0.5})], "cmd")
    out = tmp_path / "run.json"
    out.write_text("old")
    assert write_record(run, out) == 0
    assert json.loads(out.read_text())["task"] == "chimera"
    assert "replaced" in capsys.readouterr().out and not list(tmp_path.glob(".*.part"))

    def fail(self, path):
        raise OSError("disk full")

    monkeypatch.setattr(Run, "write", fail)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "keep"))
    (tmp_path / "keep").mkdir()
    assert write_record(run, out) == 1
    assert "disk full" in capsys.readouterr().err
    (kept,) = (tmp_path / "keep").glob("benchmark-chimera-*.json")
    assert json.loads(kept.read_text())["results"][0]["x"] == 0.5


def test_result_record_is_flat_and_small(tmp_path):
    row = Result("centroid", 2, 10, {"spearman": 0.123456789, "other": float("nan")}, {"a": 1})
    assert row.record() == {
        "learner": "centroid",
        "shots": 2,
        "n": 10,
        "spearman": 0.1235,
        "other": None,
        "config": {"a": 1},
    }
    Run("chimera", 1, "lm", "d.txt", [row], "python -m benchmarks chimera").write(
        tmp_path / "r.json"
    )
    record = json.loads((tmp_path / "r.json").read_text())
    assert {"task", "lm", "data", "results", "machine", "date", "command"} <= set(record)


def test_report_renders_each_task_and_the_commands():
    rows = [
        {"learner": "token_tuning", "shots": 1, "n": 3, "mrr": 0.5, "config": {"label": "TT-2"}}
    ]
    run = {
        "task": "nonce", "lm": "tiny", "data": "x", "results": rows, "settings": {"seconds": 1},
        "command": "python -m benchmarks nonce", "machine": "m", "date": "d", "_file": "n.json",
    }  # fmt: skip
    text = render([run])
    assert "## nonce" in text and "`python -m benchmarks nonce`" in text
    assert table(rows)[2] == "| token_tuning | 1 | 3 | 0.5 | TT-2 |"
    assert "Note:" not in text
    assert "  Note: rows of an old model removed" in render(
        [{**run, "note": "rows of an old model removed"}]
    )


def test_nonce_strings_are_unknown_to_wordnet():
    from backends import lexicon

    try:
        lexicon.wordnet()
    except RuntimeError as err:
        pytest.skip(str(err))
    known = set(lexicon.single_word_lemmas())
    for nonce in {STAND_IN, *CLOZE_NONCES}:
        assert nonce not in known and not lexicon.senses(nonce)


def test_perf_knn_and_ratings_at_toy_sizes():
    import faiss

    faiss.omp_set_num_threads(1)  # OpenMP spin-waits are ruinous on a shared CPU
    assert hidden_like(10, 8, 0).shape == (10, 8)
    pool = hidden_like(700, 16, 0)
    rows = knn_store(pool[:600], pool[600:], sizes=(1000,), seed=0)  # 400 tiled copies
    flat, ivfpq, ivfpqr, disk, half, ratio, disk_ratio = (r.metrics for r in rows)
    assert [r.learner for r in rows] == [
        "flat",
        "ivfpq",
        "ivfpqr",
        "ivfpq+disk",
        "ivfpq+disk fp16",
        "flat/ivfpqr",
        "flat/ivfpq+disk",
    ]
    assert rows[0].n == 1000 and 0 <= ivfpq["recall_at_10"] <= 1 and ivfpqr["recall_at_k"] <= 1
    # at width 16 the codes are no smaller than the vectors; the ratio is what it is
    assert ratio["memory_ratio"] == pytest.approx(
        flat["bytes_per_vector"] / ivfpqr["bytes_per_vector"]
    )
    assert ivfpqr["recall_at_10"] > 0.5 and flat["queries_per_s"] > 0
    # 1000 keys, 512 candidates from 64 of 31 cells: the re-rank sees every key, so it is exact
    assert disk["recall_at_10_ties"] == 1 and disk["disk_touched"] == 1
    assert disk["disk_bytes_per_vector"] > 4 * 16 and half["disk_bytes_per_vector"] > 2 * 16
    assert disk_ratio["memory_ratio"] > 0 and disk["query_ms_cold"] > 0
    votes = synthetic_votes(500, 0)
    assert len(votes) == 500 and all(a != b for a, b, _ in votes)
    assert np.isfinite(ratings((500,), 0)[0].metrics["leaderboard_s"])


def test_tiled_keeps_the_computed_vectors_and_perturbs_the_copies():
    states = hidden_like(50, 8, 0)
    out = tiled(states, 120, seed=0)
    assert out.shape == (120, 8) and np.array_equal(out[:50], states)
    assert not np.array_equal(out[50:100], states)
    assert np.abs(out[50:100] - states).mean() < np.abs(states - states.mean(0)).mean()


def test_latency_ratio_is_slow_over_fast_on_the_same_shots():
    rows = [
        Result("token_tuning", 1, 1, {"seconds": 6.0}, case="learn"),
        Result("college", 1, 1, {"seconds": 0.5}, case="learn"),
        Result("college", 3, 1, {"seconds": 0.5}, case="learn"),  # no TT row at 3: no ratio
        Result("token_tuning", 1, 1, {"seconds": 99.0}, case="learn, first call"),
    ]
    (ratio,) = latency_ratios(rows, "token_tuning", "college")
    assert ratio.learner == "token_tuning/college" and ratio.shots == 1
    assert ratio.metrics["ratio"] == pytest.approx(12.0)


def test_perf_rows_say_they_are_perf_and_older_records_are_read_by_case_or_slash():
    (ratio,) = latency_ratios(
        [
            Result("a", 1, 1, {"seconds": 2.0}, case="learn"),
            Result("b", 1, 1, {"seconds": 1.0}, case="learn"),
        ],
        "a",
        "b",
    )
    assert ratio.kind == "perf" and ratio.record()["kind"] == "perf"
    assert "kind" not in Result("centroid", 1, 5, {"mrr": 0.1}).record()
    assert row_kind({"learner": "centroid", "shots": 1, "n": 5}) == "learner"
    assert row_kind({"learner": "process", "shots": None, "n": 1, "case": "peak memory"}) == "perf"
    assert row_kind({"learner": "token_tuning/college", "shots": 1, "n": 1}) == "perf"
    assert row_kind({"learner": "lm", "shots": None, "n": 1, "kind": "perf"}) == "perf"


def test_headline_compares_learners_at_a_shared_n(tmp_path):
    runs = [
        {"task": "nonce", "results": [
            {"learner": "centroid", "shots": 1, "n": 700, "mrr": 0.01, "median_rank": 9000},
            {"learner": "token_tuning", "shots": 1, "n": 100, "mrr": 0.02, "median_rank": 5000},
            {"learner": "centroid", "shots": 1, "n": 10, "mrr": 0.9, "median_rank": 1},
        ]},
        {"task": "perf", "results": [{"learner": "college", "shots": 1, "n": 1, "case": "learn"}]},
        {"task": "nonce", "results": [{"learner": "lm", "shots": 1, "n": 700, "kind": "perf"}]},
    ]  # fmt: skip
    lines = headline(runs)
    assert lines[0] == "| learner | Nonce MRR | median rank |"
    assert lines[2] == "| centroid | 0.01 | 9000 |"
    assert lines[3] == "| token_tuning | 0.02 (n=100) | 5000 (n=100) |"
    assert lines[-1] == "Items per column: nonce n=700."
    # once both learners share an n, the column compares them there
    runs[0]["results"].append(
        {"learner": "centroid", "shots": 1, "n": 100, "mrr": 0.03, "median_rank": 7000}
    )
    lines = headline(runs)
    assert lines[2] == "| centroid | 0.03 | 7000 |" and lines[3] == "| token_tuning | 0.02 | 5000 |"
    assert lines[-1] == "Items per column: nonce n=100."
    # a variant measured on fewer items (not a shipped learner) does not pull a column down
    runs[0]["results"].append(
        {"learner": "college (quoted examples)", "shots": 1, "n": 10, "mrr": 0.5, "median_rank": 2}
    )
    lines = headline(runs)
    assert lines[-1] == "Items per column: nonce n=100."
    assert lines[4] == "| college (quoted examples) | 0.5 (n=10) | 2 (n=10) |"
    # of two runs of a learner at the same n, the newer one's row, whichever file came first
    newer = {"task": "nonce", "date": "2026-11-27 09:00 UTC", "results": [
        {"learner": "token_tuning", "shots": 1, "n": 100, "mrr": 0.04, "median_rank": 4000},
    ]}  # fmt: skip
    runs[0]["date"] = "2026-11-26 09:00 UTC"
    for order in ([newer, *runs], [*runs, newer]):
        assert "| token_tuning | 0.04 | 4000 |" in headline(order)
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_START}\nold\n{README_END}\nrest\n")
    update_readme(lines, readme)
    text = readme.read_text()
    assert "old" not in text and lines[2] in text and text.endswith("rest\n")


def test_every_learners_config_record_is_plain_json():
    import json

    from backends.learners import learner_names
    from benchmarks.runs import RunOptions, describe_config

    options = RunOptions(data=(), learners=tuple(learner_names()))
    for name in learner_names():
        json.dumps(describe_config(name, options))  # CollegeConfig holds a Path, for one


def test_held_out_runs_are_reported_apart_from_the_dev_headline():
    from benchmarks.report import headline, render

    def run(data, value):
        rows = [{"learner": "college", "shots": 3, "n": 30, "identified": value, "samples": [{}]}]
        return {
            "task": "defgen", "lm": "tiny", "data": data, "results": rows, "settings": {},
            "command": "c", "machine": "m", "date": "d", "_file": f"{data}.json",
        }  # fmt: skip

    dev, test = run("benchmarks/sets/defgen.dev.jsonl", 0.4), run("sets/defgen.test.jsonl", 0.9)
    text = render([dev, test])
    head, held = text.split("## Held-out test splits")
    assert "0.4" in head and "0.9" not in head.split("## defgen")[0]
    assert "| college | 3 | 30 | 0.9 |" in held.split("\n## ")[0]
    assert "samples |" not in text  # per-item definitions stay in the records
    assert "0.9" not in "\n".join(headline([dev]))
    # the dev words in written sentences: their own section, not the headline's columns
    sentences = run("benchmarks/sets/defgen.dev.natural.jsonl", 0.6125)
    text = render([dev, sentences])
    head, rest = text.split("## Written sentences (development data)")
    assert "0.6125" not in head and "| college | 3 | 30 | 0.6125 |" in rest.split("\n## ")[0]
    assert "| college | 3 | 30 | 0.4 |" in rest.split("\n## defgen")[1]


def test_a_run_from_a_tasks_held_out_index_is_reported_as_held_out():
    from benchmarks.report import held_out
    from benchmarks.runs import limited

    assert limited(list(range(10)), 3, offset=4) == [4, 5, 6]
    assert limited(list(range(10)), None, offset=8) == [8, 9]
    start = TASKS["chimera"].held_out_from
    chimera = {"task": "chimera", "data": "chimeras.dataset.l2.tokenised.train.txt"}
    assert held_out({**chimera, "settings": {"offset": start}})
    assert not held_out({**chimera, "settings": {"offset": 0}})
    assert not held_out({**chimera, "settings": {}})  # records from before --offset
    assert not held_out({"task": "defgen", "data": "defgen.dev.jsonl", "settings": {"offset": 500}})


def test_only_a_tasks_newest_version_is_compared():
    # DefGen version 3 changed decoding and what counts as degenerate: a version-2 record
    # is listed apart, never in the headline or the task's table beside version 3's.
    from benchmarks.report import headline, newest_versions, render

    def run(version, value):
        rows = [{"learner": "college", "shots": 3, "n": 15, "identified": value}]
        return {
            "task": "defgen", "version": version, "lm": "tiny", "data": "defgen.dev.jsonl",
            "results": rows, "settings": {}, "command": "c", "machine": "m", "date": "d",
            "_file": f"v{version}.json",
        }  # fmt: skip

    old, new = run(2, 0.123), run(3, 0.456)
    assert newest_versions([old, new]) == ([new], [old])
    text = render([old, new])
    current, older = text.split("## Older task versions")
    assert "0.456" in current and "0.123" not in current
    assert "`v2.json` (defgen version 2)" in older and "0.123" in older
    assert "0.123" not in "\n".join(headline(newest_versions([old, new])[0]))


def test_every_committed_run_record_is_one_the_report_reads():
    """`python -m benchmarks report` reads every *.json in benchmarks/results: a record of
    another form there (a tool's own output) would stop it, so such files live elsewhere."""
    from benchmarks.report import RESULTS_DIR, headline, load_runs, newest_versions

    runs = load_runs(RESULTS_DIR)
    assert runs and all({"task", "results", "command", "machine", "date"} <= set(r) for r in runs)
    assert "## How these numbers were made" in render(runs)
    current, _ = newest_versions(runs)
    assert headline(current)


def test_no_committed_record_or_report_holds_a_slur():
    """Records keep every definition a run wrote, and some predate the slur guard
    (Decoding.block_slurs): none may carry a blocked word into the repository."""
    import re
    from pathlib import Path

    from backends.blocked_words import SLURS

    root = Path(__file__).resolve().parents[2]
    files = [*(root / "benchmarks" / "results").rglob("*.json"), root / "benchmarks" / "RESULTS.md"]
    files += [
        root / "README.md",
        *(root / "assets").rglob("*.md"),
        *(root / "assets").rglob("*.json*"),
    ]
    pattern = re.compile(r"\b(" + "|".join(sorted(SLURS)) + r")\b", re.IGNORECASE)
    found = [
        str(f.relative_to(root)) for f in files if pattern.search(f.read_text(errors="ignore"))
    ]
    assert not found


def test_perf_rows_of_a_gpu_run_name_the_device_and_a_click_names_its_own():
    rows = [
        Result("centroid", 1, 1, {"seconds": 0.1}, case="learn", kind="perf"),
        Result("token_tuning", 1, 1, {"seconds": 0.3}, {"label": "TT-4"}, "learn", "perf"),
        Result("learn click", 3, 6, {"seconds": 3.4}, {"device_name": "CPU, 16 cores"},
               "learn click, all learners", "perf"),
    ]  # fmt: skip
    labels = [r.config["label"] for r in labelled(rows, "H100")]
    assert labels == ["H100", "TT-4", "CPU, 16 cores"]
    assert "label" not in labelled([Result("centroid", 1, 1, {}, case="learn")], "")[0].config


def test_define_timings_are_medians_of_interleaved_rounds(monkeypatch):
    # One timing of each moved the six-learner batch's ratio by ~20% between runs on an
    # H200: each figure is now the median of DEFINE_ROUNDS rounds, a ratio the median of
    # each round's own. A scripted clock (1 s, 2 s, ... per timed call) checks the sums.
    import benchmarks.perf as perf
    from benchmarks.runs import RunOptions
    from tests.conftest import build_tiny_lm  # Gemma-shaped: every CPU kernel applies

    ticks = iter(range(1, 10_000))
    monkeypatch.setattr(perf, "timed", lambda fn, *a, **k: (float(next(ticks)), fn(*a, **k)))
    rows = perf.definition_batching(build_tiny_lm(), RunOptions((), ("centroid", "prompting")))
    first = {r.case: r for r in rows if r.learner == "all (fp32 head)"}
    # each round: the batch, centroid alone, prompting alone, the batch read the other way
    assert perf.DEFINE_ROUNDS == 3 and first["define, one batch"].config["rounds"] == 3
    assert first["define, one batch"].metrics == {"seconds": 5.0, "min_s": 1.0, "max_s": 9.0}
    assert first["define, one learner (mean)"].metrics["seconds"] == 6.5  # of 2.5, 6.5, 10.5
    assert first["define, one by one"].metrics["seconds"] == 13.0
    ratio = first["define, batch of all / one learner"].metrics["ratio"]
    assert ratio == pytest.approx(5 / 6.5)  # the middle of 1/2.5, 5/6.5, 9/10.5
    slowest = first["define, batch of all / slowest learner alone"].metrics["ratio"]
    assert slowest == pytest.approx(5 / 7)
    other = next(
        r for r in first.values() if r.case.startswith("define, batch of all / one learner,")
    )
    assert other.metrics["ratio"] == pytest.approx(8 / 6.5) and other.metrics["same_texts"]
    assert all(r.metrics["matching"] == 1 for r in rows if r.case.endswith("word for word"))
