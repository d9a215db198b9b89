"""Every endpoint of the document under generated requests (PROP-001..009).

Property tests (schemathesis): one engine run (``conformance.property_phase``), its failures sorted
into PROP-001..009. They run last: the catalog's order puts the PROP group at the end.
"""

from __future__ import annotations

import threading
from functools import partial
from typing import TYPE_CHECKING

from conformance.checks import computed_once, shared_check
from paysuite_core.results.outcome import CheckFailed, CouldNotCheck, not_applicable
from paysuite_core.results.rule import Section

if TYPE_CHECKING:
    from conformance.property_phase import PropRun
    from paysuite_core.driver.target import Target


#: The property run is computed once: the first PROP check runs it, the others read it.
_ONE_RUN = threading.Lock()


def _run(target: Target, cache: dict[str, object]) -> PropRun:
    """Run schemathesis once per session (the first PROP check pays for all of them)."""
    if target.config is None:
        not_applicable("no applications configured: the property tests need a bearer token")
    if "oversized" in cache:
        # schemathesis reads whole bodies: against a target that sends over-limit answers it
        # would only grow, so the run is not started.
        raise CouldNotCheck(
            f"not attempted: the target sent over-limit answers ({cache['oversized']})"
        )
    from conformance.property_phase import PropRun, run_properties
    from paysuite_core.specfile import load_spec

    def run() -> PropRun:
        return run_properties(target, load_spec(), deadline=target.client.check_deadline)

    result = computed_once(cache, "properties", _ONE_RUN, "the property run", run)
    assert isinstance(result, PropRun)
    return result


def _verdict(target: Target, cache: dict[str, object], check_id: str, expected: str) -> None:
    from paysuite_core.driver.http import TargetUnreachable

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
            expected=expected,
            actual=failures[0].line(),
        )
        error.extra_evidence = [f.evidence(target.masker) for f in failures]
        raise error
    if result.throttled_out:
        # A 429 past --max-throttle-wait is the target's rate limit, not an answer: what it
        # stood for was not judged, and an operation never seen to succeed proves nothing.
        raise CouldNotCheck(
            f"the target throttled past --max-throttle-wait: {result.throttled_out} generated "
            "request(s) still answered 429 and were not judged"
        )
    from conformance.property_phase import unexercised

    problems = unexercised(result)
    if problems:
        errors = f" (engine errors: {'; '.join(result.errors[:3])})" if result.errors else ""
        if check_id == "PROP-006":
            raise CheckFailed(
                "valid requests were never accepted: " + "; ".join(problems) + errors,
                expected=expected,
                actual="; ".join(problems),
            )
        raise CouldNotCheck(
            "the property run proves nothing about operations it never saw succeed: "
            + "; ".join(problems)
            + errors
        )
    if result.scenarios == 0:
        raise CouldNotCheck("schemathesis ran no scenario")


_property_check = partial(shared_check, globals(), _verdict)


_property_check(
    "no_server_error_on_generated_input",
    "PROP-001",
    "SHOULD",
    Section.ENDPOINTS,
    "property tests: no server error on any generated input",
    "All bodies are JSON. [every operation, positive and negative data]",
    "no 5xx on any generated request",
)
_property_check(
    "status_codes_are_documented",
    "PROP-002",
    "SHOULD",
    Section.ENDPOINTS,
    "property tests: status codes are documented ones",
    "HTTP status codes of success responses: not shown. [seed: any 2xx, any 4xx]",
    "2xx or 4xx (seed view); the documented code (reference)",
)
_property_check(
    "responses_are_application_json",
    "PROP-003",
    "MUST",
    Section.ENDPOINTS,
    "property tests: responses are application/json",
    "All bodies are JSON.",
    "application/json on every response",
)
_property_check(
    "responses_match_the_schemas",
    "PROP-004",
    "MUST",
    Section.RESOURCES,
    "property tests: responses match the documented schemas",
    "Resources and their fields (creation, lookup, event list, token pair).",
    "response bodies valid against the spec's schemas (seed view in seed)",
)
_property_check(
    "invalid_requests_are_rejected",
    "PROP-005",
    "SHOULD",
    Section.ENDPOINTS,
    "property tests: invalid requests are rejected",
    "Body: amount (number, required), number (string, required). Idempotency-Key: maximum "
    "length 32.",
    "a 4xx for requests the document makes invalid",
)
_property_check(
    "valid_requests_are_accepted",
    "PROP-006",
    "MUST",
    Section.ENDPOINTS,
    "property tests: valid requests are accepted",
    "Cashin: a deposit into the merchant account, requested for a customer number.",
    "valid requests accepted",
)
_property_check(
    "no_protected_operation_ignores_auth",
    "PROP-007",
    "MUST",
    Section.AUTHENTICATION_3,
    "property tests: no protected operation ignores auth",
    "The transaction and event endpoints require it.",
    "a 4xx without credentials or with invalid ones",
)
_property_check(
    "a_missing_required_header_is_rejected",
    "PROP-008",
    "MUST",
    Section.AUTHENTICATION_3,
    "property tests: a missing required header is rejected",
    "Authorization: Bearer <ACCESS_TOKEN>, required.",
    "a 4xx when a required header is missing",
)
_property_check(
    "stateful_chains_hold",
    "PROP-009",
    "MUST",
    Section.ENDPOINTS,
    "property tests, stateful: authorize -> refresh, create -> find -> events chains hold",
    "A transaction is identified by a unique reference key (ref) generated by the service "
    "when the transaction is created.",
    "what a creation returned is found, with the values sent",
)
