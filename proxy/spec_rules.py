"""Per exchange: the request against the document, the answer against the spec's view.

The request is judged by the document alone (``paysuite_core.driver.document_validity``, the
predicate the property phase uses to decide whether a negative case really is one): the body of a
creation or an authorize and the length of an Idempotency-Key. The stub's own choices (amount
bounds, phone pattern) are no client's duty toward another implementation, so they are not judged
here.

The answer is judged against the spec as the conformance suite fits it
(``paysuite_core.driver.spec_patch``): the seed view by default (any 2xx where the document shows no
status, any JSON error body), the reference view with ``--profile reference``. A status the view
does not document, a body that is not JSON where one is described, or a body that breaks its schema
(formats included, as the property phase's PROP-004 checks them: a ``date-time`` without its zone
fails) is a ``PROXY-SCHEMA-RESP`` violation, with the JSON path of the first error as
Expected/Actual.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

from paysuite_core.driver import document_validity
from paysuite_core.driver.spec_patch import patch_spec, resolve
from paysuite_core.exchange import Exchange
from paysuite_core.specfile import load_spec
from paysuite_core.target_config import Application, TargetConfig
from proxy.routes import Route
from proxy.rules import SCHEMA_REQUEST, SCHEMA_RESPONSE, Violation

#: When no configuration is given the spec is fitted to a placeholder: only the generation-side
#: patches read it (credentials enums, amount bounds), and the proxy judges no request by them.
_PLACEHOLDER_APP = Application("-", "-", "read-write", "-")


def _is_json_media(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


class SpecView:
    """The spec fitted to the target and the profile, with a compiled validator per answer."""

    def __init__(self, config: TargetConfig | None, *, profile: str, base_url: str) -> None:
        fitted = config or TargetConfig(base_url=base_url, applications=(_PLACEHOLDER_APP,))
        self.profile = profile
        self.spec = patch_spec(load_spec(), base_url=base_url, config=fitted, profile=profile)
        self._validators: dict[tuple[str, str, str], jsonschema.protocols.Validator | None] = {}

    # --- the request ------------------------------------------------------------------------
    def judge_request(self, exchange: Exchange, route: Route) -> list[Violation]:
        if not (route.creation or route.operation == "authorize"):
            return []  # find, events, refresh: nothing in the request the document constrains
        has_body = bool(exchange.request_body.strip())
        body = exchange.request_json()
        if has_body and body is None and exchange.request_body.strip() != b"null":
            problem: str | None = "the body is not JSON (All bodies are JSON)"
        else:
            headers = {name: value for name, value in exchange.request_headers}
            problem = document_validity.violation(
                route.template, body, headers, route.query, route.path_params, has_body
            )
        if problem is None:
            return []
        return [
            Violation(
                SCHEMA_REQUEST,
                f"{exchange.method} {route.template}: {problem}",
                (exchange,),
                expected="a request the document allows",
                actual=problem,
            )
        ]

    # --- the answer -------------------------------------------------------------------------
    def judge_response(self, exchange: Exchange, route: Route) -> list[Violation]:
        if exchange.status == 0:
            return []  # no answer: recorded as an unreachable target, not as a schema failure
        problem = self._response_problem(exchange, route)
        if problem is None:
            return []
        message, expected, actual = problem
        return [Violation(SCHEMA_RESPONSE, message, (exchange,), expected=expected, actual=actual)]

    def _response_problem(self, exchange: Exchange, route: Route) -> tuple[str, str, str] | None:
        """How the answer breaks the spec's view: (message, expected, actual), or None."""
        operation = self.spec["paths"][route.template][route.method]
        responses = operation.get("responses") or {}
        status = str(exchange.status)
        key = next((k for k in (status, f"{status[0]}XX", "default") if k in responses), None)
        where = f"{exchange.method} {route.template} answered {status}"
        if key is None:
            documented = ", ".join(sorted(map(str, responses)))
            return (
                f"{where}, a status the {self.profile} view does not document for it",
                f"one of {documented}",
                status,
            )
        content = resolve(self.spec, responses[key]).get("content") or {}
        if not content:
            return None
        content_type = exchange.response_header("Content-Type") or ""
        if not _is_json_media(content_type):
            return (
                f"{where} with Content-Type {content_type or '(none)'}",
                "application/json",
                content_type or "(no Content-Type)",
            )
        body = exchange.response_json()
        if body is None and exchange.response_body.strip() != b"null":
            shown = exchange.response_body[:120].decode("utf-8", "replace") or "(empty body)"
            return f"{where} with a body that is not JSON", "a JSON body", shown
        validator = self._validator(route, key, content)
        error = best_match(validator.iter_errors(body)) if validator is not None else None
        if error is None:
            return None
        path = "$" + "".join(f"[{p!r}]" if isinstance(p, str) else f"[{p}]" for p in error.path)
        return (
            f"{where} with a body that breaks its schema at {path}: {error.message}",
            f"{path} satisfies {error.validator}: {json.dumps(error.validator_value)[:200]}",
            f"{path} = {json.dumps(error.instance)[:200]}",
        )

    def _validator(
        self, route: Route, key: str, content: dict[str, Any]
    ) -> jsonschema.protocols.Validator | None:
        cache_key = (route.template, route.method, key)
        if cache_key not in self._validators:
            media = next(
                (value for name, value in content.items() if _is_json_media(name)),
                next(iter(content.values())),
            )
            schema = (media or {}).get("schema")
            validator = None
            if isinstance(schema, dict) and schema:
                root = {**schema, "components": self.spec.get("components", {})}
                validator = jsonschema.Draft202012Validator(
                    root, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
                )
            self._validators[cache_key] = validator
        return self._validators[cache_key]
