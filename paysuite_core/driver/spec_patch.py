"""The OpenAPI document as the property tests use it: fitted to the target and the profile.

``spec/openapi.yaml`` describes the reference stub: its bounds, patterns, status codes and error
bodies. Before schemathesis sees it, this module

- points ``servers`` at the target, puts the target's amount bounds and number pattern into
  ``TransactionRequest`` and a configured application's credentials into ``AuthorizeRequest``
  (positive cases must be valid *for this target*);
- in the ``seed`` profile, builds the *seed view*: what the spec marks ``x-reference-choice`` is
  relaxed where it judges the target's answers (a documented ``200`` becomes ``2XX``, every
  error response one ``4XX`` with any JSON body), the query parameters the document does not
  name (``limit``, ``offset``, ``event-kind``, ``from``, ``to``) and the ``Accept`` and
  ``Content-Type`` header parameters (a client's duty, no server's) are dropped, and positive
  data keeps to what any implementation must take (integer amounts within the target's bounds,
  the ``X-Webhook-Mode`` values the live service's clients send). Constraints that only shape
  generation stay; a negative case they produce is judged only when the document itself makes
  it invalid (``document_validity``), so an implementation that chose differently raises no
  alarm;
- in the ``reference`` profile, tightens it: ``x-reference-pattern`` becomes ``pattern`` and
  ``x-reference-required`` becomes ``required``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from paysuite_core.api_types import JsonObject
from paysuite_core.target_config import TargetConfig

#: The list endpoint's query parameters the interface document names.
DOCUMENTED_FILTERS = {"status", "client", "ref", "kind"}
HTTP_METHODS = ("get", "post", "put", "patch", "delete", "head", "options")


def ascii_pattern(pattern: str) -> str:
    r"""``\d`` matches any Unicode digit in Python; generate and validate ASCII digits only."""
    return re.sub(r"(?<!\\)\\d", "[0-9]", pattern)


def number_pattern(config: TargetConfig) -> str:
    if config.numbers and not config.number_pattern:
        return "^(?:" + "|".join(re.escape(n) for n in config.numbers) + ")$"
    return ascii_pattern(config.effective_number_pattern)


def resolve(spec: dict[str, Any], node: object) -> Any:
    """``node`` with its local ``$ref`` (``#/components/...``) followed, through any chain."""
    while isinstance(node, dict) and str(node.get("$ref")).startswith("#/"):
        current: Any = spec
        for part in node["$ref"][2:].split("/"):
            current = current[part.replace("~1", "/").replace("~0", "~")]
        node = current
    return node


def _walk(node: object) -> Iterator[JsonObject]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def operations(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in (spec.get("paths") or {}).items():
        for method in HTTP_METHODS:
            if isinstance(item, dict) and isinstance(item.get(method), dict):
                yield path, method, item[method]


def patch_spec(
    spec: dict[str, Any], *, base_url: str, config: TargetConfig, profile: str
) -> dict[str, Any]:
    """Patch ``spec`` (a private copy from ``load_spec()``) in place and return it."""
    spec["servers"] = [{"url": base_url}]
    # Positive authorize cases carry real credentials, so authorize answers a pair and the
    # stateful phase can follow its links into refresh; negative ones are anything else.
    app = next((a for a in config.applications if a.privilege == "read-write"), None)
    app = app or config.applications[0]
    credentials = spec["components"]["schemas"]["AuthorizeRequest"]["properties"]
    credentials["client_id"]["enum"] = [app.client_id]
    credentials["client_secret"]["enum"] = [app.client_secret]
    request = spec["components"]["schemas"]["TransactionRequest"]["properties"]
    request["amount"]["minimum"] = config.amount.min
    request["amount"]["maximum"] = config.amount.max
    request["number"]["pattern"] = number_pattern(config)
    if profile == "reference":
        _tighten(spec)
    else:
        _relax(spec, number_pattern(config))
    return spec


def _tighten(spec: dict[str, Any]) -> None:
    # Any other 2xx also carries the documented success (with its links), so a target that
    # answers 201 still has its chains followed; TXN-004 alone names the status code.
    for _path, _method, operation in operations(spec):
        responses = operation.get("responses") or {}
        ok = responses.get("200")
        if ok is not None and resolve(spec, ok).get("x-reference-choice"):
            responses.setdefault("2XX", ok)
    for node in _walk(spec.get("components", {})):
        pattern = node.get("x-reference-pattern")
        if isinstance(pattern, str) and node.get("type") in ("string", ["string", "null"]):
            node["pattern"] = pattern
        required = node.get("x-reference-required")
        if isinstance(required, list):
            node["required"] = list(required)


CLIENT_HEADERS = {"accept", "content-type"}


def _positive_filters(spec: dict[str, Any], operation: dict[str, Any], number: str) -> None:
    """Filter values any implementation must take: a UUID-shaped ref, a number of the target's
    format, and the statuses the document names without ambiguity (``success`` and
    ``successful`` are each the other's unknown value in some implementation)."""
    schemas = {
        "ref": {"type": "string", "format": "uuid"},
        "client": {"type": "string", "pattern": number},
        "status": {"type": "string", "enum": ["pending", "failed"]},
        "kind": {"type": "string", "enum": ["CASHIN", "CASHOUT"]},
    }
    for index, parameter in enumerate(operation.get("parameters", [])):
        resolved = resolve(spec, parameter)
        if resolved.get("in") == "query" and resolved.get("name") in schemas:
            copy = dict(resolved)
            copy["schema"] = schemas[resolved["name"]]
            copy.pop("allowEmptyValue", None)  # an empty filter's meaning is not shown
            operation["parameters"][index] = copy


def _relax(spec: dict[str, Any], number: str) -> None:
    # "All bodies are JSON": any JSON media type, RFC 9457 problem details included.
    any_json: JsonObject = {
        "application/json": {"schema": {}},
        "application/problem+json": {"schema": {}},
    }
    request = spec["components"]["schemas"]["TransactionRequest"]["properties"]
    request["amount"]["type"] = "integer"  # RWF in practice: any implementation takes integers
    mode = spec["components"]["parameters"]["WebhookModeHeader"]["schema"]
    mode["enum"] = ["development", "production"]  # the values the live service's clients send
    # A created event has nothing processed yet: null, absent or empty are all honest there.
    data = spec["components"]["schemas"]["EventData"]["properties"]
    data["processed_at"] = {"type": ["string", "null"], "description": "seed view: any text"}
    for path, _method, operation in operations(spec):
        operation["parameters"] = [
            parameter
            for parameter in operation.get("parameters", [])
            if not (
                resolve(spec, parameter).get("in") == "header"
                and str(resolve(spec, parameter).get("name", "")).lower() in CLIENT_HEADERS
            )
        ]
        responses = operation.get("responses") or {}
        relaxed: JsonObject = {}
        errors = False
        for code, response in responses.items():
            resolved = resolve(spec, response)
            code_text = str(code)
            if code_text.startswith("2") and resolved.get("x-reference-choice"):
                relaxed["2XX"] = resolved
            elif code_text.startswith("4"):
                errors = True
            else:
                relaxed[code_text] = response
        if errors:
            relaxed["4XX"] = {
                "description": "Any rejection (seed profile: error statuses are not shown)",
                "content": any_json,
            }
        operation["responses"] = relaxed
        if path == "/events/transactions":
            _positive_filters(spec, operation, number)
            operation["parameters"] = [
                parameter
                for parameter in operation.get("parameters", [])
                if resolve(spec, parameter).get("in") != "query"
                or resolve(spec, parameter).get("name") in DOCUMENTED_FILTERS
            ]
    spec["components"]["schemas"]["Error"] = {"description": "Any JSON (seed profile)"}
