"""Property tests (schemathesis): one engine run, its failures sorted into PROP-001..009."""

from __future__ import annotations

import pytest

from conformance.decorators import check
from conformance.target import CheckFailed, Target


def _run(target: Target, cache: dict):
    """Run schemathesis once per session (the first PROP check pays for all of them)."""
    if target.config is None:
        pytest.skip("no applications configured: the property tests need a bearer token")
    if "properties" not in cache:
        from conformance.properties import run_properties
        from paysuite.specfile import load_spec

        try:
            cache["properties"] = run_properties(target, load_spec())
        except Exception as exc:  # noqa: BLE001 - reported as the check's error
            cache["properties"] = exc
    result = cache["properties"]
    if isinstance(result, Exception):
        raise RuntimeError(f"the property run could not complete: {result}") from result
    return result


def _verdict(target: Target, cache: dict, check_id: str) -> None:
    result = _run(target, cache)
    failures = result.failures.get(check_id, [])
    if failures:
        error = CheckFailed(
            f"{len(failures)} distinct failure(s): " + " | ".join(f.line() for f in failures)
        )
        error.extra_evidence = [f.evidence() for f in failures]  # type: ignore[attr-defined]
        raise error
    if check_id == "PROP-001" and result.errors:
        # Transport errors (no answer at all) are server failures too.
        network = [e for e in result.errors if "Network Error" in e or "Timeout" in e]
        if network:
            raise CheckFailed(f"{len(network)} request(s) got no answer: {network[0][:300]}")
    if check_id == "PROP-006":
        from conformance.properties import unexercised

        problems = unexercised(result)
        if problems:
            errors = f" (engine errors: {'; '.join(result.errors[:3])})" if result.errors else ""
            raise CheckFailed("valid requests were never accepted: " + "; ".join(problems) + errors)
    if result.scenarios == 0:
        pytest.skip("schemathesis ran no scenario")


@check("PROP-001")
def test_no_server_error(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-001")


@check("PROP-002")
def test_status_codes(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-002")


@check("PROP-003")
def test_content_type(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-003")


@check("PROP-004")
def test_response_schema(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-004")


@check("PROP-005")
def test_negative_rejected(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-005")


@check("PROP-006")
def test_positive_accepted(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-006")


@check("PROP-007")
def test_auth_not_ignored(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-007")


@check("PROP-008")
def test_missing_header(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-008")


@check("PROP-009")
def test_stateful(configured: Target, run_cache: dict) -> None:
    _verdict(configured, run_cache, "PROP-009")
