"""Every endpoint of the document under generated requests (PROP-001..009).

Property tests (schemathesis): one engine run (``conformance.properties``), its failures sorted
into PROP-001..009. They run last: the catalog's order puts the PROP group at the end.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from conformance.checks import Section, check
from conformance.outcome import CheckFailed, CouldNotCheck, not_applicable

if TYPE_CHECKING:
    from conformance.target import Target


def _run(target: Target, cache: dict):
    """Run schemathesis once per session (the first PROP check pays for all of them)."""
    if target.config is None:
        not_applicable("no applications configured: the property tests need a bearer token")
    if "oversized" in cache:
        # schemathesis reads whole bodies: against a target that sends over-limit answers it
        # would only grow, so the run is not started.
        raise CouldNotCheck(
            f"not attempted: the target sent over-limit answers ({cache['oversized']})"
        )
    if "properties" not in cache:
        from conformance.properties import run_properties
        from paysuite_core.specfile import load_spec

        try:
            cache["properties"] = run_properties(
                target, load_spec(), deadline=target.client.check_deadline
            )
        except Exception as exc:  # noqa: BLE001 - reported as the check's error
            cache["properties"] = exc
    result = cache["properties"]
    if isinstance(result, Exception):
        raise RuntimeError(f"the property run could not complete: {result}") from result
    return result


def _verdict(target: Target, cache: dict, check_id: str) -> None:
    from conformance.http import TargetUnreachable

    result = _run(target, cache)
    for operation, why in result.excluded.items():
        target.note(f"{operation} not generated: {why}")
    if result.unanswered:
        # The target stopped answering under generated traffic: an error of the run, never a
        # pass of whichever checks happened to see no failure before it went away.
        raise TargetUnreachable(
            f"{len(result.unanswered)} request(s) of the property run got no answer: "
            f"{result.unanswered[0][:300]}"
        )
    if result.stopped:
        raise CouldNotCheck(result.stopped)
    failures = result.failures.get(check_id, [])
    if failures:  # judged on answers that were not 429: the target's own, whatever came later
        error = CheckFailed(
            f"{len(failures)} distinct failure(s): " + " | ".join(f.line() for f in failures),
            expected=EXPECTED[check_id],
            actual=failures[0].line(),
        )
        error.extra_evidence = [f.evidence() for f in failures]
        raise error
    if result.throttled_out:
        # A 429 past --max-throttle-wait is the target's rate limit, not an answer: what it
        # stood for was not judged, and an operation never seen to succeed proves nothing.
        raise CouldNotCheck(
            f"the target throttled past --max-throttle-wait: {result.throttled_out} generated "
            "request(s) still answered 429 and were not judged"
        )
    from conformance.properties import unexercised

    problems = unexercised(result)
    if problems:
        errors = f" (engine errors: {'; '.join(result.errors[:3])})" if result.errors else ""
        if check_id == "PROP-006":
            raise CheckFailed(
                "valid requests were never accepted: " + "; ".join(problems) + errors,
                expected=EXPECTED[check_id],
                actual="; ".join(problems),
            )
        raise CouldNotCheck(
            "the property run proves nothing about operations it never saw succeed: "
            + "; ".join(problems)
            + errors
        )
    if result.scenarios == 0:
        raise CouldNotCheck("schemathesis ran no scenario")


#: What each property check demands, for the report's Expected line.
EXPECTED = {
    "PROP-001": "no 5xx on any generated request",
    "PROP-002": "2xx or 4xx (seed view); the documented code (reference)",
    "PROP-003": "application/json on every response",
    "PROP-004": "response bodies valid against the spec's schemas (seed view in seed)",
    "PROP-005": "a 4xx for requests the document makes invalid",
    "PROP-006": "valid requests accepted",
    "PROP-007": "a 4xx without credentials or with invalid ones",
    "PROP-008": "a 4xx when a required header is missing",
    "PROP-009": "what a creation returned is found, with the values sent",
}


@check(
    "PROP-001",
    "SHOULD",
    Section.ENDPOINTS,
    "property tests: no server error on any generated input",
    "All bodies are JSON. [every operation, positive and negative data]",
)
def no_server_error_on_generated_input(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-001")


@check(
    "PROP-002",
    "SHOULD",
    Section.ENDPOINTS,
    "property tests: status codes are documented ones",
    "HTTP status codes of success responses: not shown. [seed: any 2xx, any 4xx]",
)
def status_codes_are_documented(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-002")


@check(
    "PROP-003",
    "MUST",
    Section.ENDPOINTS,
    "property tests: responses are application/json",
    "All bodies are JSON.",
)
def responses_are_application_json(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-003")


@check(
    "PROP-004",
    "MUST",
    Section.RESOURCES,
    "property tests: responses match the documented schemas",
    "Resources and their fields (creation, lookup, event list, token pair).",
)
def responses_match_the_schemas(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-004")


@check(
    "PROP-005",
    "SHOULD",
    Section.ENDPOINTS,
    "property tests: invalid requests are rejected",
    "Body: amount (number, required), number (string, required). Idempotency-Key: maximum "
    "length 32.",
)
def invalid_requests_are_rejected(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-005")


@check(
    "PROP-006",
    "MUST",
    Section.ENDPOINTS,
    "property tests: valid requests are accepted",
    "Cashin: a deposit into the merchant account, requested for a customer number.",
)
def valid_requests_are_accepted(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-006")


@check(
    "PROP-007",
    "MUST",
    Section.AUTHENTICATION_3,
    "property tests: no protected operation ignores auth",
    "The transaction and event endpoints require it.",
)
def no_protected_operation_ignores_auth(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-007")


@check(
    "PROP-008",
    "MUST",
    Section.AUTHENTICATION_3,
    "property tests: a missing required header is rejected",
    "Authorization: Bearer <ACCESS_TOKEN>, required.",
)
def a_missing_required_header_is_rejected(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-008")


@check(
    "PROP-009",
    "MUST",
    Section.ENDPOINTS,
    "property tests, stateful: authorize -> refresh, create -> find -> events chains hold",
    "A transaction is identified by a unique reference key (ref) generated by the service "
    "when the transaction is created.",
)
def stateful_chains_hold(target: Target, run_cache: dict) -> None:
    _verdict(target, run_cache, "PROP-009")
