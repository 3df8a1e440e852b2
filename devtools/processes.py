"""Real `qcluster` processes for the soak, the throughput benchmark and the
cluster tests, the DATABASE_URL that points them at a database, and the wait
for a started server to listen.

Each cluster runs in its own process group (a qcluster parent forks its
workers), so a kill takes the whole group down, like a crashed machine, and
no orphan worker outlives a stop.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from django.conf import settings as django_settings


def database_url(config: Mapping[str, Any]) -> str:
    """The DATABASE_URL of a Django database configuration (user and password URL-quoted)."""
    if str(config["ENGINE"]).endswith("sqlite3"):
        return f"sqlite:///{config['NAME']}"
    credentials = quote(config.get("USER") or "", safe="")
    if config.get("PASSWORD"):
        credentials += ":" + quote(config["PASSWORD"], safe="")
    host = config.get("HOST") or "127.0.0.1"
    return f"postgres://{credentials}@{host}:{config.get('PORT') or 5432}/{quote(str(config['NAME']), safe='')}"


def port_wait(port: int, process: subprocess.Popen, *, timeout: float, log: Path | None = None) -> None:
    """Return once something accepts connections on 127.0.0.1:`port`; RuntimeError (with the end of `log`)
    if `process`, the server started to listen there, exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while process.poll() is None and time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    what = "exited before listening" if process.poll() is not None else f"did not listen within {timeout:g} s"
    tail = log.read_text(errors="replace")[-2000:] if log else ""
    raise RuntimeError(f"the server for port {port} {what}: {tail}")


class QClusters:
    """Named qcluster processes started with `env` (plus per-start additions);
    each writes its output to `<log_dir>/<name>.log`, emptied at its first start
    and appended to across restarts."""

    def __init__(self, *, log_dir: Path, env: Mapping[str, str]) -> None:
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.env = dict(env)
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def log_path(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def start(self, name: str, **env: str) -> subprocess.Popen[bytes]:
        mode = "ab" if name in self.processes else "wb"
        with open(self.log_path(name), mode) as log:  # the child keeps its own descriptor
            process = subprocess.Popen(
                [sys.executable, "manage.py", "qcluster"],
                cwd=django_settings.BASE_DIR,
                env={**self.env, **env},
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes[name] = process
        return process

    def wait_running(self, name: str, *, timeout: float = 120.0) -> None:
        """Until the cluster says it is running; RuntimeError if it exits first."""
        deadline = time.monotonic() + timeout
        while b"running" not in self.log_path(name).read_bytes():
            if self.processes[name].poll() is not None:
                raise RuntimeError(f"qcluster exited: {self.tail(name)}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"qcluster did not start within {timeout:g} s: {self.tail(name)}")
            time.sleep(0.2)

    def alive(self, name: str) -> bool:
        return self.processes[name].poll() is None

    def tail(self, name: str, chars: int = 2000) -> str:
        return self.log_path(name).read_text(errors="replace")[-chars:]

    def kill(self, name: str) -> None:
        """SIGKILL to the cluster's whole process group."""
        process = self.processes[name]
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self, grace: float = 15.0) -> None:
        """SIGTERM to every cluster, SIGKILL to those still running after `grace`
        seconds, and to any worker left behind by a parent that died first."""
        for process in self.processes.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for name, process in self.processes.items():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self.kill(name)
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def logs(self, chars: int = 6000) -> str:
        return "\n".join(f"--- {name}.log\n" + self.tail(name, chars) for name in sorted(self.processes))
