"""`paysuite load` refuses bad input with exit 2 and a one-line reason, before any load."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from loadkit import run_load

from paysuite_core.launcher import RunningStub


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def _write_config(path: Path, base_url: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "base_url": base_url,
                "applications": [
                    {"client_id": "a", "client_secret": "b", "privilege": "read-write"}
                ],
            }
        )
    )
    return path


def test_non_loopback_target_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAYSUITE_ALLOW_REMOTE_TARGET", raising=False)
    config = _write_config(tmp_path / "c.yaml", "http://127.0.0.1:9/api")
    run = run_load(tmp_path, "--config", str(config), "--target", "http://10.1.2.3:8080/api")
    assert run.returncode == 2
    assert "refusing to send load to 10.1.2.3" in _one_line(run.stderr)
    # an exit past the arguments like the others: its reports say why nothing ran
    summary = run.summary()
    assert summary["verdict"] == "error" and summary["no_load"] is True, summary
    assert "PAYSUITE_ALLOW_REMOTE_TARGET=1" in summary["reason"]
    assert "refusing to send load" in (tmp_path / "load.html").read_text(encoding="utf-8")
    assert run.stdout.splitlines()[-1].startswith("paysuite: result: ERROR (exit 2): refusing")


def test_non_loopback_hostname_is_refused(tmp_path: Path) -> None:
    config = _write_config(tmp_path / "c.yaml", "https://api.example.com/api")
    run = run_load(tmp_path, "--config", str(config))
    assert run.returncode == 2
    assert "api.example.com" in _one_line(run.stderr)


def test_bad_config_is_a_usage_error(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("base_url: http://127.0.0.1:1/api\napplications: []\n")
    run = run_load(tmp_path, "--config", str(config))
    assert run.returncode == 2
    assert "applications" in _one_line(run.stderr)


def test_missing_config_file_is_a_usage_error(tmp_path: Path) -> None:
    run = run_load(tmp_path, "--config", str(tmp_path / "nope.yaml"))
    assert run.returncode == 2
    assert "nope.yaml" in _one_line(run.stderr)


def test_unreachable_loopback_port(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = _write_config(tmp_path / "c.yaml", f"http://127.0.0.1:{port}/api")
    run = run_load(tmp_path, "--config", str(config))
    assert run.returncode == 2
    assert "unreachable" in _one_line(run.stderr)


def test_wrong_credentials(load_stub: RunningStub, tmp_path: Path) -> None:
    config = _write_config(tmp_path / "c.yaml", load_stub.base_url)
    run = run_load(tmp_path, "--config", str(config))
    assert run.returncode == 2
    assert "refused the credentials" in _one_line(run.stderr)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--target", "http://127.0.0.1:1/api"], "--target needs --config"),
        (["--users", "0"], "--users must be greater than 0"),
        (["--mix", "cashin=1,teleport=2"], "unknown operation 'teleport'"),
        # a zero limit is not a silent default
        (["--max-response-bytes", "0"], "--max-response-bytes: must be more than 0, got 0"),
        (["--total-timeout", "0s"], "--total-timeout: must be more than 0, got 0"),
    ],
)
def test_usage_errors(tmp_path: Path, args: list[str], needle: str) -> None:
    run = run_load(tmp_path, *args)
    assert run.returncode == 2
    assert needle in _one_line(run.stderr)


def test_bad_slo_file(tmp_path: Path) -> None:
    slo = tmp_path / "slo.yaml"
    slo.write_text("cashin: {p95: 10}\n")
    run = run_load(tmp_path, "--slo", str(slo))
    assert run.returncode == 2
    assert "unknown metric" in _one_line(run.stderr)


def test_plain_locust_refuses_a_non_loopback_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The locustfile itself guards loopback: a hand-started Locust cannot bypass the rule.

    The host is in the reserved ``.invalid`` domain, so even a broken guard sends nothing out.
    """
    monkeypatch.delenv("PAYSUITE_ALLOW_REMOTE_TARGET", raising=False)
    config = _write_config(tmp_path / "c.yaml", "http://payments.invalid/api")
    locustfile = Path(__file__).resolve().parents[2] / "load" / "locustfile.py"
    run = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", "1",
         "-t", "3s", "--paysuite-config", str(config)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    assert "refusing to send load to payments.invalid" in run.stderr + run.stdout


def test_plain_locust_refuses_the_old_profile_option(tmp_path: Path) -> None:
    """``--paysuite-profile``, the 0.1.0 name of ``--paysuite-shape``, is gone: Locust's parser
    refuses it in one line, before any load (a profile is only conformance's word)."""
    config = _write_config(tmp_path / "c.yaml", "http://payments.invalid/api")
    locustfile = Path(__file__).resolve().parents[2] / "load" / "locustfile.py"
    run = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless",
         "--paysuite-config", str(config), "--paysuite-profile", "steady"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "PAYSUITE_ALLOW_REMOTE_TARGET"},
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-2000:]
    assert "unrecognized arguments: --paysuite-profile" in run.stderr, run.stderr[-2000:]
    assert "refusing to send load" not in run.stderr + run.stdout
