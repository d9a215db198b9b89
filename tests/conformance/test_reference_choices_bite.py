"""The reference profile's checks of a documented choice fail on a stub that chose otherwise.

A stub setting (not a fault: each is a legitimate configuration of the stub) moves one
reference choice; the check of that choice must fail, and its neighbours must not. The fault
harness (test_faults.py) runs the seed profile and cannot show this; the mutation score
(docs/conformance.md, *Mutation score*) shows the same checks killing mutants of these rules.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from conformkit import conform, fast_config

from paysuite_core.launcher import RunningStub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub

import stub_server.errors as stub_errors
import stub_server.filters as stub_filters
import stub_server.rules.idempotency as stub_idempotency
import stub_server.rules.request_body as stub_request_body


def _settings(directory: Path, **values: object) -> Path:
    path = directory / "stub-settings.yaml"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(values), encoding="utf-8")
    return path


def test_a_stub_that_refuses_bare_tokens_fails_only_auth_017(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RC-33: the stub's --strict-auth refuses ``Authorization: <token>``, as the document's
    wording alone would allow; the reference profile's AUTH-017 says so, AUTH-016 does not."""
    stub = make_stub(extra_args=("--strict-auth",))
    config = fast_config(stub, tmp_path)
    outcome = conform(
        capsys, tmp_path / "r", config=config, profile="reference", only="AUTH-016,AUTH-017"
    )
    assert outcome.ids("failed") == {"AUTH-017"}, outcome.report["checks"]
    failed = outcome.check("AUTH-017")
    assert "answered 401" in failed["message"] and failed["evidence"], failed


def test_a_smaller_body_limit_fails_err_005(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RC-29: bodies up to 64 KiB are served; a stub configured for 32 KiB refuses them."""
    settings = _settings(tmp_path / "s", max_body_bytes=32_768)
    stub = make_stub(extra_args=("--config", str(settings)))
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "r", config=config, profile="reference", only="ERR-005")
    assert outcome.ids("failed") == {"ERR-005"}, outcome.report["checks"]


def test_a_fee_off_the_declared_rate_fails_find_003(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RC-15: the fee is round(amount * fee_rate, 2) at the rate the target declares; a stub
    charging 3% while its configuration declares 2.3% is caught, one declaring 3% is not."""
    settings = _settings(tmp_path / "s", fee_rate=0.03)
    stub = make_stub(extra_args=("--config", str(settings)))
    declared = fast_config(stub, tmp_path)
    honest = conform(capsys, tmp_path / "r1", config=declared, profile="reference", only="FIND-003")
    assert honest.ids("passed") == {"FIND-003"}, honest.report["checks"]
    (tmp_path / "w").mkdir()
    wrong = fast_config(stub, tmp_path / "w", fee_rate=0.023)
    outcome = conform(capsys, tmp_path / "r2", config=wrong, profile="reference", only="FIND-003")
    assert outcome.ids("failed") == {"FIND-003"}, outcome.report["checks"]
    failed = outcome.check("FIND-003")
    assert "0.023" in failed["expected"] and failed["evidence"], failed


def test_a_stub_that_takes_a_repeated_parameter_fails_err_003(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RC-41: the stub's app in this process, its events list taking the first copy of a
    repeated filter or ``limit`` (aiohttp's ``get``) instead of refusing the request."""
    monkeypatch.setattr(stub_filters, "refuse_repeated", lambda *_args: None)
    outcome = conform(
        capsys, tmp_path / "r", config=inproc_stub[1], profile="reference", only="ERR-003"
    )
    assert outcome.ids("failed") == {"ERR-003"}, outcome.report["checks"]
    failed = outcome.check("ERR-003")
    message = failed["message"]
    assert "a list filter sent twice: 200" in message, message
    assert "limit sent twice, the same value: 200" in message, message
    assert "ambiguous_parameter" in message and failed["evidence"], failed


def test_a_stub_that_takes_the_last_of_a_repeated_key_fails_err_003(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RC-42: the stub's app in this process parsing bodies as Python's json does (the last
    copy of a repeated key wins) and decoding a query key with replacement characters."""
    monkeypatch.setattr(stub_request_body, "_json_decode", json.JSONDecoder().decode)
    monkeypatch.setattr(stub_idempotency, "_refuse_undecodable_query_key", lambda _raw: None)
    outcome = conform(
        capsys, tmp_path / "r", config=inproc_stub[1], profile="reference", only="ERR-003"
    )
    assert outcome.ids("failed") == {"ERR-003"}, outcome.report["checks"]
    message = outcome.check("ERR-003")["message"]
    assert "a body naming amount twice: 200" in message, message
    assert "a query key of escapes that are not UTF-8: 200" in message, message


def test_a_stub_whose_405_has_no_allow_fails_err_003(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RC-32: a 405 names the route's methods in ``Allow`` (RFC 9110, 15.5.6), a 404 none. The
    stub's app in this process with the two branches swapped, as a mutant of its error
    middleware had them: the 405 without ``Allow``, the unknown route's 404 with an empty one."""
    respond = stub_errors.error_response

    def allow_swapped(
        status: int,
        code: str,
        message: str,
        *,
        go_body: bool,
        headers: dict[str, str] | None = None,
    ) -> web.Response:
        headers = dict(headers or {})
        if status == 405:
            headers.pop("Allow", None)
        elif code == "not_found":
            headers["Allow"] = ""
        return respond(status, code, message, go_body=go_body, headers=headers)

    monkeypatch.setattr(stub_errors, "error_response", allow_swapped)
    outcome = conform(
        capsys, tmp_path / "r", config=inproc_stub[1], profile="reference", only="ERR-003"
    )
    assert outcome.ids("failed") == {"ERR-003"}, outcome.report["checks"]
    failed = outcome.check("ERR-003")
    message = failed["message"]
    assert "wrong method: 405 without an Allow header, expected one naming POST" in message
    assert "unknown route: 404 with an Allow header '', expected none" in message, message
    assert failed["evidence"], failed
