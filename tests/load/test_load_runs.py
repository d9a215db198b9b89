"""End-to-end load runs against the stub: verdicts, reports, reconciliation, distribution."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from loadkit import AUTO_RESOLVE, run_load

from paysuite_core.launcher import RunningStub, running_stub

pytestmark = pytest.mark.slow


def _parse_html(path: Path) -> list[str]:
    """Parse the page; returns the tags seen (the parser raises nothing on bad HTML, so check)."""
    tags: list[str] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append(tag)

    Collector().feed(path.read_text(encoding="utf-8"))
    return tags


def test_smoke_run_passes_with_reports_and_reconciliation(
    load_stub: RunningStub, tmp_path: Path
) -> None:
    run = run_load(
        tmp_path, "--config", str(load_stub.credentials_path), "--duration", "8", "--users", "4"
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.summary()
    ops = summary["operations"]
    for name in ("cashin", "cashout", "find", "events", "events?filter", "authorize"):
        assert ops[name]["requests"] > 0, name
    assert summary["total"]["failures"] == 0
    assert {"p50_ms", "p95_ms", "p99_ms", "rps"} <= set(ops["cashin"])
    assert summary["slo_passed"] is True
    # one authorize per user, never a storm
    assert summary["auth"]["authorize"] == 4
    recon = summary["reconciliation"]
    assert recon["checked"] > 0 and recon["checked"] == recon["unique_refs"] == recon["found"]
    assert recon["lost"] == 0 and recon["passed"] is True
    assert recon["acknowledged"] == ops["cashin"]["requests"] + ops["cashout"]["requests"]
    # the files: Locust's own report and CSVs, load.json, load.html with its inline chart
    for name in ("locust.html", "locust_stats.csv", "locust_stats_history.csv", "load.html"):
        assert (tmp_path / name).is_file(), name
    with (tmp_path / "locust_stats.csv").open() as handle:
        names = {row["Name"] for row in csv.DictReader(handle)}
    assert {"cashin", "find", "Aggregated"} <= names
    with (tmp_path / "locust_stats_history.csv").open() as handle:
        history = [row for row in csv.DictReader(handle) if row["Name"] == "Aggregated"]
    assert len(history) >= 3
    tags = _parse_html(tmp_path / "load.html")
    # throughput and users, the mix's latency, and one latency chart per operation
    assert tags.count("svg") >= 2 + 5 and "polyline" in tags
    assert summary["peak_users"] == 4 and summary["users"] == 4
    samples = summary["timeline"]["samples"]
    assert samples and samples[-1]["t"] <= summary["duration_s"] + 1.5  # ends with the run
    page = (tmp_path / "load.html").read_text()
    assert "PASS" in page and "http://" not in page.split("<body>")[0]
    assert "<script" not in page and "src=" not in page
    assert "paysuite: result: PASS (exit 0)" in run.stdout


def test_impossible_slo_fails_the_run_and_names_the_metric(
    load_stub: RunningStub, tmp_path: Path
) -> None:
    slo = tmp_path / "slo.yaml"
    # Every other latency limit far away: a busy machine must not breach a second one.
    slo.write_text(
        "shapes:\n  smoke:\n    '*': {p95_ms: 60000, p99_ms: 60000}\n    cashin: {p95_ms: 0.001}\n"
    )
    run = run_load(
        tmp_path / "r",
        "--config", str(load_stub.credentials_path),
        "--duration", "3",
        "--slo", str(slo),
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-2000:] + run.stderr[-2000:]
    assert "breached: cashin p95_ms" in run.stdout
    summary = run.summary()
    failed = [v for v in summary["slo"]["verdicts"] if not v["passed"]]
    assert [(v["operation"], v["metric"]) for v in failed] == [("cashin", "p95_ms")]
    assert summary["reconciliation"]["passed"] is True  # only the SLO failed


def test_dropped_acknowledged_creates_are_reported_lost(tmp_path: Path) -> None:
    config = {**AUTO_RESOLVE, "drop_rate": 0.1}
    with running_stub(tmp_path / "stub", faults=["drop-acknowledged"], stub_config=config) as stub:
        run = run_load(
            tmp_path / "r",
            "--config", str(stub.credentials_path),
            "--duration", "5",
            "--mix", "cashin=3,cashout=2,find=1",
        )  # fmt: skip
    assert run.returncode == 3, run.stdout[-2000:] + run.stderr[-2000:]  # 3: a loss
    recon = run.summary()["reconciliation"]
    assert recon["lost"] > 0 and recon["missing"] > 0
    assert recon["passed"] is False
    assert recon["reasons"][0].startswith(f"{recon['lost']} lost ({recon['missing']} not findable")
    assert f"-> ✗ FAIL: {recon['lost']} lost" in run.stdout  # the FAIL line says why
    assert "result: FAIL (exit 3: reconciliation failed)" in run.stdout
    assert recon["found"] + recon["lost"] == recon["checked"]
    assert all(sample["outcome"] == "missing" for sample in recon["samples"])


def test_distributed_two_workers_aggregate(load_stub: RunningStub, tmp_path: Path) -> None:
    run = run_load(
        tmp_path,
        "--config", str(load_stub.credentials_path),
        "--duration", "6",
        "--users", "4",
        "--workers", "2",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.summary()
    # the ledger came from both workers over Locust's messages
    assert len(summary["ledger"]["sources"]) == 2
    assert summary["reconciliation"]["checked"] > 0
    assert summary["reconciliation"]["passed"] is True
    # the master's totals are the sum of both workers' requests (users are split 2 + 2)
    assert summary["auth"]["authorize"] == 4
    assert summary["total"]["requests"] > 20
    for index in (0, 1):
        assert (tmp_path / "workers" / f"worker-{index}.log").is_file()


def test_idempotency_storm_counts_409_as_success(load_stub: RunningStub, tmp_path: Path) -> None:
    run = run_load(
        tmp_path,
        "--config", str(load_stub.credentials_path),
        "--shape", "idempotency-storm",
        "--duration", "4",
        "--users", "8",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.summary()
    storm = summary["idempotency"]
    assert storm["conflicts_409"] > 0
    assert storm["duplicate_keys"] == 0
    # counted on the target too: each storm key's number holds exactly one transaction
    assert storm["storm_keys_checked_on_target"] >= storm["keys"] > 0
    assert storm["server_duplicate_keys"] == 0
    assert summary["operations"]["cashin"]["failures"] == 0
    # a few keys per second: far fewer transactions than requests
    assert summary["reconciliation"]["unique_refs"] < summary["operations"]["cashin"]["requests"]


def test_lifecycle_reports_time_to_processed(load_stub: RunningStub, tmp_path: Path) -> None:
    run = run_load(
        tmp_path,
        "--config", str(load_stub.credentials_path),
        "--shape", "lifecycle",
        "--lifecycle-resolve", "auto",
        "--duration", "5",
        "--users", "3",
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ttp = run.summary()["time_to_processed"]
    assert ttp["count"] > 0
    # the stub resolves after 0.3 s; polling every 0.25 s: processed within about a second
    assert 0.3 <= ttp["p50_s"] < 3
    assert set(ttp["by_status"]) <= {"success", "successful", "failed"}
    # `*` judges requests, not time-to-processed: only its own p95 <= 30 s applies to it
    judged = [
        v["metric"]
        for v in run.summary()["slo"]["verdicts"]
        if v["operation"] == "time-to-processed"
    ]
    assert judged == ["p95_ms"]


def test_ramp_stops_where_a_tight_slo_breaks(load_stub: RunningStub, tmp_path: Path) -> None:
    slo = tmp_path / "slo.yaml"
    slo.write_text(json.dumps({"shapes": {"ramp": {"*": {"p95_ms": 0.001}}}}))
    run = run_load(
        tmp_path / "r",
        "--config", str(load_stub.credentials_path),
        "--shape", "ramp",
        "--duration", "15s",
        "--slo", str(slo),
    )  # fmt: skip
    summary = run.summary()
    broke = summary["ramp"]["slo_break"]
    assert broke is not None and "p95_ms" in broke["breached"]
    assert broke["step"] == 0  # even the first step breaches an impossible SLO
    assert summary["ramp"]["step_s"] == 5.0 and summary["ramp"]["steps"][0]["duration_s"] >= 4.5
    assert run.returncode == 1
    assert "SLO broken at step 0" in run.stdout
    # the verdict lines name the step they judged and the ones they did not
    judged = [line for line in run.stdout.splitlines() if "p95_ms<=" in line]
    later = ", ".join(str(step["step"]) for step in summary["ramp"]["steps"][1:])
    assert judged and all(f"step 0 ({summary['ramp']['steps'][0]['users']} users)" in line
                          for line in judged), run.stdout  # fmt: skip
    if later:
        assert f"steps {later}: the ramp's findings, not judged" in judged[0], judged


def test_ramp_duration_too_short_for_its_steps_is_a_usage_error(tmp_path: Path) -> None:
    run = run_load(tmp_path, "--shape", "ramp", "--duration", "8s")
    assert run.returncode == 2
    assert "ramp: a duration of 8 s holds 1 step(s) of 5 s" in run.stderr
    assert "give --duration 15s or more" in run.stderr


def test_abort_on_fail_stops_the_run_early(load_stub: RunningStub, tmp_path: Path) -> None:
    slo = tmp_path / "slo.yaml"
    slo.write_text("defaults:\n  find: {p95_ms: 0.001}\n")
    run = run_load(
        tmp_path / "r",
        "--config", str(load_stub.credentials_path),
        "--duration", "30s",
        "--pacing", "constant:0.005",
        "--mix", "find=1,cashin=1",
        "--slo", str(slo),
        "--abort-on-fail",
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.summary()
    assert summary["aborted"]["reason"].startswith("find p95_ms")
    assert summary["duration_s"] < 15  # decided after 200 finds, not after 30 s
    assert summary["stop_reason"].startswith("aborted by --abort-on-fail: find p95_ms")
    assert "could no longer be met" in run.stdout
    assert "result: FAIL (exit 1: threshold breached):\n  - aborted at" in run.stdout


def test_tokens_are_refreshed_not_reauthorized(tmp_path: Path) -> None:
    """Access tokens of 3 s: every user refreshes before expiry, authorizes once, sees no 401."""
    with running_stub(
        tmp_path / "stub", extra_args=["--access-ttl", "3"], stub_config=AUTO_RESOLVE
    ) as stub:
        run = run_load(
            tmp_path / "r",
            "--config", str(stub.credentials_path),
            "--duration", "6",
            "--users", "3",
        )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.summary()
    assert summary["auth"]["authorize"] == 3
    assert summary["auth"]["refresh"] >= 3  # at least one per user in 6 s of 3 s tokens
    assert summary["operations"]["refresh"]["failures"] == 0
    assert summary["total"]["failures"] == 0  # no request was sent with an expired token


def test_a_refused_token_is_renewed_and_the_request_retried(tmp_path: Path) -> None:
    """Fault early-expiry: tokens die after 2 s though ``expires`` says 900. Only the 401 tells.

    Each user must renew on the 401 (a refresh, not an authorize storm) and retry, so the only
    failures are the refused first attempts, and every acknowledged create is still found.
    """
    with running_stub(tmp_path / "stub", faults=["early-expiry"], stub_config=AUTO_RESOLVE) as stub:
        run = run_load(
            tmp_path / "r",
            "--config", str(stub.credentials_path),
            "--duration", "7",
            "--users", "3",
        )  # fmt: skip
    summary = run.summary()
    assert summary["auth"]["authorize"] == 3, summary["auth"]  # once per user, no storm
    assert summary["auth"]["refresh"] >= 3, summary["auth"]  # renewed after the 401s
    assert summary["operations"]["refresh"]["failures"] == 0
    with (tmp_path / "r" / "locust_failures.csv").open() as handle:
        failures = list(csv.DictReader(handle))
    assert failures, "the refused attempts are counted, not hidden by the retry"
    assert all("401: token refused; refreshing" in row["Error"] for row in failures), failures
    refused = sum(int(row["Occurrences"]) for row in failures)
    # a user is refused at most once per token it holds: renewals bound the refusals
    assert refused <= summary["auth"]["refresh"] + summary["auth"]["authorize"]
    assert summary["reconciliation"]["lost"] == 0 and summary["reconciliation"]["checked"] > 0
    assert run.returncode == 1  # the smoke SLO allows no error, and the refusals were errors


def test_plain_locust_command_line_gives_the_same_verdict(
    load_stub: RunningStub, tmp_path: Path
) -> None:
    """`locust -f load/locustfile.py` without paysuite's runner: same shapes, same load.json."""
    import subprocess
    import sys

    from load.runner import LOCUSTFILE

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            str(LOCUSTFILE),
            "--headless",
            "--only-summary",
            "--paysuite-config",
            str(load_stub.credentials_path),
            "--paysuite-shape",
            "steady",
            "--paysuite-duration",
            "4s",
            "--paysuite-report-dir",
            str(tmp_path),
            "--csv",
            str(tmp_path / "plain"),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode in (0, 1), result.stdout[-2000:] + result.stderr[-2000:]
    summary = json.loads((tmp_path / "load.json").read_text())
    assert summary["exit_code"] == result.returncode  # the verdict load.json gives is the exit's
    if result.returncode == 1:
        # a busy runner (four test workers on two cores) may push a latency percentile past its
        # SLO; any other breach, a failed request or a lost creation still fails the test
        breached = [v for v in summary["slo"]["verdicts"] if not v["passed"]]
        assert breached and all(v["metric"].startswith("p") for v in breached), breached
    assert summary["shape"] == summary["profile"] == "steady"  # profile: the old key
    assert summary["reconciliation"]["passed"] is True
    # steady: a constant arrival rate of 20 requests/s (10 users at 2/s each)
    assert 10 <= summary["total"]["rps"] <= 26
    assert (tmp_path / "load.html").is_file()  # drawn at exit from the complete CSV history


def test_idempotency_storm_catches_a_racy_target(tmp_path: Path) -> None:
    """A target whose key check races (fault idempotency-racy) hands out two refs for one key."""
    with running_stub(
        tmp_path / "stub", faults=["idempotency-racy"], stub_config=AUTO_RESOLVE
    ) as stub:
        run = run_load(
            tmp_path / "r",
            "--config", str(stub.credentials_path),
            "--shape", "idempotency-storm",
            "--duration", "4",
            "--users", "8",
        )  # fmt: skip
    assert run.returncode == 3, run.stdout[-3000:] + run.stderr[-3000:]
    summary = run.summary()
    assert summary["shape"] == "idempotency-storm"
    assert summary["idempotency"]["duplicate_keys"] > 0
    sample = summary["reconciliation"]["duplicate_key_samples"][0]
    assert len(sample["refs"]) >= 2
    assert summary["reconciliation"]["passed"] is False


def test_plain_locust_honours_u_r_t_and_needs_no_csv(
    load_stub: RunningStub, tmp_path: Path
) -> None:
    """`locust -f load/locustfile.py --headless -u 3 -t 4s`: 3 users for 4 s (not the smoke
    shape's 5 for 30 s), no "will be ignored" warning, and load.html has its charts without
    --csv/--csv-full-history."""
    import subprocess
    import sys

    from load.runner import LOCUSTFILE

    result = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "--only-summary",
         "-u", "3", "-r", "3", "-t", "4s",
         "--paysuite-config", str(load_stub.credentials_path),
         "--paysuite-report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "will be ignored" not in output and "have no impact" not in output
    assert f"paysuite: reports: {tmp_path.resolve()}/load.json, load.html" in result.stdout
    summary = json.loads((tmp_path / "load.json").read_text())
    assert summary["peak_users"] == 3 and summary["shape_users"] == 3
    assert 3 <= summary["duration_s"] <= 6 and summary["stop_reason"] == "duration 4 s reached"
    page = (tmp_path / "load.html").read_text()
    assert "no data" not in page and page.count("<polyline") >= 5


def test_the_terminal_shows_locust_s_table_once_and_the_verdict_last(
    load_stub: RunningStub, tmp_path: Path
) -> None:
    """A run printed 16 Locust tables up to 175 columns wide, its verdict 27 lines from the end:
    now the statistics table once, narrow, before where the reports went and the verdict,
    which is the last line; with --quiet no table at all."""
    import subprocess
    import sys

    def load(*extra: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-m", "paysuite", "load", "--config",
             str(load_stub.credentials_path), "--duration", "6", "--users", "2",
             "--report-dir", str(tmp_path / f"r{len(extra)}"), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout[-3000:]
        return [line for line in result.stdout.splitlines() if line.strip()]

    lines = load()
    tables = [i for i, line in enumerate(lines) if line.startswith("Type ") and "# reqs" in line]
    assert len(tables) == 1, "\n".join(lines)
    assert "Response time percentiles" not in "\n".join(lines)
    assert lines[-1] == "paysuite: result: PASS (exit 0)", lines[-5:]
    reports = next(i for i, line in enumerate(lines) if line.startswith("paysuite: reports: "))
    assert tables[0] < reports < len(lines) - 1
    assert max(len(line) for line in lines[tables[0] : reports]) <= 110
    quiet = load("--quiet")
    assert not [line for line in quiet if "# reqs" in line or "Aggregated" in line], quiet
    assert quiet[-1] == "paysuite: result: PASS (exit 0)", quiet[-5:]
