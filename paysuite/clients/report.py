"""What ``paysuite clients`` writes: the verdict, ``clients.json`` and ``clients.html``, masked.

The drivers return what the SDKs saw in clear (the tests compare tokens with the stub's); nothing
leaves the process that way. Every exchange is masked as the proxy masks its reports and HAR
(``paysuite_core.results.masking``: each client secret, access and refresh token replaced by a
stable placeholder such as ``«masked:access:2»``, so a reader still sees one token used twice), then
the SDKs' return values, the cells' texts and the state are masked with what was learnt, and a
last pass over each written text replaces any learnt value left.

The HTML page is conform's (``paysuite_core.report_engine.reports.to_html`` over ``results``,
without the offer of ``--reveal-secrets``: nothing ``paysuite clients`` writes carries a
credential): each cell is one ``CheckResult`` (its rule a ``Check`` of level "document" or
"SDK-only"), filed under the section of the document its operation belongs to (the SDK-only
routes under "Other"), with the cell's exchanges as evidence and their curl.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from paysuite.clients.matrix import OPERATIONS, SdkColumn, outcome_of
from paysuite_core.exchange import Exchange
from paysuite_core.results.evidence import evidence_of
from paysuite_core.results.masking import Masker, mask_exchange
from paysuite_core.results.rule import Check, Section
from paysuite_core.results.verdict import CheckResult, Coverage, Verdict

TITLE = "paysuite clients report"
PROFILE = "published SDKs"

#: Where the document describes each operation (the SDK-only routes are not in it).
_SECTIONS: dict[str, str] = {
    "authorize": Section.ENDPOINT_AUTHORIZE,
    "cashin": Section.ENDPOINT_CASHIN,
    "cashout": Section.ENDPOINT_CASHOUT,
    "find": Section.ENDPOINT_FIND,
    "events": Section.ENDPOINT_EVENTS,
    "events from/to": Section.ENDPOINT_EVENTS,
    "refresh": Section.ENDPOINT_REFRESH,
    "find after expiry": Section.AUTHENTICATION_4,
    "find after refresh": Section.AUTHENTICATION_4,
}
_RENEWED = (
    "After that the client obtains a new pair through the refresh endpoint with its refresh "
    "token, without using the client_secret again."
)
_QUOTES: dict[str, str] = {
    "authorize": "POST {base_url}/auth/agents/authorize ... Response: the token pair.",
    "cashin": "POST {base_url}/transactions/cashin ... Response: the transaction creation "
    "response with kind = CASHIN and status = pending.",
    "cashout": "POST {base_url}/transactions/cashout ... Response: the transaction creation "
    "response with kind = CASHOUT and status = pending.",
    "find": "GET {base_url}/transactions/find/{ref} ... Response: the transaction lookup response.",
    "events": "GET {base_url}/events/transactions ... Response: the event list envelope.",
    "events from/to": "GET {base_url}/events/transactions ... (the SDKs add from/to, which the "
    "live service accepts; the document does not name them)",
    "refresh": "GET {base_url}/auth/agents/refresh/{refresh_token} ... its examples call GET "
    "{base_url}/auth/refresh/{refresh_token}.",
    "find after expiry": _RENEWED,
    "find after refresh": _RENEWED,
}
_BEYOND = "Not in the document: the live service serves it and the published SDKs call it."
_OUTCOMES = {"ok": "passed", "fail": "failed", "error": "error"}


# --- masking ----------------------------------------------------------------------------------
def _as_exchange(record: dict[str, Any]) -> tuple[Exchange, bool]:
    """A driver's exchange record (JSON) as the ``Exchange`` the masker and the evidence take,
    and whether the request had a body (an empty one is not none)."""

    def headers(pairs: Any) -> tuple[tuple[str, str], ...]:
        return tuple((str(k), str(v)) for k, v in pairs or ())

    exchange = Exchange(
        elapsed_ms=float(record.get("elapsed_ms") or 0.0),
        method=str(record.get("method", "")),
        url=str(record.get("url", "")),
        request_headers=headers(record.get("request_headers")),
        request_body=str(record.get("request_body") or "").encode("utf-8"),
        status=int(record.get("status") or 0),
        response_headers=headers(record.get("response_headers")),
        response_body=str(record.get("response_body") or "").encode("utf-8"),
        error=str(record.get("error") or ""),
    )
    return exchange, record.get("request_body") is not None


def _masked_record(record: dict[str, Any], masker: Masker) -> dict[str, Any]:
    """A driver's exchange record as clients.json keeps it: every secret masked, with its curl."""
    exchange, had_body = _as_exchange(record)
    exchange = mask_exchange(exchange, masker)
    masked: dict[str, Any] = {
        "method": exchange.method,
        "url": exchange.url,
        "request_headers": [list(pair) for pair in exchange.request_headers],
        "request_body": exchange.request_body.decode("utf-8", "replace") if had_body else None,
        "status": exchange.status,
        "response_headers": [list(pair) for pair in exchange.response_headers],
        "response_body": exchange.response_body.decode("utf-8", "replace"),
        "elapsed_ms": exchange.elapsed_ms,
        "error": exchange.error,
    }
    masked["curl"] = evidence_of(exchange, masker, had_body=had_body)["curl"]
    return masked


def _masked_value(value: Any, masker: Masker) -> Any:
    """A JSON value with its token members and every learnt secret masked."""
    text = json.dumps(value, ensure_ascii=False)
    return json.loads(masker.body(text.encode("utf-8")).decode("utf-8"))


def _learn(columns: list[SdkColumn], masker: Masker) -> None:
    """Every secret the run met, learnt before anything is masked (a token first seen late is
    masked everywhere, not only after it)."""
    for column in columns:
        for cell in column.cells.values():
            for record in cell.get("exchanges") or ():
                mask_exchange(_as_exchange(record)[0], masker)
            if "data" in cell:
                _masked_value(cell["data"], masker)
        for key in ("refresh_before", "refresh_after"):
            if isinstance(column.state.get(key), str):
                masker.learn("refresh", column.state[key])


def mask_columns(columns: list[SdkColumn], masker: Masker) -> list[SdkColumn]:
    """Copies of ``columns`` fit to be written: no credential in any exchange, value or text."""
    _learn(columns, masker)
    masked: list[SdkColumn] = []
    for column in columns:
        cells: dict[str, dict[str, Any]] = {}
        for op, cell in column.cells.items():
            copy: dict[str, Any] = {}
            for key, value in cell.items():
                if key == "exchanges":
                    copy[key] = [_masked_record(record, masker) for record in value or ()]
                elif isinstance(value, str):
                    copy[key] = masker.text(value)
                else:
                    copy[key] = _masked_value(value, masker)
            cells[op] = copy
        masked.append(
            replace(
                column,
                cells=cells,
                state=_masked_value(column.state, masker),
                skip=masker.text(column.skip) if column.skip else column.skip,
                failure=masker.text(column.failure) if column.failure else column.failure,
            )
        )
    return masked


# --- verdict ----------------------------------------------------------------------------------
def _named(columns: list[SdkColumn], outcome: str) -> list[str]:
    return [
        f"{column.sdk} {op}"
        for column in columns
        for op, cell in column.cells.items()
        if outcome_of(cell) == outcome
    ]


def verdict_of(columns: list[SdkColumn]) -> Verdict:
    """1 when the target answered an operation not as an SDK needs; 2 when nothing broke but an
    operation got no usable answer within the limits, a driver gave no result, or no SDK could
    run here; else 0. Coverage: the cells that ran to ok or fail among all cells (which did not,
    and why, is each cell's own row: the clients' reports show no coverage beyond its count)."""
    ran = [column for column in columns if not column.skip]
    cells = [cell for column in ran for cell in column.cells.values()]
    judged = sum(1 for cell in cells if outcome_of(cell) in ("ok", "fail"))
    coverage = Coverage(run=judged, total=len(cells))
    run_errors = tuple(f"{column.sdk}: {column.failure}" for column in ran if column.failure)
    failed, errors = _named(columns, "fail"), _named(columns, "error")
    if failed:
        verdict, code = "fail", 1
        reason = f"{len(failed)} operation(s) broke: {', '.join(failed)}"
    elif errors or run_errors:
        verdict, code = "error", 2
        reason = (
            f"{len(errors)} operation(s) got no usable answer within the limits: "
            f"{', '.join(errors)}"
            if errors
            else run_errors[0]
        )
    elif not ran:
        verdict, code, reason = "error", 2, "no SDK could run here"
        run_errors = ("no SDK could run here",)
    else:
        verdict, code = "pass", 0
        reason = f"every operation of {', '.join(c.heading for c in ran)} worked"
    return Verdict(
        verdict=verdict,
        exit_code=code,
        profile=PROFILE,
        strict=True,
        coverage=coverage,
        run_errors=run_errors,
        reason=reason,
    )


def stopped_verdict(reason: str) -> Verdict:
    """The verdict of a run the pre-flight stopped before any SDK ran: error, exit 2."""
    return Verdict.stopped(reason, before="any SDK ran", profile=PROFILE, strict=True)


# --- clients.json -----------------------------------------------------------------------------
def to_json(
    columns: list[SdkColumn],
    verdict: Verdict,
    *,
    target: str,
    started_at: str,
    duration_s: float,
) -> dict[str, Any]:
    """The whole answer of every cell (masked ``columns``), under the run's verdict."""
    return {
        "verdict": verdict.verdict,
        "exit_code": verdict.exit_code,
        "reason": verdict.reason,
        "target": target,
        "started_at": started_at,
        "duration_s": duration_s,
        "operations": list(OPERATIONS),
        "sdks": [
            {
                "sdk": column.sdk,
                "version": column.version,
                "skip": column.skip,
                "failure": column.failure,
                "cells": column.cells,
                "state": column.state,
            }
            for column in columns
        ],
    }


# --- clients.html -----------------------------------------------------------------------------
def _slug(text: str) -> str:
    return "-".join(text.replace("/", " ").split())


def results(columns: list[SdkColumn], masker: Masker) -> list[CheckResult]:
    """One result per cell (masked ``columns``); an SDK that could not run is one skipped row."""
    out: list[CheckResult] = []
    for column in columns:
        if column.skip:
            check = Check(column.sdk, "SDK", "Other", f"{column.sdk}: not available here", _BEYOND)
            out.append(CheckResult(check, "skipped", f"not available: {column.skip}"))
            continue
        if column.failure and not column.cells:
            check = Check(column.sdk, "SDK", "Other", f"{column.heading}: driver", _BEYOND)
            out.append(CheckResult(check, "error", column.failure))
        ops = [op for op in OPERATIONS if op in column.cells]
        ops += [op for op in column.cells if op not in ops]
        for op in ops:
            cell = column.cells[op]
            outcome = outcome_of(cell)
            check = Check(
                id=f"{column.sdk}:{_slug(op)}",
                level="document" if op in _SECTIONS and op != "events from/to" else "SDK-only",
                section=_SECTIONS.get(op, "Other"),
                title=f"{column.heading}: {op}",
                quote=_QUOTES.get(op, _BEYOND),
            )
            detail = str(cell.get("detail") or "")
            out.append(
                CheckResult(
                    check,
                    _OUTCOMES.get(outcome, "skipped"),
                    message=detail if outcome != "ok" else "",
                    evidence=[  # the (masked) exchanges as conform's: request, answer, curl
                        evidence_of(exchange, masker, had_body=had_body)
                        for exchange, had_body in map(_as_exchange, cell.get("exchanges") or ())
                    ],
                    expected=str(cell.get("expected") or ""),
                    actual=str(cell.get("actual") or ""),
                    note=f"{len(cell.get('exchanges') or ())} exchange(s)"
                    if outcome == "ok"
                    else "",
                )
            )
    return out
