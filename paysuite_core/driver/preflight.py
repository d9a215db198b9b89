"""Before a judge runs: the target answers at all, answers like this API, and takes every
application. ``paysuite conform`` and ``paysuite clients`` both stop here with one line (a
``SetupError``, exit status 2) rather than end in dozens of failures that all say the same
thing in the words of other rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from paysuite_core import tokens
from paysuite_core.bounded_http import Limits
from paysuite_core.cli_flags import SetupError
from paysuite_core.driver.api import EVENTS
from paysuite_core.driver.http import (
    RecordingClient,
    Reply,
    TargetUnreachable,
    ThrottledOut,
    oversized,
)
from paysuite_core.http_clients import httpx_client
from paysuite_core.results.outcome import CouldNotCheck
from paysuite_core.target_config import TargetConfig
from paysuite_core.throttle import Throttle
from paysuite_core.tls import TLSSettings, explain


def check_reachable(
    base_url: str, timeout_s: float = 10.0, *, tls: TLSSettings | None = None
) -> None:
    """Any HTTP answer at all will do (its body is not read); no answer is exit status 2.

    Over HTTPS this is where a certificate problem shows first, so its reason is the one line
    of ``paysuite_core.tls.explain`` (the host, the cause, the option that fixes it), not
    httpx's chain of wrappers."""
    try:
        with (
            httpx_client(tls, timeout=timeout_s, trust_env=True) as client,
            client.stream("GET", base_url + EVENTS),
        ):
            pass
    except httpx.HTTPError as exc:
        reason = explain(exc, base_url) or str(exc) or type(exc).__name__
        raise SetupError(f"cannot reach the target {base_url}: {reason}") from None


def _describe(reply: Reply) -> str:
    """``401 application/json {"message": ...}``: enough of an answer to say what went wrong."""
    media = (reply.content_type or "no Content-Type").split(";")[0]
    text = " ".join(reply.text.split())
    return f"{reply.status} {media} {text[:160]!r}"


def preflight(
    config: TargetConfig,
    limits: Limits | None = None,
    throttle: Throttle | None = None,
    *,
    tls: TLSSettings | None = None,
) -> None:
    """Before any check: the target answers JSON at the API's paths and takes every application.

    A run against a server that is not this API, or with credentials the target refuses, would
    otherwise end in dozens of failures that all say the same thing in the words of other rules.
    The requests are bounded like every other of the suite's (``paysuite_core.bounded_http``),
    and a 429 is waited for within the run's ``throttle`` like every other.
    """
    base = config.base_url
    client = RecordingClient(base, lambda: None, limits, throttle, tls)

    def send(method: str, path: str, **kwargs: Any) -> Reply:
        try:
            reply = client.request(method, path, **kwargs)
        except TargetUnreachable as exc:
            reason = explain(exc, base) or str(exc)
            raise SetupError(f"cannot reach the target {base}: {reason}") from None
        except ThrottledOut as exc:
            raise SetupError(f"the pre-flight could not run: {exc}") from None
        except CouldNotCheck as exc:
            if not oversized(exc):
                raise
            raise SetupError(f"the target at {base} does not answer like this API: {exc}") from None
        if 300 <= reply.status < 400:
            location = reply.headers.get("location", "no Location")
            raise SetupError(
                f"the target at {base} redirects {method} {path} ({reply.status} to {location}): "
                "paysuite follows no redirect; set base_url to where the API answers"
            )
        return reply

    @contextmanager
    def token_send(request: tokens.Request) -> Iterator[Reply]:
        yield send(request.method, request.path, json=request.json, headers=dict(request.headers))

    authorize = f"POST {tokens.AUTHORIZE_PATH}"
    try:
        access = ""
        for app in config.applications:
            who = f"application {app.client_id} ({app.privilege}, merchant {app.merchant})"
            reply = tokens.authorize(token_send, app)
            assert isinstance(reply, Reply)
            if reply.status == 404:  # the document's path: the base URL misses the API
                raise SetupError(tokens.no_api_at(base))
            if not isinstance(reply.body, dict):
                raise SetupError(
                    f"the target at {base} does not answer like this API: {authorize} "
                    f"answered {_describe(reply)}, not a JSON object"
                )
            if not reply.ok:
                raise SetupError(
                    f"the target refused {who}: {authorize} answered "
                    f"{_describe(reply)}; check client_id and client_secret in the config"
                )
            access = reply.get("access")
            if not isinstance(access, str) or not access:
                raise SetupError(
                    f"authorize of {who} answered {_describe(reply)} without an access token"
                )
        listing = send("GET", EVENTS, token=access)
        if not isinstance(listing.body, dict):
            raise SetupError(
                f"the target at {base} does not answer like this API: GET /events/transactions "
                f"answered {_describe(listing)}, not a JSON object"
            )
    finally:
        client.close()
