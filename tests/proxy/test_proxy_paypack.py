"""paypack-py 1.0.5, unchanged, driven through the proxy against the bundled stub: every public
method (and the refresh the SDK makes by itself after its token expired) passes the proxy's
judgement, so a clean client and a clean target give a clean verdict."""

from __future__ import annotations

from pathlib import Path

import pytest
from proxykit import config_file, start_proxy

from paysuite.clients import cache, matrix
from paysuite.clients.cli import make_job

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sdk-clients")]


def test_paypack_py_through_the_proxy_passes_every_exchange(make_stub, tmp_path: Path) -> None:
    stub = make_stub(extra_args=("--access-ttl", "2"))
    run = start_proxy(stub.root_url, tmp_path / "reports", config=config_file(stub, tmp_path))
    job = {**make_job(stub.config()), "base_url": run.base_url, "number": "0781112233",
           "expiry_wait_s": 3.5}  # fmt: skip
    column = matrix.run_paypack_py(job, cache.default_cache_dir())
    assert column.skip is None, column.skip
    broken = {op: cell["detail"] for op, cell in column.cells.items() if not cell["ok"]}
    assert not broken, broken
    assert run.stop() == 0, run.output
    report = run.report
    assert report["verdict"] == "pass" and report["exit_code"] == 0
    exchanges = report["exchanges"]
    judged = [e for e in exchanges if e["operation"] is not None]
    assert {e["operation"] for e in judged} >= {"authorize", "cashin", "cashout", "find",
                                               "events", "refresh"}  # fmt: skip
    assert all(e["verdict"] == "pass" for e in judged), judged
    # the SDK-only routes (/merchants/me, /transactions/list) are forwarded, not judged
    assert any(e["url"].endswith("/merchants/me") and e["verdict"] == "not judged"
               for e in exchanges)  # fmt: skip
    # the token it kept past expiry was refused (401), so AUTH-008 judged and passed
    assert any(e["status"] == 401 for e in exchanges)
    outcomes = {c["id"]: c["outcome"] for c in report["checks"]}
    assert outcomes["AUTH-008"] == outcomes["PROXY-SCHEMA-RESP"] == "passed", outcomes


def test_paypack_py_keeping_an_expired_token_working_is_auth_008(make_stub, tmp_path: Path) -> None:
    """The same SDK flow against a stub whose tokens never expire: the find the SDK makes after
    the expiry wait is accepted with the old token, and the proxy names it."""
    stub = make_stub(faults=("tokens-never-expire",), extra_args=("--access-ttl", "2"))
    run = start_proxy(stub.root_url, tmp_path / "reports", config=config_file(stub, tmp_path))
    job = {
        **make_job(stub.config()),
        "base_url": run.base_url,
        "number": "0781112244",
        "expiry_wait_s": 5,
    }  # exp is whole seconds; the proxy's grace 1 s
    column = matrix.run_paypack_py(job, cache.default_cache_dir())
    assert column.skip is None and column.cells["find after expiry"]["ok"], column.cells
    assert run.stop() == 1, run.output
    report = run.report
    failed = {c["id"] for c in report["checks"] if c["outcome"] == "failed"}
    assert failed == {"AUTH-008"}, run.output
    check = next(c for c in report["checks"] if c["id"] == "AUTH-008")
    assert len(check["evidence"]) == 2  # the authorize that issued it, the late request
    assert "× AUTH-008" in run.output
