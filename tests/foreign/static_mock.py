#!/usr/bin/env python3
"""A stateless mock of the service, the way Stoplight Prism's ``mock`` mode serves an OpenAPI file.

Why it exists: a mock generated from the interface answers every documented operation with
well-shaped example bodies, so a suite that only validates response shapes would pass it. The
conformance suite must fail it: nothing is created, the same ref comes back every time, tokens are
the placeholder ``"string"``, confirming changes nothing, and any credentials are accepted.

Like Prism it validates requests loosely (an absent Authorization header on a protected operation
is a 401, a missing required body field a 422, both as ``application/problem+json``) and answers
200 with the operation's example otherwise, whatever the input.

Run: ``python tests/foreign/static_mock.py --port 0 --config-out FILE``; prints
``listening on http://127.0.0.1:PORT`` once the target configuration is written.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

FIXED_REF = "3fa85f64-5717-4562-b3fc-2c963f66afa6"  # Prism's favourite example UUID
FIXED_EVENT_ID = "8d0a4c4f-9a54-4f0e-8b43-1f1b2f3c4d5e"
CREATED_AT = "2021-12-17T10:06:32.421455842Z"
PROBLEM = "application/problem+json"

TOKEN_PAIR = {"access": "string", "refresh": "string", "expires": 900}
EVENT_DATA = {
    "ref": FIXED_REF,
    "kind": "CASHIN",
    "fee": 2.3,
    "merchant": "HDJUD",
    "client": "0780633341",
    "amount": 100,
    "status": "pending",
    "created_at": CREATED_AT,
    "processed_at": CREATED_AT,
}
EVENTS = {
    "amount": 100,
    "client": "0780633341",
    "event-kind": "transaction:created",
    "kind": "CASHIN",
    "limit": 20,
    "offset": 0,
    "ref": FIXED_REF,
    "status": "pending",
    "total": 1,
    "transactions": [
        {
            "event_id": FIXED_EVENT_ID,
            "event_kind": "transaction:created",
            "created_at": CREATED_AT,
            "data": EVENT_DATA,
        }
    ],
}
FOUND = {
    "amount": 100,
    "client": "0780633341",
    "fee": 2.3,
    "kind": "CASHIN",
    "merchant": "HDJUD",
    "ref": FIXED_REF,
    "status": "pending",
    "timestamp": "2021-12-17T12:06:32.421455842+02:00",
}


def creation(kind: str) -> dict[str, Any]:
    return {
        "amount": 100,
        "created_at": CREATED_AT,
        "kind": kind,
        "ref": FIXED_REF,
        "status": "pending",
    }


def problem(status: int, kind: str, title: str, detail: str, **extra: Any) -> web.Response:
    """Prism's error shape (RFC 7807) with its error type names."""
    body = {
        "type": f"https://stoplight.io/prism/errors#{kind}",
        "title": title,
        "status": status,
        "detail": detail,
        **extra,
    }
    return web.Response(status=status, text=json.dumps(body), content_type=PROBLEM)


def unauthorized() -> web.Response:
    return problem(
        401,
        "UNAUTHORIZED",
        "Invalid security scheme used",
        "Your request does not fullfil the security requirements and no HTTP unauthorized "
        "response was found in the spec, so Prism is generating this error for you.",
    )


async def missing_fields(request: web.Request, required: Sequence[str]) -> web.Response | None:
    """A 422 naming the first absent required property, or None when the body is acceptable."""
    raw = await request.read()
    try:
        body = json.loads(raw) if raw.strip() else None
    except ValueError:
        body = None
    if not isinstance(body, dict):
        messages = ["request body must be object"]
    else:
        messages = [f"must have required property '{f}'" for f in required if f not in body]
    if not messages:
        return None
    return problem(
        422,
        "UNPROCESSABLE_ENTITY",
        "Invalid request",
        "Your request is not valid and no HTTP validation response was found in the spec, so "
        "Prism is generating this error for you.",
        validation=[
            {"location": ["body"], "severity": "Error", "code": "required", "message": m}
            for m in messages
        ],
    )


def protected(request: web.Request) -> bool:
    return "Authorization" in request.headers


async def cashin(request: web.Request) -> web.Response:
    if not protected(request):
        return unauthorized()
    return await missing_fields(request, ("amount", "number")) or web.json_response(
        creation("CASHIN")
    )


async def cashout(request: web.Request) -> web.Response:
    if not protected(request):
        return unauthorized()
    return await missing_fields(request, ("amount", "number")) or web.json_response(
        creation("CASHOUT")
    )


async def find(request: web.Request) -> web.Response:
    return web.json_response(FOUND) if protected(request) else unauthorized()


async def events(request: web.Request) -> web.Response:
    return web.json_response(EVENTS) if protected(request) else unauthorized()


async def authorize(request: web.Request) -> web.Response:
    required = ("client_id", "client_secret")
    return await missing_fields(request, required) or web.json_response(TOKEN_PAIR)


async def refresh(request: web.Request) -> web.Response:
    return web.json_response(TOKEN_PAIR)


async def sandbox(request: web.Request) -> web.Response:
    """The customer driver's endpoint: says yes, changes nothing (there is nothing to change)."""
    return web.json_response({})


async def no_path(request: web.Request) -> web.Response:
    return problem(
        404,
        "NO_PATH_MATCHED_ERROR",
        "Route not resolved, no path matched",
        f"The route {request.path} hasn't been found in the specification file",
    )


def build_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/api/transactions/cashin", cashin)
    app.router.add_post("/api/transactions/cashout", cashout)
    app.router.add_get("/api/transactions/find/{ref}", find)
    app.router.add_get("/api/events/transactions", events)
    app.router.add_post("/api/auth/agents/authorize", authorize)
    app.router.add_get("/api/auth/agents/refresh/{refresh_token}", refresh)
    app.router.add_get("/api/auth/refresh/{refresh_token}", refresh)
    app.router.add_post("/sim/{ref}/{action:confirm|cancel}", sandbox)
    app.router.add_route("*", "/{tail:.*}", no_path)
    return app


def target_config(root: str) -> dict[str, Any]:
    """Credentials are arbitrary: the mock accepts any, which is exactly what must be caught."""
    apps = [
        {"client_id": f"mock-{p}", "client_secret": "s3cret", "privilege": p, "merchant": "M1"}
        for p in ("read-write", "read", "cashin", "cashout")
    ]
    apps.append(
        {
            "client_id": "mock-m2",
            "client_secret": "s3cret",
            "privilege": "read-write",
            "merchant": "M2",
        }
    )
    return {
        "base_url": f"{root}/api",
        "applications": apps,
        "customer": {
            "driver": "sandbox",
            "confirm": f"POST {root}/sim/{{ref}}/confirm",
            "cancel": f"POST {root}/sim/{{ref}}/cancel",
            "timeout_s": 10,
        },
        "access_token_ttl_s": 900,
        "max_wait_s": 30,
        "number_pattern": "^07[2389][0-9]{7}$",
        "amount": {"min": 1, "max": 1_000_000},
    }


def write_config(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(
        "# written by tests/foreign/static_mock.py\n" + yaml.safe_dump(data, sort_keys=False),
        encoding="utf-8",
    )
    os.replace(temporary, path)


async def serve(args: argparse.Namespace) -> None:
    runner = web.AppRunner(build_app(), access_log=None, shutdown_timeout=0.2)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", args.port).start()
    root = f"http://127.0.0.1:{runner.addresses[0][1]}"
    write_config(args.config_out, target_config(root))
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print(f"listening on {root}", flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A Prism-like static mock of the service.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--config-out", type=Path, required=True)
    asyncio.run(serve(parser.parse_args(argv)))


if __name__ == "__main__":
    main()
