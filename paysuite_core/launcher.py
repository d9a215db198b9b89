"""Start and stop the stub as a subprocess: for the other parts of paysuite and for tests.

The stub announces itself on stdout (``paysuite stub listening on URL``); the launcher waits for
that line and a ``GET /healthz``, and on failure raises ``StubStartError`` carrying the stub's
stderr, so a broken start explains itself. The stub's stderr goes to ``workdir/stub.stderr.log``
(never a pipe that could fill up and stall it).

``start_stub(own_session=True)`` keeps a terminal's Ctrl-C (SIGINT to the foreground process
group) away from the stub, so a caller that handles Ctrl-C can still use it while it winds down
(``paysuite load`` reconciles against its bundled stub); ``stop_stub`` still ends it, and on
Linux it gets SIGTERM when the process that started it dies, so it cannot outlive its caller.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from paysuite_core.target_config import TargetConfig, load_target_config

LISTENING_PREFIX = "paysuite stub listening on "
CREDENTIALS_PREFIX = "credentials: "


class StubStartError(RuntimeError):
    """The stub did not come up; the message includes its stderr."""


@dataclass
class RunningStub:
    root_url: str  # http://127.0.0.1:PORT
    base_url: str  # root_url + "/api"
    credentials_path: Path
    db_path: Path
    process: subprocess.Popen[str]
    stderr_path: Path | None = None
    _reader: threading.Thread | None = field(default=None, repr=False)

    def config(self) -> TargetConfig:
        """The credentials file, parsed: what a client needs to use this stub."""
        return load_target_config(self.credentials_path)

    def stderr_text(self) -> str:
        if self.stderr_path is None or not self.stderr_path.exists():
            return ""
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


def _healthy(root_url: str, timeout_s: float) -> bool:
    try:
        with urllib.request.urlopen(f"{root_url}/healthz", timeout=timeout_s) as response:
            return bool(response.status == 200)
    except OSError:
        return False


#: prctl(2) option: the signal the kernel sends a child when its parent dies
_PR_SET_PDEATHSIG = 1


def end_with_parent(parent_pid: int, signum: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A ``preexec_fn`` (Linux; None elsewhere): ``signum`` to the child when the starting
    thread's process dies; a child in its own session no longer goes down with the terminal's
    process group, so it needs this not to outlive its parent."""
    if not sys.platform.startswith("linux"):
        return None

    def preexec() -> None:
        # The parent's signal to stop the child must work even when the parent itself was
        # started with it ignored (a background job of a script, some CI runners): an ignored
        # disposition is inherited across exec, and the child would run on to its end.
        signal.signal(signum, signal.SIG_DFL)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum)
        if os.getppid() != parent_pid:  # the parent died before prctl: nobody to outlive
            os._exit(1)

    return preexec


def start_stub(
    workdir: Path,
    *,
    faults: Sequence[str] = (),
    variants: Sequence[str] = (),
    extra_args: Sequence[str] = (),
    stub_config: Mapping[str, Any] | None = None,
    startup_timeout_s: float = 20,
    own_session: bool = False,
) -> RunningStub:
    """Run ``python -m stub_server`` on a free port with its database in ``workdir``.

    ``own_session``: in a session (process group) of its own, out of reach of the terminal's
    Ctrl-C, and (Linux) ended with SIGTERM if this process dies without ``stop_stub``.
    """
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    db_path = workdir / "stub.db"
    credentials_path = workdir / "credentials.yaml"
    command = [
        sys.executable, "-m", "stub_server", "--port", "0",
        "--db", str(db_path), "--credentials", str(credentials_path),
    ]  # fmt: skip
    if stub_config is not None:
        config_path = workdir / "stub.yaml"
        config_path.write_text(yaml.safe_dump(dict(stub_config), sort_keys=False), "utf-8")
        command += ["--config", str(config_path)]
    for name in faults:
        command += ["--fault", name]
    for name in variants:
        command += ["--variant", name]
    command += list(extra_args)
    stderr_path = workdir / "stub.stderr.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    with open(stderr_path, "w", encoding="utf-8") as stderr:
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=own_session,
            preexec_fn=end_with_parent(os.getpid()) if own_session else None,
        )
    lines: list[str] = []
    announced = threading.Event()

    def read_stdout() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith(CREDENTIALS_PREFIX):
                announced.set()
        announced.set()  # EOF: the process ended

    reader = threading.Thread(target=read_stdout, name="stub-stdout", daemon=True)
    reader.start()
    stub: RunningStub | None = None
    deadline = time.monotonic() + startup_timeout_s
    try:
        announced.wait(startup_timeout_s)
        root_url = next(
            (line[len(LISTENING_PREFIX) :] for line in lines if line.startswith(LISTENING_PREFIX)),
            None,
        )
        if root_url is not None:
            stub = RunningStub(
                root_url=root_url,
                base_url=f"{root_url}/api",
                credentials_path=credentials_path,
                db_path=db_path,
                process=process,
                stderr_path=stderr_path,
                _reader=reader,
            )
            while time.monotonic() < deadline and process.poll() is None:
                if _healthy(root_url, 2.0):
                    return stub
                time.sleep(0.05)
    except KeyboardInterrupt:  # Ctrl-C while it starts: a stub in its own session would stay
        process.kill()
        process.wait(5)
        raise
    if process.poll() is None:
        process.kill()
    process.wait(5)
    stderr_text = stderr_path.read_text(encoding="utf-8", errors="replace").strip()
    raise StubStartError(
        f"the stub did not come up within {startup_timeout_s:g} s"
        f" (exit status {process.returncode}); command: {' '.join(command)}\n"
        f"stdout: {' | '.join(lines) or '(nothing)'}\nstderr:\n{stderr_text or '(nothing)'}"
    )


def stop_stub(stub: RunningStub, *, kill: bool = False, timeout_s: float = 10) -> int:
    """SIGTERM (graceful) or SIGKILL the stub; return its exit status."""
    process = stub.process
    if process.poll() is None:
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        except KeyboardInterrupt:  # Ctrl-C while it winds down: it must not be left behind
            process.kill()
            process.wait(5)
            raise
    if stub._reader is not None:
        stub._reader.join(2)
    if process.stdout is not None:
        process.stdout.close()
    return int(process.returncode)


@contextmanager
def running_stub(workdir: Path, **kwargs: Any) -> Iterator[RunningStub]:
    """``start_stub`` ... ``stop_stub``, whatever happens in between."""
    stub = start_stub(workdir, **kwargs)
    try:
        yield stub
    finally:
        stop_stub(stub)
