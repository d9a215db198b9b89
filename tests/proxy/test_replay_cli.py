"""``paysuite replay`` end to end: a session recorded through ``paysuite proxy`` (a real HAR, masked
by the proxy), replayed with the real Judge against the stub that recorded it and against the
same stub restarted with a fault switch."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from proxykit import Client, start_proxy, writer

from paysuite.cli import main
from paysuite.clients import cache, matrix
from paysuite.clients.cli import make_job
from paysuite_core.launcher import RunningStub, start_stub, stop_stub
from proxy.har import read_session


def record(stub: RunningStub, report_dir: Path, flow: Callable[[Client], None]) -> Path:
    """Run ``flow`` through ``paysuite proxy`` in front of ``stub``; the session's HAR file."""
    run = start_proxy(stub.root_url, report_dir, config=stub.credentials_path)
    client = Client(run.base_url, writer(stub), run.url)
    try:
        flow(client)
    finally:
        client.close()
        run.stop()
    return report_dir / "session.har"


def reused_key(client: Client) -> None:
    """authorize, a cashin, the same cashin again with its key, a find of it: 4 exchanges."""
    made = client.create(key="merchant-order-0001")
    client.create(key="merchant-order-0001")
    client.find(made.json()["ref"])


def replay(har: Path, stub: RunningStub, report_dir: Path, *extra: str) -> int:
    return main(
        ["replay", str(har), "--target", stub.root_url, "--config", str(stub.credentials_path),
         "--report-dir", str(report_dir), *extra]
    )  # fmt: skip


def test_a_proxied_session_replays_clean_then_shows_a_faulty_builds_violation(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workdir = tmp_path / "stub"
    stub = start_stub(workdir, startup_timeout_s=60)
    try:
        har = record(stub, tmp_path / "live", reused_key)
        secrets = [a.client_secret for a in stub.config().applications]
        text = har.read_text("utf-8")
        assert "«masked:secret:" in text and not any(s in text for s in secrets)
        assert len(read_session(har).exchanges) == 4
        # Right after the recording, on the same number: the judge confirms the rejected reuse
        # on a number of its own, so the recording's creations are not counted as executions.
        capsys.readouterr()
        assert replay(har, stub, tmp_path / "clean") == 0
        clean = capsys.readouterr().out
        assert "replayed 4, not replayed 0" in clean
    finally:
        stop_stub(stub)
    report = json.loads((tmp_path / "clean" / "conformance.json").read_text("utf-8"))
    assert report["mode"] == "replay" and report["replay"]["not_replayed"] == []
    assert [row["verdict"] for row in report["exchanges"]] == ["pass"] * 4
    replayed_har = (tmp_path / "clean" / "session.har").read_text("utf-8")
    assert not any(s in replayed_har for s in secrets) and "«masked:access:1»" in replayed_har

    faulty = start_stub(workdir, faults=["idempotency-ignored"], startup_timeout_s=60)
    try:
        assert replay(har, faulty, tmp_path / "faulty") == 1
    finally:
        stop_stub(faulty)
    out = capsys.readouterr().out
    assert "IDEM-001" in out and "[#2, #3]" in out  # the live line: check ID and both exchanges
    report = json.loads((tmp_path / "faulty" / "conformance.json").read_text("utf-8"))
    failed = [c["id"] for c in report["checks"] if c["outcome"] == "failed"]
    assert failed == ["IDEM-001"]
    assert "IDEM-001" in (tmp_path / "faulty" / "junit.xml").read_text("utf-8")


def test_an_expired_token_is_judged_again_only_with_the_recorded_timing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Recorded against a clean stub (2 s tokens): a find with an expired token is refused.
    Replayed with --keep-timing against tokens-never-expire: AUTH-008. Without the timing the
    token is still fresh when reused, and nothing is wrong."""
    workdir = tmp_path / "stub"
    ttl = ("--access-ttl", "2")
    stub = start_stub(workdir, extra_args=ttl, startup_timeout_s=60)

    def late_find(client: Client) -> None:
        token = client.flow.access()
        made = client.create(token=token)
        time.sleep(4)
        client.find(made.json()["ref"], token=token)

    try:
        har = record(stub, tmp_path / "live", late_find)
    finally:
        stop_stub(stub)
    assert [e.status for e in read_session(har).exchanges] == [200, 200, 401]
    faulty = start_stub(workdir, faults=["tokens-never-expire"], extra_args=ttl,
                        startup_timeout_s=60)  # fmt: skip
    try:
        capsys.readouterr()
        assert replay(har, faulty, tmp_path / "fast") == 0
        assert replay(har, faulty, tmp_path / "timed", "--keep-timing") == 1
    finally:
        stop_stub(faulty)
    assert "AUTH-008" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [("{}", "log: expected dict"), ('{"log": {"entries": []}}', "holds no exchange")],
)
def test_a_file_that_cannot_be_replayed_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    har = tmp_path / "x.har"
    har.write_text(content, "utf-8")
    assert main(["replay", str(har), "--target", "http://127.0.0.1:9"]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("127.0.0.1:9", "expected an http(s) URL"),
        ("http://127.0.0.1:9", "refused the connection"),
    ],
)
def test_a_target_that_cannot_be_replayed_to_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    har = tmp_path / "x.har"
    har.write_text(
        json.dumps({"log": {"entries": [{"request": {"method": "GET", "url": "http://h/api/x"},
                                         "response": {"status": 200}, "_started": 1}]}}),
        "utf-8",
    )  # fmt: skip
    assert main(["replay", str(har), "--target", target]) == 2
    assert message in capsys.readouterr().err


JWT = re.compile(r"eyJ[\w-]+\.[\w-]+\.[\w-]+")


@pytest.mark.slow
@pytest.mark.xdist_group("sdk-clients")
def test_paypack_py_session_is_masked_in_the_har_and_replays_clean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The published SDK through the proxy (bare tokens in Authorization, its own refresh after
    expiry): the HAR holds no credential, and replaying it with the recorded timing passes."""
    stub = start_stub(tmp_path / "stub", extra_args=("--access-ttl", "2"), startup_timeout_s=60)
    try:
        run = start_proxy(stub.root_url, tmp_path / "live", config=stub.credentials_path)
        job = {**make_job(stub.config()), "base_url": run.base_url, "number": "0781112233",
               "expiry_wait_s": 3.5}  # fmt: skip
        column = matrix.run_paypack_py(job, cache.default_cache_dir())
        assert run.stop() == 0, run.output
        assert column.skip is None, column.skip
        har = tmp_path / "live" / "session.har"
        text = har.read_text("utf-8")
        assert not JWT.search(text), JWT.search(text)
        assert not any(a.client_secret in text for a in stub.config().applications)
        recorded = read_session(har).exchanges
        authorizations = {e.request_header("Authorization") for e in recorded} - {None}
        assert authorizations and all(
            re.fullmatch(r"(Bearer )?«masked:access:\d+»", value or "") for value in authorizations
        ), authorizations
        refreshes = [e.url for e in recorded if "/refresh/" in e.url]
        assert refreshes and all(re.search(r"/refresh/«masked:refresh:\d+»$", u) for u in refreshes)
        capsys.readouterr()
        assert replay(har, stub, tmp_path / "replay", "--keep-timing") == 0
    finally:
        stop_stub(stub)
    out = capsys.readouterr().out
    assert f"replayed {len(recorded)}, not replayed 0" in out
    report = json.loads((tmp_path / "replay" / "conformance.json").read_text("utf-8"))
    judged = [row for row in report["exchanges"] if row["operation"] is not None]
    assert judged and all(row["verdict"] == "pass" for row in judged), judged


def test_a_session_recorded_on_one_stub_replays_pass_on_a_fresh_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another stub has other client_ids: the HAR says each recorded application's privilege and
    merchant, so the replay maps it onto the fresh stub's application of that privilege, rebinds
    tokens, refs and keys, and the session replays whole and clean."""
    recorded_on = start_stub(tmp_path / "one", startup_timeout_s=60)
    fresh = start_stub(tmp_path / "other", startup_timeout_s=60)
    try:
        har = record(recorded_on, tmp_path / "live", reused_key)
        recorded_id = writer(recorded_on).client_id
        assert read_session(har).applications[recorded_id]["privilege"] == "read-write"
        capsys.readouterr()
        assert replay(har, fresh, tmp_path / "elsewhere") == 0
        out = capsys.readouterr().out
        assert f"application {recorded_id} -> {writer(fresh).client_id}" in out, out
        assert "replayed 4, not replayed 0" in out, out
        report = json.loads((tmp_path / "elsewhere" / "conformance.json").read_text())
        assert report["verdict"] == "pass" and report["replay"]["not_replayed"] == []
    finally:
        stop_stub(recorded_on)
        stop_stub(fresh)


def test_an_application_that_maps_to_none_is_refused_in_terms_of_the_mapping(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A configuration without an application of the recorded privilege: exit 2, one line per
    unmapped application, naming the privilege and the --map that settles it; --map does."""
    recorded_on = start_stub(tmp_path / "one", startup_timeout_s=60)
    fresh = start_stub(tmp_path / "other", startup_timeout_s=60)
    try:
        har = record(recorded_on, tmp_path / "live", reused_key)
        recorded_id = writer(recorded_on).client_id
        data = yaml.safe_load(fresh.credentials_path.read_text("utf-8"))
        data["applications"] = [a for a in data["applications"] if a["privilege"] == "read"]
        read_only = tmp_path / "read-only.yaml"
        read_only.write_text(yaml.safe_dump(data), "utf-8")
        capsys.readouterr()
        status = main(["replay", str(har), "--target", fresh.root_url, "--config",
                       str(read_only), "--report-dir", str(tmp_path / "r")])  # fmt: skip
        err = capsys.readouterr().err
        assert status == 2, err
        assert f"application {recorded_id} (read-write" in err and "--map" in err, err
        assert "base URL" not in err and "Traceback" not in err, err
        status = main(["replay", str(har), "--target", fresh.root_url, "--config",
                       str(fresh.credentials_path), "--report-dir", str(tmp_path / "m"),
                       "--map", f"{recorded_id}={writer(fresh).client_id}"])  # fmt: skip
        assert status == 0, capsys.readouterr()
    finally:
        stop_stub(recorded_on)
        stop_stub(fresh)
