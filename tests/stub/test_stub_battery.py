"""The reliability battery, the parts not covered elsewhere: SIGKILL in the middle of
create and confirm/cancel storms (nothing acknowledged lost, nothing half-done), 20-way refresh
reuse, and a token attack list. (The 100-way key race is in test_stub_transactions.py, the
confirm-vs-cancel race in test_stub_lifecycle.py, SIGKILL after creates in
test_stub_process.py.) Bounded: a few hundred requests per case, loopback only."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import re
import time
from pathlib import Path

import httpx
import jwt
import pytest
from stubkit import Api, new_number, refresh_url

from paysuite_core.launcher import RunningStub, start_stub, stop_stub

ROUNDS = 2


async def _storm_then_kill(stub: RunningStub, requests: list[tuple[str, dict]], after: int):
    """Send every request at once; SIGKILL the stub once ``after`` answers came back. Returns
    the (request index, response) pairs answered before the kill."""
    answered: list[tuple[int, httpx.Response]] = []
    limits = httpx.Limits(max_connections=64)
    async with httpx.AsyncClient(timeout=20, limits=limits) as client:

        async def one(index: int, url: str, kwargs: dict) -> None:
            try:
                response = await client.post(url, **kwargs)
            except httpx.HTTPError:
                return  # killed mid-request: never acknowledged
            answered.append((index, response))
            if len(answered) == after:
                stub.process.kill()

        await asyncio.wait_for(
            asyncio.gather(*(one(i, url, kw) for i, (url, kw) in enumerate(requests))), 60
        )
    return answered


@pytest.mark.slow
def test_sigkill_during_a_create_storm_loses_nothing_acknowledged(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        stub = start_stub(tmp_path)
        api = Api(stub.base_url, stub.root_url, stub.config().applications)
        headers = api.headers()
        requests = [
            (
                f"{stub.base_url}/transactions/cashin",
                {"json": {"amount": 100 + i, "number": new_number()}, "headers": headers},
            )
            for i in range(150)
        ]
        answered = asyncio.run(_storm_then_kill(stub, requests, after=40))
        stop_stub(stub, kill=True)
        api.close()
        acknowledged = {r.json()["ref"]: i for i, r in answered if r.status_code == 200}
        assert len(acknowledged) >= 40, round_
        again = start_stub(tmp_path)
        api2 = Api(again.base_url, again.root_url, again.config().applications)
        try:
            for ref, index in acknowledged.items():
                found = api2.find(ref)
                assert found.status_code == 200, (round_, ref)
                assert found.json()["amount"] == 100 + index
                events = api2.events(ref=ref).json()["transactions"]
                assert [e["event_kind"] for e in events] == ["transaction:created"]
        finally:
            api2.close()
            stop_stub(again)


@pytest.mark.slow
def test_sigkill_during_a_confirm_cancel_storm_keeps_outcomes_consistent(tmp_path: Path) -> None:
    stub = start_stub(tmp_path)
    api = Api(stub.base_url, stub.root_url, stub.config().applications)
    refs = [api.create().json()["ref"] for _ in range(60)]
    api.close()
    for round_ in range(ROUNDS):
        requests = [
            (f"{stub.root_url}/_sandbox/transactions/{ref}/{action}", {})
            for ref in refs
            for action in ("confirm", "cancel")
        ]
        answered = asyncio.run(_storm_then_kill(stub, requests, after=30))
        stop_stub(stub, kill=True)
        outcomes = {
            requests[i][0].rsplit("/", 2)[1]: r.json()["status"]
            for i, r in answered
            if r.status_code == 200
        }
        assert outcomes, round_
        stub = start_stub(tmp_path)
        api = Api(stub.base_url, stub.root_url, stub.config().applications)
        for ref in refs:
            status = api.find(ref).json()["status"]
            events = api.events(ref=ref).json()["transactions"]
            processed = [e for e in events if e["event_kind"] == "transaction:processed"]
            if ref in outcomes:  # acknowledged: that outcome, recorded once
                assert status == outcomes[ref], (round_, ref)
            # never half done: processed exactly when one processed event says so
            assert len(processed) == (0 if status == "pending" else 1), (round_, ref, status)
        api.close()
        refs = [ref for ref in refs if ref not in outcomes] or refs
    stop_stub(stub)


def test_twenty_way_refresh_reuse_has_one_winner(api: Api) -> None:
    async def race(token: str) -> list[int]:
        async with httpx.AsyncClient(base_url=api.base_url, timeout=30) as client:
            responses = await asyncio.gather(*(client.get(refresh_url(token)) for _ in range(20)))
        return [r.status_code for r in responses]

    for _ in range(3):
        statuses = asyncio.run(race(api.pair(fresh=True)["refresh"]))
        assert statuses.count(200) == 1 and statuses.count(401) == 19, statuses


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict, claims: dict, signature: str = "") -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}.{signature}"


def _hs256(header: dict, claims: dict, key: bytes) -> str:
    """Signed by hand: PyJWT refuses some of the keys an attacker would try (the empty one)."""
    unsigned = _unsigned(header, claims)[:-1]
    digest = hmac.new(key, unsigned.encode(), hashlib.sha256).digest()
    return f"{unsigned}.{_b64(digest)}"


def _attacks(api: Api) -> dict[str, str]:
    """Tokens an attacker can make without the signing key (plus stolen-token abuses)."""
    real = api.pair(fresh=True)
    claims = jwt.decode(real["access"], options={"verify_signature": False})
    ten_years = {**claims, "exp": int(time.time()) + 10 * 365 * 86400}
    head, payload, signature = real["access"].split(".")
    forged_payload = _b64(json.dumps({**claims, "merchant": "DEMO02"}).encode())
    return {
        "alg none": _unsigned({"alg": "none", "typ": "JWT"}, ten_years),
        "alg None": _unsigned({"alg": "None", "typ": "JWT"}, ten_years),
        "alg NONE with the old signature": _unsigned({"alg": "NONE"}, ten_years, signature),
        "empty key": _hs256({"alg": "HS256", "typ": "JWT"}, ten_years, b""),
        "guessed key": jwt.encode(ten_years, "secret", algorithm="HS256"),
        "HS512": jwt.encode(ten_years, "x" * 64, algorithm="HS512"),
        "RS256 header, HMAC body": _unsigned({"alg": "RS256"}, ten_years, signature),
        "other merchant, real signature": f"{head}.{forged_payload}.{signature}",
        "signature stripped": f"{head}.{payload}.",
        "two segments": f"{head}.{payload}",
        "refresh token as access": real["refresh"],
        "kid path traversal": _hs256({"alg": "HS256", "kid": "../../dev/null"}, ten_years, b""),
        "jku to a key server": jwt.encode(
            ten_years, "k" * 32, algorithm="HS256", headers={"jku": "http://127.0.0.1:9/k"}
        ),
        "no sub": jwt.encode({k: v for k, v in ten_years.items() if k != "sub"}, "k" * 32),
    }


def _keys_in_database(stub: RunningStub) -> set[str]:
    """Every 64-hex string in the stub's database files: what a copied database gives away."""
    found: set[str] = set()
    for suffix in ("", "-wal"):
        path = Path(f"{stub.db_path}{suffix}")
        if path.exists():
            found |= {m.decode() for m in re.findall(rb"[0-9a-f]{64}", path.read_bytes())}
    return found


# the attacks sign with guessed short keys on purpose; PyJWT warns about each of them
@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
def test_token_attack_list(api: Api, stub: RunningStub) -> None:
    tokens = _attacks(api)  # expiry itself: test_stub_auth (it needs a 1 s TTL)
    claims = jwt.decode(api.pair(fresh=True)["access"], options={"verify_signature": False})
    ten_years = {**claims, "exp": int(time.time()) + 10 * 365 * 86400}
    for index, key in enumerate(sorted(_keys_in_database(stub))):
        tokens[f"key #{index} from a copied database"] = jwt.encode(ten_years, key)
    refused = {}
    for name, token in tokens.items():
        for method, path in (("GET", "/events/transactions"), ("POST", "/transactions/cashin")):
            response = api.http.request(
                method,
                path,
                headers={"Authorization": f"Bearer {token}"},
                json={"amount": 100, "number": new_number()},
            )
            refused[(name, method)] = (response.status_code, response.json().get("code"))
    accepted = {k: v for k, v in refused.items() if v[0] != 401}
    assert not accepted, accepted
    assert len(refused) >= 28
