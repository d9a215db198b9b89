"""The CI examples in ``examples/ci/`` are valid for their CI and their commands work.

A pipeline to copy is only worth copying if it runs. So each file is validated against its CI's
JSON Schema (shipped beside this test, ``schemas/README.md`` says where from), and its shell
commands are run here in order, as the CI would run them: the GitHub workflow's ``run:`` steps,
each in its own ``bash -eo pipefail``; each GitLab job's ``before_script`` and ``script`` in one
shell, then its ``after_script``. Only the install line is replaced: the commands find this test's
own ``paysuite`` first on ``PATH``. The ``uses:`` steps (checkout, Python, artifact upload, JUnit
publishing) are GitHub's to run; what they are given (the report paths) is checked to exist after
the run. The runs start a stub, run the conformance suite and a 10 s load: slow tier.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "ci"
SCHEMAS = Path(__file__).resolve().parent / "schemas"
GITHUB = EXAMPLES / "github-actions.yml"
GITLAB = EXAMPLES / "gitlab-ci.yml"
#: What the conformance and load commands must leave behind.
CONFORMANCE_REPORTS = ("junit.xml", "conformance.json", "report.html")
LOAD_REPORTS = ("load.json", "load.html")
STEP_TIMEOUT_S = 300


class Yaml12Loader(yaml.SafeLoader):
    """YAML 1.2 booleans (``true``/``false`` only), as GitHub and GitLab read their files:
    PyYAML's YAML 1.1 would turn the workflow's ``on:`` key into ``True``."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


def load_yaml(path: Path) -> dict[str, Any]:
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=Yaml12Loader)
    assert isinstance(data, dict), path
    return data


def schema_errors(document: Any, schema_file: str) -> list[str]:
    """Every violation of the vendored schema, as ``path: message`` lines."""
    schema = json.loads((SCHEMAS / schema_file).read_text(encoding="utf-8"))
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(top)'}: {error.message[:300]}"
        for error in validator.iter_errors(document)
    ]


def is_install(command: str) -> bool:
    return "pip install" in command


# -- what the files say ------------------------------------------------------------------------
def github_steps() -> list[dict[str, Any]]:
    jobs = load_yaml(GITHUB)["jobs"]
    assert len(jobs) == 1, "one job: the target, both gates and the reports"
    (job,) = jobs.values()
    return list(job["steps"])


def gitlab_jobs() -> dict[str, dict[str, Any]]:
    """The runnable jobs (not the hidden ``.templates``), each with its ``extends`` merged in
    the way GitLab merges them: hashes deeply, anything else replaced."""
    config = load_yaml(GITLAB)

    def merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
        merged = dict(base)
        for key, value in over.items():
            if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
                merged[key] = merge(merged[key], value)
            else:
                merged[key] = value
        return merged

    def resolve(name: str) -> dict[str, Any]:
        job = dict(config[name])
        parents = job.pop("extends", [])
        for parent in [parents] if isinstance(parents, str) else parents:
            job = merge(resolve(parent), job)
        return job

    reserved = {"stages", "variables", "default", "include", "workflow", "image", "services"}
    return {
        name: resolve(name)
        for name in config
        if name not in reserved and not name.startswith(".") and isinstance(config[name], dict)
    }


def report_dir_of(command: str, subcommand: str) -> str | None:
    """The ``--report-dir`` of the ``paysuite SUBCOMMAND`` in ``command``."""
    found = re.search(rf"paysuite {subcommand}\b.*?--report-dir\s+(\S+)", command, re.S)
    return found.group(1).strip("\"'").rstrip("/") if found else None


def test_the_github_workflow_is_valid_against_its_schema() -> None:
    workflow = load_yaml(GITHUB)
    assert schema_errors(workflow, "github-workflows.json") == []
    # the schema has teeth: a misspelt step key, or job key, is caught
    broken = load_yaml(GITHUB)
    step = broken["jobs"]["paysuite"]["steps"][0]
    step["uzes"] = step.pop("uses")
    assert schema_errors(broken, "github-workflows.json")
    broken = load_yaml(GITHUB)
    broken["jobs"]["paysuite"]["runs_on"] = broken["jobs"]["paysuite"].pop("runs-on")
    assert schema_errors(broken, "github-workflows.json")


def test_the_github_workflow_gates_uploads_and_publishes() -> None:
    steps = github_steps()
    uses = {step["uses"].split("@")[0]: step for step in steps if "uses" in step}
    assert set(uses) == {
        "actions/checkout",
        "actions/setup-python",
        "actions/upload-artifact",
        "mikepenz/action-junit-report",
    }
    runs = [step["run"] for step in steps if "run" in step]
    assert sum(map(is_install, runs)) == 1
    conform = next(report_dir_of(r, "conform") for r in runs if report_dir_of(r, "conform"))
    load = next(report_dir_of(r, "load") for r in runs if report_dir_of(r, "load"))
    assert uses["mikepenz/action-junit-report"]["with"]["report_paths"] == f"{conform}/junit.xml"
    uploaded = uses["actions/upload-artifact"]["with"]["path"].split()
    assert any(
        conform.startswith(p.rstrip("/")) and load.startswith(p.rstrip("/")) for p in uploaded
    )
    for name in ("actions/upload-artifact", "mikepenz/action-junit-report"):
        assert uses[name]["if"] == "always()", f"{name} must run when a gate failed too"
    workflow = load_yaml(GITHUB)
    assert workflow["permissions"]["checks"] == "write"  # the JUnit check run needs it


def test_the_gitlab_file_is_valid_against_its_schema_and_well_formed() -> None:
    config = load_yaml(GITLAB)
    assert schema_errors(config, "gitlab-ci.json") == []
    broken = load_yaml(GITLAB)
    broken["conformance"]["artifacts"]["when"] = "sometimes"
    assert schema_errors(broken, "gitlab-ci.json")  # the schema has teeth
    jobs = gitlab_jobs()
    assert set(jobs) == {"conformance", "load"}
    for name, job in jobs.items():
        assert job["stage"] in config["stages"], name
        lines = [*job["before_script"], *job["script"]]
        assert all(isinstance(line, str) for line in [*lines, *job["after_script"]]), name
        assert sum(map(is_install, lines)) == 1, name
        assert job["artifacts"]["when"] == "always", name
        assert "reports/" in job["artifacts"]["paths"], name
    conform = report_dir_of(" ".join(jobs["conformance"]["script"]), "conform")
    assert jobs["conformance"]["artifacts"]["reports"]["junit"] == f"{conform}/junit.xml"
    assert report_dir_of(" ".join(jobs["load"]["script"]), "load")


# -- running the commands ----------------------------------------------------------------------
@dataclass
class Step:
    name: str
    command: str
    status: int
    seconds: float
    output: str

    def transcript(self, tail: int = 6) -> str:
        lines = self.output.rstrip().splitlines()
        shown = "\n".join(f"    | {line}" for line in lines[-tail:])
        first = self.command.strip().splitlines()[0]
        more = " ..." if len(self.command.strip().splitlines()) > 1 else ""
        head = f"-- {self.name}: exit {self.status} in {self.seconds:.1f} s\n    $ {first}{more}"
        return f"{head}\n{shown}" if shown else head


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ci_environment(*scopes: Mapping[str, Any] | None) -> dict[str, str]:
    """This process's environment, the file's variables over it (workflow, job, step, in that
    order), the port made free, and this test's own ``paysuite`` first on ``PATH``."""
    env = dict(os.environ)
    for scope in scopes:
        env.update({key: str(value) for key, value in (scope or {}).items()})
    env["PAYSUITE_PORT"] = str(free_port())
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("PAYSUITE_ALLOW_REMOTE_TARGET", None)
    return env


def run_shell(name: str, command: str, env: dict[str, str], cwd: Path) -> Step:
    started = time.monotonic()
    done = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=STEP_TIMEOUT_S,
    )
    return Step(name, command, done.returncode, time.monotonic() - started, done.stdout)


def target_stopped(workdir: Path, within_s: float = 15) -> bool:
    """Whether the target whose pid the steps wrote (``stub.pid``) exits within ``within_s``
    (the stop step's SIGTERM lets it finish its requests first). One still running after
    that is ended here, so that no test leaves it behind, and the answer is False."""
    pid_file = workdir / "stub.pid"
    if not pid_file.is_file():
        return True
    pid = int(pid_file.read_text().strip())
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not running(pid):
            return True
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    return False


def running(pid: int) -> bool:
    """The process exists and has not exited: an exited one whose new parent (the shell that
    started it is gone) has not reaped it yet is a zombie, not running."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return True  # no /proc: existence is all there is to know


def assert_reports(workdir: Path, conform_dir: str | None, load_dir: str | None) -> None:
    if conform_dir is not None:
        for name in CONFORMANCE_REPORTS:
            assert (workdir / conform_dir / name).is_file(), f"{conform_dir}/{name}"
        verdict = json.loads((workdir / conform_dir / "conformance.json").read_text())
        assert verdict["verdict"] == "pass", verdict.get("verdict")
        # the stub's credentials declare short_lived_pair: token expiry is judged, not n/a
        (expiry,) = [c for c in verdict["checks"] if c["id"] == "AUTH-008"]
        assert expiry["outcome"] == "passed", expiry
    if load_dir is not None:
        for name in LOAD_REPORTS:
            assert (workdir / load_dir / name).is_file(), f"{load_dir}/{name}"


def only_latency_breached(load_dir: Path) -> None:
    """A load job's exit 1 that says nothing against the example: on a busy test runner (four
    test workers on two cores) a latency percentile can pass its SLO by, while every request
    succeeded and every acknowledged creation was found. Anything else breached still fails."""
    summary = json.loads((load_dir / "load.json").read_text(encoding="utf-8"))
    breached = [v for v in summary["slo"]["verdicts"] if not v["passed"]]
    assert breached and all(v["metric"].startswith("p") for v in breached), breached
    assert summary["reconciliation"]["passed"], summary["reconciliation"]


@pytest.mark.slow
def test_the_github_workflow_runs_step_by_step(tmp_path: Path) -> None:
    workflow = load_yaml(GITHUB)
    (job,) = workflow["jobs"].values()
    base = ci_environment(workflow.get("env"), job.get("env"))  # one port for every step
    steps: list[Step] = []
    try:
        for index, step in enumerate(job["steps"], 1):
            name = step.get("name") or step.get("uses") or f"step {index}"
            if "uses" in step:
                steps.append(Step(f"{index}. {name}", f"(uses: {step['uses']})", 0, 0.0, ""))
                continue
            if is_install(step["run"]):
                steps.append(Step(f"{index}. {name}", "(this test's venv)", 0, 0.0, ""))
                continue
            env = {**base, **{key: str(value) for key, value in step.get("env", {}).items()}}
            steps.append(run_shell(f"{index}. {name}", step["run"], env, tmp_path))
            load_dir = report_dir_of(step["run"], "load")
            if steps[-1].status == 1 and load_dir is not None:
                only_latency_breached(tmp_path / load_dir)
            else:
                assert steps[-1].status == 0, steps[-1].transcript(tail=40)
    finally:
        stopped = target_stopped(tmp_path)
        print("\n".join(step.transcript() for step in steps))
    assert stopped, "the stop step left the target running"
    runs = [step["run"] for step in job["steps"] if "run" in step]
    conform = next(filter(None, (report_dir_of(r, "conform") for r in runs)))
    load = next(filter(None, (report_dir_of(r, "load") for r in runs)))
    assert_reports(tmp_path, conform, load)
    for step in job["steps"]:
        given = step.get("with") or {}
        for path in str(given.get("path", "")).split() + [given.get("report_paths", "")]:
            if path:
                assert (tmp_path / path).exists(), f"{step['uses']} is given {path}: missing"


@pytest.mark.slow
@pytest.mark.parametrize("job_name", ["conformance", "load"])
def test_a_gitlab_job_runs_its_commands_in_order(tmp_path: Path, job_name: str) -> None:
    config = load_yaml(GITLAB)
    job = gitlab_jobs()[job_name]
    env = ci_environment(config.get("variables"), job.get("variables"))
    lines = [line for line in [*job["before_script"], *job["script"]] if not is_install(line)]
    steps: list[Step] = []
    try:
        steps.append(
            run_shell(f"{job_name}: before_script + script", "\n".join(lines), env, tmp_path)
        )
        after = "\n".join(job.get("after_script", []))
        steps.append(run_shell(f"{job_name}: after_script", after, env, tmp_path))
    finally:
        stopped = target_stopped(tmp_path)
        print("\n".join(step.transcript() for step in steps))
    script = " ".join(job["script"])
    statuses = [step.status for step in steps]
    if job_name == "load" and statuses == [1, 0]:
        only_latency_breached(tmp_path / str(report_dir_of(script, "load")))
    else:
        assert statuses == [0, 0], steps[0].transcript(tail=40)
    assert stopped, "after_script left the target running"
    assert_reports(tmp_path, report_dir_of(script, "conform"), report_dir_of(script, "load"))
    for path in job["artifacts"]["paths"]:
        assert (tmp_path / path).exists(), f"artifact {path} missing"
    junit = job["artifacts"].get("reports", {}).get("junit")
    if junit:
        assert (tmp_path / junit).is_file()


@pytest.mark.parametrize("path", [GITHUB, GITLAB], ids=["github", "gitlab"])
def test_each_example_says_how_to_aim_at_a_deployed_target(path: Path) -> None:
    """Adapted to a deployed target as its comments say, a job meets load's loopback rule: the
    file names the rule's switch and what the refusal looks like."""
    text = path.read_text(encoding="utf-8")
    assert "A deployed target" in text and "base_url: https://" in text
    assert "PAYSUITE_ALLOW_REMOTE_TARGET" in text and "refusing to send load to" in text
    assert "authorized to load" in text
