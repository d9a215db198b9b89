"""Secrets never reach what is written, and the placeholders keep what a reader and a replay need:
which token was used where."""

from __future__ import annotations

import json

from paysuite_core.exchange import Exchange
from paysuite_core.results.masking import Masker, mask_exchange, placeholders_in
from paysuite_core.target_config import parse_target_config
from paysuite_core.tokens import AUTHORIZE_PATH as AUTHORIZE
from paysuite_core.tokens import REFRESH_PATHS

SECRET = "s3cr3t-0f-the-app-Xy"
ACCESS_1 = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhcHAxIn0.first-signature-abc"
ACCESS_2 = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhcHAxIn0.second-signature-xyz"
REFRESH_1 = "rfr-0123456789abcdef-one"
REFRESH_2 = "rfr-0123456789abcdef-two"
BASE = "http://127.0.0.1:9/api"
#: The two documented refresh paths without their token, as the URLs here are written.
REFRESH, SDK_REFRESH = (path.replace("{token}", "") for path in REFRESH_PATHS)


def exchange(
    seq: int,
    method: str,
    path: str,
    *,
    headers: tuple[tuple[str, str], ...] = (),
    body: object = None,
    status: int = 200,
    answer: object = None,
    error: str = "",
) -> Exchange:
    return Exchange(
        seq=seq,
        started=1_700_000_000.0 + seq,
        elapsed_ms=1.5,
        method=method,
        url=BASE + path,
        request_headers=(("Accept", "application/json"), *headers),
        request_body=b"" if body is None else json.dumps(body).encode(),
        status=status,
        response_headers=(("Content-Type", "application/json"),),
        response_body=b"" if answer is None else json.dumps(answer).encode(),
        error=error,
    )


def bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("Authorization", f"Bearer {token}"),)


def session() -> list[Exchange]:
    """authorize, two calls with the access token, a refresh on both paths, a call with the new
    token, and a refused call whose error message echoes the old token."""
    return [
        exchange(
            1, "POST", AUTHORIZE,
            body={"client_id": "app-1", "client_secret": SECRET},
            answer={"access": ACCESS_1, "refresh": REFRESH_1, "expires": 900},
        ),
        exchange(2, "GET", "/transactions/find/r1", headers=bearer(ACCESS_1)),
        exchange(3, "GET", "/events/transactions", headers=(("Authorization", ACCESS_1),)),
        exchange(
            4, "GET", f"{REFRESH}{REFRESH_1}",
            answer={"access": ACCESS_2, "refresh": REFRESH_2, "expires": 900},
        ),
        exchange(5, "GET", f"{SDK_REFRESH}{REFRESH_1}", status=401, answer={"error": "reused"}),
        exchange(6, "GET", "/transactions/find/r1", headers=bearer(ACCESS_2)),
        exchange(
            7, "GET", f"/transactions/find/r1?token={ACCESS_1}",
            headers=(("Authorization", f"Bearer {ACCESS_1}"),), status=401,
            answer={"message": f"token {ACCESS_1} expired"}, error=f"saw {ACCESS_1}",
        ),
    ]  # fmt: skip


def written(exchanges: list[Exchange]) -> str:
    """Everything of an exchange that a report or a HAR file could carry, as one text."""
    parts = []
    for item in exchanges:
        parts += [item.url, item.error, *item.notes]
        parts += [f"{k}: {v}" for k, v in (*item.request_headers, *item.response_headers)]
        parts += [item.request_body.decode(), item.response_body.decode()]
    return "\n".join(parts)


def test_no_secret_survives_masking() -> None:
    raw = session()
    assert SECRET in written(raw) and ACCESS_1 in written(raw)  # the test data has them
    masker = Masker()
    masked = [mask_exchange(item, masker) for item in raw]
    text = written(masked)
    for value in (SECRET, ACCESS_1, ACCESS_2, REFRESH_1, REFRESH_2):
        assert value not in text


def test_the_same_value_gets_the_same_placeholder_in_every_place() -> None:
    masker = Masker()
    masked = [mask_exchange(item, masker) for item in session()]
    authorize, find, events, refresh, reuse, find_new, refused = masked
    assert authorize.request_json()["client_secret"] == "«masked:secret:1»"
    assert authorize.response_json()["access"] == "«masked:access:1»"
    assert authorize.response_json()["refresh"] == "«masked:refresh:1»"
    assert find.request_header("authorization") == "Bearer «masked:access:1»"
    assert events.request_header("authorization") == "«masked:access:1»"  # a bare token
    assert refresh.url == BASE + f"{REFRESH}«masked:refresh:1»"
    assert refresh.response_json() == {
        "access": "«masked:access:2»", "refresh": "«masked:refresh:2»", "expires": 900,
    }  # fmt: skip
    # the reused refresh token is visibly the same one: the evidence of a rotation violation
    assert reuse.url == BASE + f"{SDK_REFRESH}«masked:refresh:1»"
    assert find_new.request_header("authorization") == "Bearer «masked:access:2»"
    assert refused.url.endswith("?token=«masked:access:1»")
    assert refused.response_json() == {"message": "token «masked:access:1» expired"}
    assert refused.error == "saw «masked:access:1»"


def test_masking_changes_nothing_but_the_secrets() -> None:
    """Bytes around a secret are kept as sent: whitespace, key order, other members."""
    raw = exchange(1, "POST", AUTHORIZE)
    body = b'{ "client_id" :"app-1",\n  "client_secret":  "' + SECRET.encode() + b'", "x": 1}'
    masked = mask_exchange(
        Exchange(**{**raw.__dict__, "request_body": body}), Masker()
    ).request_body
    expected = '{ "client_id" :"app-1",\n  "client_secret":  "«masked:secret:1»", "x": 1}'
    assert masked == expected.encode()
    other = exchange(2, "GET", "/transactions/find/r1", answer={"ref": "r1", "status": "pending"})
    assert mask_exchange(other, Masker()) == other


def test_short_secrets_are_masked_where_the_document_puts_them() -> None:
    """A two-letter secret is masked in its member, but not searched for in other text."""
    raw = exchange(
        1,
        "POST",
        AUTHORIZE,
        body={"client_id": "ab-app", "client_secret": "ab"},
        answer={"access": "tk", "refresh": "rf"},
    )
    masked = mask_exchange(raw, Masker())
    assert masked.request_json() == {"client_id": "ab-app", "client_secret": "«masked:secret:1»"}
    assert masked.response_json() == {
        "access": "«masked:access:1»",
        "refresh": "«masked:refresh:1»",
    }


def test_secrets_of_the_configuration_are_masked_even_in_a_body_that_is_not_json() -> None:
    config = parse_target_config(
        {"base_url": BASE, "applications": [{"client_id": "app-1", "client_secret": SECRET}]}
    )
    raw = exchange(1, "POST", AUTHORIZE)
    broken = Exchange(**{**raw.__dict__, "request_body": f"client_secret={SECRET}&x".encode()})
    masked = mask_exchange(broken, Masker.for_config(config))
    assert masked.request_body == "client_secret=«masked:secret:1»&x".encode()


def test_a_body_that_is_not_utf8_is_masked_as_bytes() -> None:
    masker = Masker()
    masker.learn("access", ACCESS_1)
    raw = exchange(1, "POST", "/transactions/cashin")
    binary = Exchange(**{**raw.__dict__, "request_body": b"\xff\xfe" + ACCESS_1.encode()})
    assert mask_exchange(binary, masker).request_body == b"\xff\xfe" + "«masked:access:1»".encode()


def test_masking_twice_is_masking_once() -> None:
    masker = Masker()
    once = [mask_exchange(item, masker) for item in session()]
    assert [mask_exchange(item, masker) for item in once] == once
    assert placeholders_in(once[3].url) == ["«masked:refresh:1»"]


def test_a_scheme_without_a_credential_is_left_alone() -> None:
    masker = Masker()
    assert masker.authorization("Bearer") == "Bearer"
    assert masker.authorization("") == ""
    assert masker.authorization("Bearer  tok-1234567") == "Bearer «masked:access:1»"


def test_a_percent_encoded_refresh_token_is_the_same_token() -> None:
    masker = Masker()
    issued = exchange(1, "POST", AUTHORIZE, answer={"refresh": "rf/with=odd+chars"})
    used = exchange(2, "GET", f"{SDK_REFRESH}rf%2Fwith%3Dodd%2Bchars")
    assert mask_exchange(issued, masker).response_json() == {"refresh": "«masked:refresh:1»"}
    assert mask_exchange(used, masker).url == BASE + f"{SDK_REFRESH}«masked:refresh:1»"


def test_secrets_in_a_form_or_a_query_are_masked_too() -> None:
    """A client that posts its credentials as a form, or sends a token in a query string."""
    masker = Masker()
    raw = exchange(1, "POST", AUTHORIZE + "?access_token=tok%2B1234567&x=1")
    form = Exchange(**{**raw.__dict__, "request_body": b"client_id=app-1&client_secret=s3+cr%2Bt"})
    masked = mask_exchange(form, masker)
    assert masked.request_body == "client_id=app-1&client_secret=«masked:secret:1»".encode()
    assert masked.url.endswith("?access_token=«masked:access:1»&x=1")
    assert masker.learn("secret", "s3 cr+t") == "«masked:secret:1»"  # decoded as a form decodes
    assert masker.learn("access", "tok+1234567") == "«masked:access:1»"
