"""Authorize, refresh (both paths, rotation) and every way a token can be wrong."""

from __future__ import annotations

import base64
import json
import time

import jwt
import pytest
from stubkit import AGENTS_REFRESH_PATH, REFRESH_PREFIXES, Api, refresh_url

from paysuite_core.tokens import AUTHORIZE_PATH

ACCESS_ROUTES = [
    ("POST", "/transactions/cashin"),
    ("POST", "/transactions/cashout"),
    ("GET", "/transactions/find/00000000-0000-4000-8000-000000000000"),
    ("GET", "/events/transactions"),
    ("GET", "/merchants/me"),  # the SDK-only routes need the same token
    ("GET", "/transactions/list"),
]


def _b64(data: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def test_authorize_returns_the_pair(api: Api) -> None:
    before = time.time()
    response = api.authorize(api.app())
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"access", "refresh", "expires"}
    assert isinstance(body["expires"], int)
    assert before + 900 <= body["expires"] <= time.time() + 901
    access, refresh = _claims(body["access"]), _claims(body["refresh"])
    assert access["sub"] == "access" and refresh["sub"] == "refresh"
    assert access["merchant"] == "DEMO01" and access["perm"] == "read-write"
    assert access["exp"] == body["expires"]
    assert refresh["exp"] - refresh["iat"] >= 432_000 - 1
    assert jwt.get_unverified_header(body["access"])["alg"] == "HS256"


@pytest.mark.parametrize(
    ("payload", "status", "code"),
    [
        ({"client_id": "nope", "client_secret": "x"}, 401, "invalid_credentials"),
        ({"client_secret": "x"}, 400, "validation_error"),
        ({"client_id": "x"}, 400, "validation_error"),
        ({"client_id": 5, "client_secret": "x"}, 400, "validation_error"),
        ([], 400, "malformed_json"),
    ],
)
def test_authorize_rejections(api: Api, payload: object, status: int, code: str) -> None:
    response = api.http.post(AUTHORIZE_PATH, json=payload)
    assert response.status_code == status
    body = response.json()
    assert body["code"] == code and body["status"] == status
    if code == "validation_error":
        assert body["message"].split(":")[0] in ("client_id", "client_secret")


def test_wrong_secret_is_rejected(api: Api) -> None:
    app = api.app()
    response = api.http.post(
        AUTHORIZE_PATH,
        json={"client_id": app.client_id, "client_secret": app.client_secret + "x"},
    )
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_credentials"


def test_authorize_needs_json(api: Api) -> None:
    response = api.http.post(AUTHORIZE_PATH, content=b"client_id=x")
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"


@pytest.mark.parametrize("method,path", ACCESS_ROUTES)
@pytest.mark.parametrize(
    "header,code",
    [
        (None, "missing_token"),
        ("Basic abc", "missing_token"),
        ("Bearer", "missing_token"),
        ("Bearer not-a-jwt", "invalid_token"),
        ("Bearer a.b.c", "invalid_token"),
    ],
)
def test_missing_and_malformed_tokens(
    api: Api, method: str, path: str, header: str | None, code: str
) -> None:
    headers = {} if header is None else {"Authorization": header}
    response = api.http.request(
        method, path, headers=headers, json={"amount": 100, "number": "0781234567"}
    )
    assert response.status_code == 401
    assert response.json()["code"] == code


def _forged_tokens(api: Api) -> dict[str, str]:
    token = api.token()
    header, payload, signature = token.split(".")
    claims = _claims(token)
    tampered = _b64({**claims, "perm": "read-write", "merchant": "DEMO02"})
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    return {
        "tampered payload": f"{header}.{tampered}.{signature}",
        "tampered signature": f"{header}.{payload}.{flipped}",
        "wrong key": jwt.encode(claims, "not-the-stub-key-" * 4, algorithm="HS256"),
        "alg none": f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{payload}.",
        "refresh as access": api.pair()["refresh"],
    }


@pytest.mark.parametrize(
    "kind",
    [
        "tampered payload",
        "tampered signature",
        "wrong key",
        "alg none",
        "refresh as access",
    ],
)
@pytest.mark.parametrize("method,path", ACCESS_ROUTES)
def test_forged_tokens_are_rejected(api: Api, kind: str, method: str, path: str) -> None:
    token = _forged_tokens(api)[kind]
    response = api.http.request(
        method,
        path,
        headers={"Authorization": f"Bearer {token}"},
        json={"amount": 100, "number": "0781234567"},
    )
    assert response.status_code == 401, response.text
    assert response.json()["code"] == "invalid_token"


@pytest.mark.parametrize("path", REFRESH_PREFIXES)
def test_refresh_rotates_on_both_paths(api: Api, path: str) -> None:
    pair = api.pair(fresh=True)
    # The SDK keeps sending its old Authorization header: refresh ignores it.
    response = api.http.get(f"{path}/{pair['refresh']}")
    assert response.status_code == 200, response.text
    new = response.json()
    assert set(new) == {"access", "refresh", "expires"}
    assert new["refresh"] != pair["refresh"] and new["access"] != pair["access"]
    ok = api.http.get("/events/transactions", headers={"Authorization": f"Bearer {new['access']}"})
    assert ok.status_code == 200
    again = api.http.get(f"{path}/{pair['refresh']}")
    assert again.status_code == 401
    assert again.json()["code"] == "invalid_token"
    # the rotated token works once, on the other path too
    (other,) = set(REFRESH_PREFIXES) - {path}
    assert api.http.get(f"{other}/{new['refresh']}").status_code == 200


@pytest.mark.parametrize("path", REFRESH_PREFIXES)
def test_access_token_is_not_a_refresh_token(api: Api, path: str) -> None:
    response = api.http.get(f"{path}/{api.token()}")
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_token"


@pytest.mark.parametrize("path", REFRESH_PREFIXES)
def test_forged_refresh_tokens_are_rejected(api: Api, path: str) -> None:
    refresh = api.pair(fresh=True)["refresh"]
    header, payload, signature = refresh.split(".")
    claims = _claims(refresh)
    forged = {
        "tampered payload": f"{header}.{_b64({**claims, 'merchant': 'DEMO02'})}.{signature}",
        "wrong key": jwt.encode(claims, "not-the-stub-key-" * 4, algorithm="HS256"),
        "alg none": f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{payload}.",
    }
    for kind, token in forged.items():
        response = api.http.get(f"{path}/{token}")
        assert response.status_code == 401, kind
        assert response.json()["code"] == "invalid_token", kind
    assert api.http.get(f"{path}/{refresh}").status_code == 200  # the genuine one still works


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "eyJhbGciOiJub25lIn0.e30."])
def test_refresh_with_garbage(api: Api, token: str) -> None:
    response = api.http.get(refresh_url(token, AGENTS_REFRESH_PATH))
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_token"


def test_tokens_expire(inproc) -> None:
    """A 1 s TTL: the token works, then stops with token_expired, and a refreshed one works."""
    server = inproc(access_ttl_s=1, refresh_ttl_s=60)
    api = server.api
    pair = api.pair()
    assert pair["expires"] - time.time() <= 2
    headers = {"Authorization": f"Bearer {pair['access']}"}
    assert api.http.get("/events/transactions", headers=headers).status_code == 200
    time.sleep(max(0.0, pair["expires"] - time.time()) + 0.2)
    expired = api.http.get("/events/transactions", headers=headers)
    assert expired.status_code == 401
    assert expired.json()["code"] == "token_expired"
    new = api.http.get(refresh_url(pair["refresh"])).json()
    fresh = api.http.get(
        "/events/transactions", headers={"Authorization": f"Bearer {new['access']}"}
    )
    assert fresh.status_code == 200


def test_refresh_tokens_expire(inproc) -> None:
    server = inproc(access_ttl_s=1, refresh_ttl_s=1)
    pair = server.api.pair()
    time.sleep(max(0.0, _claims(pair["refresh"])["exp"] - time.time()) + 0.2)
    response = server.api.http.get(refresh_url(pair["refresh"], AGENTS_REFRESH_PATH))
    assert response.status_code == 401
    assert response.json()["code"] == "token_expired"


def test_well_signed_token_of_unknown_application(inproc) -> None:
    server = inproc()
    claims = _claims(server.api.token())
    token = server.stub.tokens.key
    forged = jwt.encode({**claims, "id": "ghost"}, token, algorithm="HS256")
    response = server.api.http.get(
        "/events/transactions", headers={"Authorization": f"Bearer {forged}"}
    )
    assert response.status_code == 401
    assert response.json()["code"] == "invalid_token"
    # and the same forgery with a known id succeeds: the key is the only secret
    genuine = jwt.encode(claims, token, algorithm="HS256")
    ok = server.api.http.get("/events/transactions", headers={"Authorization": f"Bearer {genuine}"})
    assert ok.status_code == 200
