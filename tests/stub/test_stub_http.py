"""HTTP-level rules: JSON errors for 404/405/413/415/400, content types, no 500 on bad input."""

from __future__ import annotations

import httpx
import pytest
from stubkit import Api, refresh_url

from paysuite_core.tokens import AUTHORIZE_PATH


def _assert_error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["status"] == status and body["code"] == code and body["message"]
    return body


def test_healthz(api: Api) -> None:
    response = httpx.get(f"{api.root_url}/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.parametrize(
    "path", ["/api/nope", "/api/transactions/find/", "/api/transactions/cashin/x", "/", "/api"]
)
def test_unknown_route_is_json_404(api: Api, path: str) -> None:
    _assert_error(httpx.get(f"{api.root_url}{path}"), 404, "not_found")


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/api/transactions/cashin", "POST"),
        ("PUT", "/api/transactions/cashout", "POST"),
        ("POST", "/api/events/transactions", "GET"),
        ("DELETE", "/api/transactions/find/abc", "GET"),
        ("POST", "/api" + refresh_url("abc"), "GET"),
        ("GET", "/api" + AUTHORIZE_PATH, "POST"),
    ],
)
def test_wrong_method_is_json_405(api: Api, method: str, path: str, allow: str) -> None:
    response = httpx.request(method, f"{api.root_url}{path}")
    _assert_error(response, 405, "method_not_allowed")
    assert allow in response.headers["allow"]


def test_auth_comes_before_the_body(api: Api) -> None:
    response = api.http.post("/transactions/cashin", content=b"{not json")
    _assert_error(response, 401, "missing_token")


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_non_json_post_is_415(api: Api, content_type: str | None) -> None:
    headers = api.headers()
    if content_type:
        headers["Content-Type"] = content_type
    response = api.http.post(
        "/transactions/cashin", content=b'{"amount": 100, "number": "0781234567"}', headers=headers
    )
    _assert_error(response, 415, "unsupported_media_type")


def test_charset_suffix_is_fine(api: Api) -> None:
    response = api.http.post(
        "/transactions/cashin",
        content=b'{"amount": 100, "number": "0781234567"}',
        headers=api.headers(**{"Content-Type": "application/json; charset=utf-8"}),
    )
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"", "malformed_json"),
        (b"{", "malformed_json"),
        (b"\xff\xfe", "malformed_json"),
        (b"[1, 2]", "malformed_json"),
        (b'"text"', "malformed_json"),
        (b"null", "malformed_json"),
        (b"[" * 20000 + b"]" * 20000, "malformed_json"),
        (b"{}", "validation_error"),
    ],
)
def test_malformed_bodies(api: Api, content: bytes, code: str) -> None:
    for path in ("/transactions/cashin", "/transactions/cashout", AUTHORIZE_PATH):
        response = api.http.post(
            path, content=content, headers=api.headers(**{"Content-Type": "application/json"})
        )
        _assert_error(response, 400, code)


def test_oversized_body_is_413(api: Api) -> None:
    big = b'{"amount": 100, "number": "0781234567", "pad": "' + b"x" * 70_000 + b'"}'
    headers = api.headers(**{"Content-Type": "application/json"})
    response = api.http.post("/transactions/cashin", content=big, headers=headers)
    _assert_error(response, 413, "payload_too_large")

    def chunks():  # no Content-Length: the limit applies while reading
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    chunked = api.http.post("/transactions/cashin", content=chunks(), headers=headers)
    _assert_error(chunked, 413, "payload_too_large")
    at_limit = b'{"amount": 100, "number": "0781234567", "pad": "' + b"x" * 60_000 + b'"}'
    assert api.http.post("/transactions/cashin", content=at_limit, headers=headers).is_success


def test_gets_accept_a_content_type_and_none(api: Api) -> None:
    for extra in ({}, {"Content-Type": "application/json"}, {"Content-Type": "text/plain"}):
        assert api.http.get("/events/transactions", headers=api.headers(**extra)).is_success


def test_error_bodies_never_500_on_odd_input(api: Api) -> None:
    odd = [
        ("GET", "/api/transactions/find/%00%ff"),
        ("GET", "/api/events/transactions?limit=%ff&offset=%00"),
        ("GET", "/api/events/transactions?from=2026-01-01T25:00:00"),
        ("GET", "/api/events/transactions?to=9999-12-31T23:59:59.999999-23:59"),
        ("GET", "/api" + refresh_url("%ff%fe")),
        ("POST", "/api/transactions/cashin?Idempotency-Key=%ff"),
    ]
    for method, path in odd:
        response = httpx.request(
            method,
            f"{api.root_url}{path}",
            headers=api.headers(**{"Content-Type": "application/json"}),
            content=b'{"amount": 100, "number": "0781234567"}',
        )
        assert response.status_code < 500, (path, response.text)
        response.json()


def test_body_limit_is_exactly_64_kib(api: Api) -> None:
    headers = api.headers(**{"Content-Type": "application/json"})
    head = b'{"amount": 100, "number": "0781234567", "pad": "'
    exact = head + b"x" * (65_536 - len(head) - 2) + b'"}'
    assert len(exact) == 65_536
    assert api.http.post("/transactions/cashin", content=exact, headers=headers).status_code == 200
    over = api.http.post("/transactions/cashin", content=exact + b" ", headers=headers)
    _assert_error(over, 413, "payload_too_large")
