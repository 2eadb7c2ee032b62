"""Votes to the Hugging Face Hub, tested up to the upload call: a local stand-in replaces only
HfApi's network methods and keeps what they were given. Nothing is uploaded anywhere."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import pytest

from demo.__main__ import main
from demo.callbacks import Callbacks
from demo.exports import EXPORT_FIELDS, vote_record
from demo.hub import HubMirror, push_to_hub
from demo.identity import Who
from demo.settings import DemoSettings
from demo.store import Item, Matchup, VoteStore


class RecordingApi:
    """The network boundary: HfApi's create_repo, upload_folder and create_commit, recorded."""

    def __init__(self, keep: Path) -> None:
        self.keep, self.calls = keep, []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        return SimpleNamespace(repo_id=repo_id)

    def upload_folder(self, **kwargs):
        self.calls.append(("upload_folder", kwargs["repo_id"], kwargs))
        shutil.copytree(kwargs["folder_path"], self.keep)  # the caller's folder is temporary
        return SimpleNamespace(commit_url=f"https://huggingface.co/datasets/{kwargs['repo_id']}")

    def create_commit(self, **kwargs):
        self.calls.append(("create_commit", kwargs["repo_id"], kwargs))
        return SimpleNamespace(commit_url="https://huggingface.co/commit/1")

    def run_as_future(self, fn, *args, **kwargs):
        """The scheduler's thread pushes through this; run it here (no thread pool)."""
        done = Future()
        done.set_result(fn(*args, **kwargs))
        return done


def _store(tmp_path: Path, votes: int) -> VoteStore:
    store = VoteStore.open(tmp_path / "votes.sqlite")
    matchup = Matchup(Item("blick", ("A blick sat.",)), "centroid", "cache", "x", "y", "lm")
    for k in range(votes):
        battle = store.create_battle(matchup, annotator=f"anon:{k}")
        store.record_vote(battle.id, "a", annotator=f"anon:{k}")
    return store


def test_push_uploads_a_loadable_parquet_dataset(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    store = _store(tmp_path, 3)
    api = RecordingApi(tmp_path / "uploaded")
    assert push_to_hub(store, "me/nonce-votes", api=api).endswith("datasets/me/nonce-votes")
    (create, repo, options), (upload, _, upload_options) = api.calls
    assert (create, repo, upload) == ("create_repo", "me/nonce-votes", "upload_folder")
    assert options == {"repo_type": "dataset", "private": True, "exist_ok": True}
    assert upload_options["repo_type"] == "dataset"
    uploaded = sorted(str(p.relative_to(api.keep)) for p in api.keep.rglob("*") if p.is_file())
    assert uploaded == ["README.md", "data/votes.parquet"]
    loaded = datasets.load_dataset(str(api.keep), split="train", cache_dir=str(tmp_path / "c"))
    assert loaded.num_rows == 3 and tuple(loaded.column_names) == EXPORT_FIELDS
    with pytest.raises(ValueError, match="owner/name"):
        push_to_hub(store, "no-owner", api=api)
    store.close()


def test_the_cli_refuses_a_bad_repo_before_opening_anything(tmp_path, capsys):
    assert main(["export", "--push-to-hub", "not a repo", "--db", str(tmp_path / "x")]) == 1
    assert "not a Hugging Face repo id" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_mirror_appends_each_vote_and_commits_the_folder(tmp_path):
    api = RecordingApi(tmp_path / "unused")
    folder = tmp_path / "mirror"
    mirror = HubMirror.start("me/nonce-votes", folder, every_minutes=60, api=api)
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"word": "blick", "examples": ["A blick sat."]}))
    settings = DemoSettings(cache_dir=tmp_path, arena_learners=("centroid", "prompting"))
    cb = Callbacks(settings.with_(arena_items=pool), mirror=mirror)
    cb.arena.prefill(cb.arena.pool, {"centroid": "x", "prompting": "y"})
    alice = Who(session="alice")
    for choice in ("a", "tie"):
        cb.vote(cb.battle_pool(alice)["battle_id"], choice, alice)
    lines = mirror.file.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [vote_record(v) for v in cb.store.votes()]
    mirror.scheduler.push_to_hub()  # what the scheduler's thread does every 60 minutes
    (kind, repo, created), *commits = api.calls  # its thread may also have pushed at start
    assert kind == "create_repo" and repo == "me/nonce-votes"
    assert created["repo_type"] == "dataset" and created["private"] is True
    assert {c[0] for c in commits} == {"create_commit"} and commits[-1][1] == "me/nonce-votes"
    sent = {op.path_in_repo for c in commits for op in c[2]["operations"]}
    assert sent == {"README.md", f"data/{mirror.file.name}"}
    last = {op.path_in_repo for op in commits[-1][2]["operations"]}
    assert f"data/{mirror.file.name}" in last  # the votes went in the last push
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "path: data/*.jsonl" in card
    cb.close()  # stops the scheduler too
