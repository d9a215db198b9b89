"""Launch the foreign implementations (tests/foreign/*.py) as subprocesses for self-tests.

Why a subprocess: the fixtures must be other programs, as a real target is, reached only over
HTTP through the target configuration each writes. Their stdout and stderr go to files, never to
pipes, so a chatty server (``not_api.py`` logs every request) can never block on a full pipe.

Usage in a test module::

    import pytest
    from foreignkit import Foreign, start_foreign

    @pytest.fixture(scope="module")
    def independent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Foreign]:
        server = start_foreign("independent", tmp_path_factory.mktemp("independent"))
        yield server
        server.stop()

    def test_something(independent: Foreign) -> None:
        config = load_target_config(independent.config_path)  # base_url, applications, ...

``spawn_foreign`` starts without waiting, so that many servers can start in parallel; its
``ready()`` waits like ``start_foreign`` does.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

FOREIGN_DIR = Path(__file__).resolve().parent
SCRIPTS = ("independent", "static_mock", "not_api", "dies")
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
START_TIMEOUT_S = 30.0


class ForeignStartError(RuntimeError):
    """The server did not announce itself in time; the message carries its stderr."""


@dataclass
class Foreign:
    """A running foreign implementation."""

    script: str
    base_url: str  # from its target configuration, e.g. http://127.0.0.1:PORT/api
    root_url: str  # from its listening line, e.g. http://127.0.0.1:PORT
    config_path: Path
    process: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout_s: float = 5.0) -> int:
        """SIGTERM, then SIGKILL if it lingers; returns the exit status. Safe to call twice."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout_s)
        return self.process.returncode

    def __enter__(self) -> Foreign:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@dataclass
class PendingForeign:
    """A started process that has not yet been seen listening."""

    script: str
    config_path: Path
    process: subprocess.Popen[bytes]
    stdout_path: Path
    stderr_path: Path

    def ready(self, timeout_s: float = START_TIMEOUT_S) -> Foreign:
        """Wait for ``listening on URL``; on exit or time-out, kill and raise with the stderr."""
        deadline = time.monotonic() + timeout_s
        while True:
            match = LISTENING.search(self.stdout_path.read_text(encoding="utf-8", errors="replace"))
            if match and self.config_path.exists():
                break
            if self.process.poll() is not None or time.monotonic() > deadline:
                reason = (
                    f"exited with status {self.process.returncode}"
                    if self.process.poll() is not None
                    else f"did not listen within {timeout_s:g} s"
                )
                self.process.kill()
                self.process.wait()
                stderr = self.stderr_path.read_text(encoding="utf-8", errors="replace")
                raise ForeignStartError(f"{self.script}.py {reason}; stderr:\n{stderr}")
            time.sleep(0.02)
        config = yaml.safe_load(self.config_path.read_text(encoding="utf-8"))
        return Foreign(
            script=self.script,
            base_url=str(config["base_url"]).rstrip("/"),
            root_url=match.group(1),
            config_path=self.config_path,
            process=self.process,
            stdout_path=self.stdout_path,
            stderr_path=self.stderr_path,
        )


def spawn_foreign(script: str, tmp_path: Path, *args: str) -> PendingForeign:
    """Start ``tests/foreign/<script>.py --port 0 --config-out ... *args`` without waiting."""
    name = script.removesuffix(".py")
    path = FOREIGN_DIR / f"{name}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no foreign implementation {path}")
    run_dir = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=tmp_path))
    config_path = run_dir / "target.yaml"
    stdout_path, stderr_path = run_dir / "stdout.txt", run_dir / "stderr.txt"
    command = [sys.executable, str(path), "--port", "0", "--config-out", str(config_path), *args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with stdout_path.open("wb") as out, stderr_path.open("wb") as err:
        process = subprocess.Popen(
            command, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=run_dir, env=env
        )
    return PendingForeign(name, config_path, process, stdout_path, stderr_path)


def start_foreign(
    script: str, tmp_path: Path, *args: str, timeout_s: float = START_TIMEOUT_S
) -> Foreign:
    """Start a foreign implementation and wait (at most ``timeout_s``) until it listens."""
    return spawn_foreign(script, tmp_path, *args).ready(timeout_s)
