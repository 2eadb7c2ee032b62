"""A throwaway PostgreSQL cluster on a loopback port, for load and store tests.

Uses Debian's server binaries (`apt-get install postgresql`: /usr/lib/postgresql/*/bin). The
server refuses to run as root, so under root the cluster belongs to the package's `postgres`
user (started through `runuser`). Everything lives in one temporary folder, removed on stop.

    with TempPostgres() as pg:
        store = VoteStore.open(pg.url)
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)


def server_bin() -> Path | None:
    """The folder holding initdb and pg_ctl, or None when the server is not installed."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[4]))
    for folder in reversed(folders):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def missing_reason() -> str | None:
    """Why a cluster cannot start here (None when it can)."""
    if server_bin() is None:
        return "PostgreSQL server binaries (initdb, pg_ctl) not found: apt-get install postgresql"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser: cannot start PostgreSQL as another user"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class TempPostgres:
    """Start on enter, stop and delete on exit; `url` is a SQLAlchemy URL to its database."""

    def __init__(self, port: int | None = None) -> None:
        reason = missing_reason()
        if reason:
            raise RuntimeError(reason)
        self.bin = server_bin()
        self.port = port or _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="nonce-pg-"))
        self.data = self.root / "data"
        self.url = f"postgresql+psycopg://nonce@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:  # postgres refuses root: run as the package's user
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed: {(done.stderr or done.stdout).strip()[-500:]}")

    def start(self) -> TempPostgres:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run("initdb", "-D", str(self.data), "-U", "nonce", "--auth=trust", "-E", "UTF8")
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c max_connections=200"
        )
        log_file = str(self.root / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log_file, "-w", "start")
        log.info("throwaway PostgreSQL on 127.0.0.1:%d (%s)", self.port, self.root)
        return self

    def stop(self) -> None:
        try:
            if (self.data / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> TempPostgres:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *_exc) -> None:
        self.stop()
