"""Votes that outlive a Space: push an export to a Hugging Face dataset repo, and mirror each
new vote there every few minutes (huggingface_hub's CommitScheduler, as TTS Arena does).

The mirror appends every vote this process records to its own JSONL file (a fresh name per
process, so restarts never overwrite earlier files) inside a folder the scheduler uploads;
the folder's README.md card points `datasets.load_dataset` at all of them.

    url = push_to_hub(store, "me/nonce-votes")                 # once, from the CLI
    mirror = HubMirror.start("me/nonce-votes", folder)         # the app, NONCE_HUB_DATASET
    mirror.record(vote)
"""

from __future__ import annotations

import json
import logging
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from demo.exports import dataset_card, export_hf_dataset, vote_record
from demo.store import Vote, VoteStore
from demo.vocabulary import Judge

if TYPE_CHECKING:
    from huggingface_hub import CommitScheduler, HfApi

log = logging.getLogger(__name__)


def check_repo_id(repo_id: str) -> str:
    """'owner/name' as the Hub spells dataset repos; else ValueError (before any network)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ValueError(f"not a Hugging Face repo id: {repo_id[:80]!r} ({err})") from None
    if repo_id.count("/") != 1:
        raise ValueError(f"give the dataset repo as owner/name, got {repo_id[:80]!r}")
    return repo_id


def push_to_hub(
    store: VoteStore,
    repo_id: str,
    judge: Judge | None = None,
    api: HfApi | None = None,
    private: bool = True,
) -> str:
    """Export the votes as a Parquet dataset with its card and upload it in one commit; returns
    the commit URL. `api` defaults to HfApi() (token from HF_TOKEN or the CLI login)."""
    from huggingface_hub import HfApi

    check_repo_id(repo_id)
    api = api or HfApi()
    with tempfile.TemporaryDirectory(prefix="nonce-hub-") as folder:
        export_hf_dataset(store, folder, judge, fmt="parquet")
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        commit = api.upload_folder(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=folder,
            commit_message="Nonce Arena votes",
        )
    log.info("pushed votes to %s", repo_id)
    return str(getattr(commit, "commit_url", commit))


class HubMirror:
    """Appends each recorded vote to a JSONL file that a CommitScheduler uploads."""

    DATA_GLOB = "data/*.jsonl"

    def __init__(self, scheduler: CommitScheduler, folder: Path) -> None:
        self.scheduler, self.folder = scheduler, folder
        (folder / "data").mkdir(parents=True, exist_ok=True)
        self.file = folder / "data" / f"votes-{uuid.uuid4().hex}.jsonl"
        card = dataset_card(None, None, self.DATA_GLOB)
        with scheduler.lock:
            (folder / "README.md").write_text(card, encoding="utf-8")

    @classmethod
    def start(
        cls, repo_id: str, folder: str | Path, every_minutes: float = 5.0, api: Any = None
    ) -> HubMirror:
        """Create the dataset repo if needed and start pushing `folder` every few minutes."""
        from huggingface_hub import CommitScheduler

        check_repo_id(repo_id)
        root = Path(folder)
        scheduler = CommitScheduler(
            repo_id=repo_id,
            repo_type="dataset",
            folder_path=root,
            every=every_minutes,
            private=True,
            hf_api=api,
        )
        log.info("mirroring votes to %s every %s min", repo_id, every_minutes)
        return cls(scheduler, root)

    def record(self, vote: Vote) -> None:
        """Append one vote (under the scheduler's lock, so no upload reads half a line)."""
        line = json.dumps(vote_record(vote), ensure_ascii=False) + "\n"
        with self.scheduler.lock, self.file.open("a", encoding="utf-8") as handle:
            handle.write(line)

    def stop(self) -> None:
        self.scheduler.stop()
