"""Real server processes for tests: `project/scripts/serve.sh` (uvicorn + qcluster).

The test database is shared with them through DATABASE_URL (tests that use
them commit their data: `transactional_db`). Ports are ephemeral.
"""

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from django.db import connection

from devtools import processes
from devtools.loopback_llm import loopback_env

ROOT = Path(__file__).resolve().parents[1]


def database_url() -> str:
    """The test database as a URL that child processes can open."""
    return processes.database_url(connection.settings_dict)


def production_env(**env: str) -> dict[str, str]:
    """The environment of a server process started by a test as in production (DEBUG off, a fresh secret,
    a cluster of its own, the test database, the loopback model allowed by name), with `env` on top."""
    import secrets
    import uuid

    return {
        **{k: v for k, v in os.environ.items() if k not in {"DJANGO_ALLOW_ASYNC_UNSAFE"}},
        "DATABASE_URL": database_url(),
        "Q_CLUSTER_NAME": f"test-{uuid.uuid4().hex[:8]}",
        "Q_POLL_SECONDS": "0.2",
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(40),
        "SECURE_SSL_REDIRECT": "false",
        "STATIC_MANIFEST": "false",
        "ALLOWED_HOSTS": "127.0.0.1",
        "LOG_LEVEL": "WARNING",
        **loopback_env(dict(os.environ)),  # DEBUG is off: the loopback model is allowed by name
        **env,
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Served:
    """One `serve.sh` run in its own process group, stopped (TERM, then KILL) on exit."""

    def __init__(self, *, tmp_path: Path, name: str = "serve", **env: str):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / f"{name}.log"
        inherited = {
            k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
        }
        self.env = {
            **inherited,
            "DATABASE_URL": database_url(),
            "VAR_DIR": str(tmp_path / f"{name}-var"),
            "HOST": "127.0.0.1",
            "PORT": str(self.port),
            "WEB_CONCURRENCY": "2",
            "Q_POLL_SECONDS": "0.2",
            "LOG_LEVEL": "WARNING",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "CSRF_TRUSTED_ORIGINS": f"http://127.0.0.1:{self.port}",
            **loopback_env(dict(os.environ)),  # DEBUG is off: the loopback model is allowed by name
            **env,
        }
        self.process: subprocess.Popen | None = None

    def start(self, *, timeout: float = 120) -> "Served":
        log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            ["bash", "project/scripts/serve.sh"],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve.sh exited ({self.process.returncode}):\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"serve.sh did not listen within {timeout} s:\n{self.log()}")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-8000:] if self.log_path.exists() else ""

    def __enter__(self) -> "Served":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
