"""``paysuite clients``: the matrix, its exit status, and a strict stub breaking paypack-js."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from paysuite.clients.cache import paypack_js
from paysuite.clients.cli import make_job
from paysuite_core.cli_flags import UsageError
from paysuite_core.launcher import running_stub
from paysuite_core.target_config import load_target_config

#: One worker runs the SDK tests: they share the SDK cache (an npm install) and one stub.
pytestmark = pytest.mark.xdist_group("sdk-clients")


def _clients(*args: str, cache_dir: Path, report_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "paysuite",
            "clients",
            "--cache-dir",
            str(cache_dir),
            "--report-dir",
            str(report_dir),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _rows(stdout: str) -> dict[str, str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("operation"))
    return {line.split("  ")[0]: line for line in lines[start + 1 : start + 10]}


def test_bundled_stub_all_ok_then_strict_auth_breaks_paypack_js(tmp_path: Path, cache_dir) -> None:
    js = paypack_js(cache_dir)
    done = _clients("--json", str(tmp_path / "r.json"), cache_dir=cache_dir, report_dir=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report == json.loads((tmp_path / "clients.json").read_text())
    assert (report["verdict"], report["exit_code"]) == ("pass", 0)
    results = {c["sdk"]: c for c in report["sdks"]}
    assert all(c["ok"] for c in results["paypack-py"]["cells"].values())
    rows = _rows(done.stdout)
    assert len(rows) == 9 and all(" ok" in row for op, row in rows.items() if op != "refresh")
    assert done.stdout.rstrip().splitlines()[-1].startswith("VERDICT: PASS")
    if js.skip:
        assert results["paypack-js"]["skip"] and "paypack-js not available:" in done.stdout
    else:
        assert "paypack-js 0.2." in done.stdout
        assert all(c["ok"] in (True, None) for c in results["paypack-js"]["cells"].values())

    with running_stub(tmp_path / "strict", extra_args=["--strict-auth"]) as stub:
        strict = _clients(
            "--config", str(stub.credentials_path), cache_dir=cache_dir, report_dir=tmp_path
        )
    if js.skip:
        pytest.skip(f"paypack-js unavailable: {js.skip}")
    assert strict.returncode == 1, strict.stdout + strict.stderr
    rows = _rows(strict.stdout)
    assert rows["find"].split()[1] == "ok"  # paypack-py sends Bearer
    assert "FAIL 401 missing_token" in rows["cashin"] and "FAIL 401" in rows["me"]
    assert rows["authorize"].split()[1:] == ["ok", "ok"]


def test_usage_errors_exit_2(tmp_path: Path, cache_dir) -> None:
    missing = _clients(
        "--config", str(tmp_path / "nope.yaml"), cache_dir=cache_dir, report_dir=tmp_path
    )
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    bad_sdk = _clients("--sdk", "paypack-rb", cache_dir=cache_dir, report_dir=tmp_path)
    assert bad_sdk.returncode == 2
    bad_limit = _clients("--read-timeout", "soon", cache_dir=cache_dir, report_dir=tmp_path)
    assert bad_limit.returncode == 2 and len(bad_limit.stderr.strip().splitlines()) == 1
    assert "--read-timeout" in bad_limit.stderr and "Traceback" not in bad_limit.stderr


def test_make_job_needs_a_read_write_app_and_a_number(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    app = {"client_id": "a", "client_secret": "b", "merchant": "M"}
    path.write_text(yaml.safe_dump(
        {"base_url": "http://127.0.0.1:1/api", "applications": [{**app, "privilege": "read"}]}
    ))  # fmt: skip
    with pytest.raises(UsageError, match="read-write"):
        make_job(load_target_config(path))
    path.write_text(yaml.safe_dump(
        {"base_url": "http://127.0.0.1:1/api", "number_pattern": "^9{3}$",
         "applications": [{**app, "privilege": "read-write"}]}
    ))  # fmt: skip
    with pytest.raises(UsageError, match="numbers"):
        make_job(load_target_config(path))
    path.write_text(yaml.safe_dump(
        {"base_url": "http://127.0.0.1:1/api", "number_pattern": "^9{3}$", "numbers": ["999"],
         "applications": [{**app, "privilege": "read-write"}], "amount": {"min": 1, "max": 50}}
    ))  # fmt: skip
    with pytest.raises(UsageError, match="below 100"):
        make_job(load_target_config(path))
