"""The spec says what the stub enforces: schemathesis's own CLI finds no disagreement.

``st run spec/openapi.yaml`` is what a user of the spec runs first. Every request it calls
schema-valid must be one the stub takes, and every answer must match the spec; otherwise the spec
and the stub disagree (as they did when the stub refused an Idempotency-Key with a control
character, RC-39, that the spec's schema allowed: ``ST202 Schema-valid request rejected``). The
run is the CLI's, not paysuite's property phase (which patches the spec for a target first), with
every check and every phase, a fixed seed and a bounded number of examples, against a fresh stub.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import httpx
import pytest

from paysuite_core import tokens
from paysuite_core.launcher import running_stub
from paysuite_core.specfile import load_spec, spec_path
from paysuite_core.target_config import TargetConfig

SEED = 22
MAX_EXAMPLES = 15


def _access_token(base_url: str, config: TargetConfig) -> str:
    """A read-write application's access token, through the one token client."""
    app = next(a for a in config.applications if a.privilege == "read-write")
    with httpx.Client(timeout=15) as client:
        answer = tokens.authorize(tokens.httpx_send(client, base_url), app)
    assert answer is not None and answer.status == 200, answer
    return str(answer.json()["access"])


@pytest.mark.slow
def test_schemathesis_cli_finds_no_disagreement_between_spec_and_stub(tmp_path: Path) -> None:
    with running_stub(tmp_path / "stub") as stub:
        token = _access_token(stub.base_url, stub.config())
        run = subprocess.run(
            [
                sys.executable, "-m", "schemathesis.cli", "run", str(spec_path()),
                "--url", stub.base_url,
                "--header", f"Authorization: Bearer {token}",
                "--phases", "examples,coverage,fuzzing,stateful",
                "--checks", "all",
                "--seed", str(SEED),
                "--max-examples", str(MAX_EXAMPLES),
                "--workers", "1",
                "--generation-database", "none",
                "--report", "junit",
                "--report-junit-path", str(tmp_path / "junit.xml"),
                "--no-color",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]
    suite = ET.parse(tmp_path / "junit.xml").getroot()
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0"), output[-6000:]
    tested = {case.get("name") for case in suite.iter("testcase")}
    # every operation of the spec file (the SDK routes too) and the stateful phase ran
    assert tested == _operations() | {"Stateful tests"}, tested


def _operations() -> set[str]:
    """Every operation of the spec file, as schemathesis labels them (``POST /path``)."""
    paths = load_spec(extensions=True)["paths"]
    methods = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
    return {
        f"{method.upper()} {path}"
        for path, item in paths.items()
        for method in item
        if method in methods
    }
