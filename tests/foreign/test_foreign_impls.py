"""Self-tests of the foreign fixtures: they must be what the suite's self-tests take them for.

Why: a self-test that proves "the suite fails check X on defect Y" is only as good as the defect
really being there, and "no false alarm on a conformant implementation" only as good as that
implementation really conforming. So each defect is shown here by a direct request (and the same
probe shows nothing on the conformant server), the conformant server walks the whole documented
flow, the mock answers its fixed examples and the not-API server answers HTML.

All servers start in parallel once per module (they are subprocesses, the cost is the Python start
up), which keeps the module near 20 s on two cores, half of it the waits of the time defects'
probes (model_defects.py), each run on the defect and the conformant server at once.
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import independent
import jwt
import pytest
from aiohttp import web
from defect_checks import DEFECT_CHECKS
from foreignkit import Foreign, spawn_foreign, start_foreign
from model_defects import KINDS as MODEL_KINDS
from model_defects import MODEL_DEFECTS

from paysuite_core.target_config import Application, TargetConfig, load_target_config

#: One worker runs this module: its checks share one fleet of foreign servers.
pytestmark = pytest.mark.xdist_group("foreign-fleet")

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
NANO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")
NANO_OFFSET = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}\+00:00$")
SHORT_TTL = ("--access-ttl", "1")
#: Defects served with access tokens of this lifetime (s), so that their probe can outwait one.
SHORT_TTL_DEFECTS = {"expired-token-grace": 1}
#: The in-process server a probe must stay silent on, where the conformant one (tokens of 900 s)
#: cannot serve.
NEGATIVE_SERVER = {"expired-token-grace": "conformant-short-ttl"}
#: Rounds of a race probe: one round shows the race only if its requests overlap within
#: ``independent.RACE_GAP_S``, which a busy machine may not manage.
RACE_ROUNDS = 4


def new_number() -> str:
    """A fresh customer number, so that client filters isolate each test's transactions."""
    return f"078{secrets.randbelow(10**7):07d}"


@dataclass
class Session:
    """An HTTP client bound to one server through its target configuration."""

    config: TargetConfig
    client: httpx.Client
    _tokens: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    @property
    def base(self) -> str:
        return self.config.base_url

    def app(self, privilege: str = "read-write", merchant: str = "M1") -> Application:
        wanted = (privilege, merchant)
        return next(a for a in self.config.applications if (a.privilege, a.merchant) == wanted)

    def authorize(self, privilege: str = "read-write", merchant: str = "M1") -> httpx.Response:
        app = self.app(privilege, merchant)
        body = {"client_id": app.client_id, "client_secret": app.client_secret}
        return self.client.post(f"{self.base}/auth/agents/authorize", json=body)

    def pair(self, privilege: str = "read-write", merchant: str = "M1") -> dict[str, Any]:
        key = (privilege, merchant)
        if key not in self._tokens:
            response = self.authorize(privilege, merchant)
            assert response.status_code == 200, response.text
            self._tokens[key] = response.json()
        return self._tokens[key]

    def headers(self, privilege: str = "read-write", merchant: str = "M1") -> dict[str, str]:
        return {"Authorization": f"Bearer {self.pair(privilege, merchant)['access']}"}

    def create(
        self,
        kind: str = "cashin",
        *,
        amount: Any = 100,
        number: str | None = None,
        key: str | None = None,
        privilege: str = "read-write",
        merchant: str = "M1",
        body: dict[str, Any] | None = None,
    ) -> httpx.Response:
        headers = self.headers(privilege, merchant)
        if key is not None:
            headers["Idempotency-Key"] = key
        payload = body if body is not None else {"amount": amount, "number": number or new_number()}
        return self.client.post(f"{self.base}/transactions/{kind}", json=payload, headers=headers)

    def created_ref(self, kind: str = "cashin", **kwargs: Any) -> str:
        response = self.create(kind, **kwargs)
        assert response.status_code == 201, response.text
        return str(response.json()["ref"])

    def find(self, ref: str, merchant: str = "M1") -> httpx.Response:
        headers = self.headers("read-write", merchant)
        return self.client.get(f"{self.base}/transactions/find/{ref}", headers=headers)

    def events(self, merchant: str = "M1", **params: Any) -> dict[str, Any]:
        response = self.client.get(
            f"{self.base}/events/transactions",
            params=params,
            headers=self.headers("read-write", merchant),
        )
        assert response.status_code == 200, response.text
        data: dict[str, Any] = response.json()
        return data

    def customer(self, ref: str, action: str) -> httpx.Response:
        customer = self.config.customer
        template = {"confirm": customer.confirm, "cancel": customer.cancel}[action]
        assert template is not None
        return self.client.request(template.method, template.url(ref))


def session_for(config_path: Path) -> Session:
    return Session(load_target_config(config_path), httpx.Client(timeout=5))


class InProcessServers:
    """Defect variants served from this process, on one event-loop thread.

    Why not subprocesses: each costs a Python start-up, and nineteen of them on two shared cores
    took longer than this whole module may. The code served is the same ``independent.py``
    (``build_app`` and ``State``); the script's own launch path, ``--defect`` parsing included, is
    exercised by the subprocesses of the ``fleet`` fixture.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.runners: list[web.AppRunner] = []

    def serve(self, name: str, access_ttl_s: int = 900, defect: str | None = None) -> Path:
        """Start one server; returns the path of its target configuration."""
        state = independent.State(access_ttl_s, defect)
        independent.seed_apps(state)
        root = asyncio.run_coroutine_threadsafe(self._start(state), self.loop).result(10)
        path = self.directory / f"{name}.yaml"
        independent.write_config(path, independent.target_config(state, root), name)
        return path

    async def _start(self, state: independent.State) -> str:
        runner = web.AppRunner(independent.build_app(state), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self.runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}"

    def close(self) -> None:
        for runner in self.runners:
            asyncio.run_coroutine_threadsafe(runner.cleanup(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Foreign]]:
    """The subprocess servers this module needs, started in parallel, stopped at the end."""
    root = tmp_path_factory.mktemp("foreign")
    plan: dict[str, tuple[str, tuple[str, ...]]] = {
        "conformant": ("independent", ()),
        "expired-token-accepted": (
            "independent",
            ("--defect", "expired-token-accepted", *SHORT_TTL),
        ),
        "mock": ("static_mock", ()),
        "not_api": ("not_api", ()),
        "sigterm-independent": ("independent", ()),
        "sigterm-mock": ("static_mock", ()),
        "sigterm-not_api": ("not_api", ()),
    }
    pending = {name: spawn_foreign(script, root, *args) for name, (script, args) in plan.items()}
    servers: dict[str, Foreign] = {}
    try:
        for name, started in pending.items():
            servers[name] = started.ready()
        yield servers
    finally:
        for started in pending.values():
            if started.process.poll() is None:
                started.process.terminate()
        for started in pending.values():
            try:
                started.process.wait(5)
            except subprocess.TimeoutExpired:
                started.process.kill()


@pytest.fixture(scope="module")
def in_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Session]]:
    """Every defect but expired-token-accepted (a subprocess), and a short-TTL conformant."""
    servers = InProcessServers(tmp_path_factory.mktemp("in-process"))
    try:
        sessions = {
            defect: session_for(
                servers.serve(defect, SHORT_TTL_DEFECTS.get(defect, 900), defect=defect)
            )
            for defect in independent.DEFECTS
            if defect != "expired-token-accepted"
        }
        sessions["conformant-short-ttl"] = session_for(servers.serve("short-ttl", access_ttl_s=1))
        yield sessions
    finally:
        servers.close()


@pytest.fixture(scope="module")
def conformant(fleet: dict[str, Foreign]) -> Session:
    return session_for(fleet["conformant"].config_path)


# --- the conformant independent implementation ----------------------------------------------


def test_configs_parse_with_the_project_parser(fleet: dict[str, Foreign]) -> None:
    for name in ("conformant", "mock", "not_api"):
        server = fleet[name]
        config = load_target_config(server.config_path)
        assert config.base_url == f"{server.root_url}/api"
        assert config.customer.driver == "sandbox"
        assert config.customer.confirm is not None and config.customer.cancel is not None
        assert config.customer.confirm.url("R").startswith(server.root_url)
        assert set(config.merchants()) == {"M1", "M2"}
    config = load_target_config(fleet["conformant"].config_path)
    assert sorted(a.privilege for a in config.applications if a.merchant == "M1") == [
        "cashin",
        "cashout",
        "read",
        "read-write",
    ]
    assert [a.privilege for a in config.applications if a.merchant == "M2"] == ["read-write"]
    confirm = config.customer.confirm
    assert confirm is not None and confirm.render().endswith("/sim/customer/{ref}?action=confirm")
    assert config.access_token_ttl_s == 900
    assert re.fullmatch(config.effective_number_pattern, "0781234567")
    assert (config.amount.min, config.amount.max) == (1, 1_000_000)
    short = load_target_config(fleet["expired-token-accepted"].config_path)
    assert short.access_token_ttl_s == 1


def test_full_flow(conformant: Session) -> None:
    s = conformant
    response = s.authorize()
    assert response.status_code == 200
    pair = response.json()
    assert set(pair) == {"access", "refresh", "expires"} and isinstance(pair["expires"], int)
    claims = jwt.decode(pair["access"], options={"verify_signature": False})
    assert claims["sub"] == "access" and claims["exp"] - claims["iat"] == 900
    assert claims["exp"] == pair["expires"] and claims["merchant"] == "M1"
    assert {"id", "perm"} <= set(claims)
    bearer = {"Authorization": f"Bearer {pair['access']}"}

    number = new_number()
    created = s.client.post(
        f"{s.base}/transactions/cashin", json={"amount": 250, "number": number}, headers=bearer
    )
    assert created.status_code == 201
    body = created.json()
    assert set(body) == {"amount", "created_at", "kind", "ref", "status"}
    assert (body["amount"], body["kind"], body["status"]) == (250, "CASHIN", "pending")
    assert UUID.match(body["ref"]) and NANO_Z.match(body["created_at"])
    ref = body["ref"]

    found = s.client.get(f"{s.base}/transactions/find/{ref}", headers=bearer).json()
    assert found["ref"] == ref and found["client"] == number and found["merchant"] == "M1"
    assert found["status"] == "pending" and found["kind"] == "CASHIN"
    assert isinstance(found["fee"], (int, float)) and NANO_OFFSET.match(found["timestamp"])

    listed = s.client.get(f"{s.base}/events/transactions", params={"ref": ref}, headers=bearer)
    envelope = listed.json()
    assert set(envelope) == {"limit", "offset", "ref", "total", "transactions"}
    assert (envelope["limit"], envelope["offset"], envelope["total"]) == (10, 0, 1)
    (event,) = envelope["transactions"]
    assert event["event_kind"] == "transaction:created" and UUID.match(event["event_id"])
    assert event["data"]["status"] == "pending" and NANO_Z.match(event["created_at"])

    short_path = s.client.get(f"{s.base}/auth/refresh/{pair['refresh']}")
    assert short_path.status_code == 200 and isinstance(short_path.json()["expires"], int)
    again = s.client.get(f"{s.base}/auth/refresh/{pair['refresh']}")
    assert again.status_code == 200, "refresh tokens are reusable (no rotation)"
    long_path = s.client.get(f"{s.base}/auth/agents/refresh/{pair['refresh']}")
    assert long_path.status_code == 404 and long_path.json()["status"] == 404
    not_access = s.client.get(
        f"{s.base}/transactions/find/{ref}", headers={"Authorization": f"Bearer {pair['refresh']}"}
    )
    assert not_access.status_code == 401
    refreshed = {"Authorization": f"Bearer {again.json()['access']}"}

    confirmed = s.customer(ref, "confirm")
    assert confirmed.status_code == 200
    after = s.client.get(f"{s.base}/transactions/find/{ref}", headers=refreshed).json()
    assert after["status"] == "successful"
    assert s.customer(ref, "cancel").status_code == 409
    events = s.events(ref=ref)["transactions"]
    assert [e["event_kind"] for e in events] == ["transaction:created", "transaction:processed"]
    assert events[1]["data"]["status"] == "successful"
    assert NANO_Z.match(events[1]["data"]["processed_at"])

    cancelled = s.created_ref("cashout")
    assert s.customer(cancelled, "cancel").status_code == 200
    assert s.find(cancelled).json()["status"] == "failed"
    assert s.customer(cancelled, "confirm").status_code == 409
    assert s.find(cancelled).json()["status"] == "failed"
    explode = s.client.post(
        f"{s.config.base_url.removesuffix('/api')}/sim/customer/{ref}", params={"action": "explode"}
    )
    assert explode.status_code == 400
    assert s.customer("no-such-ref", "confirm").status_code == 404


def test_idempotency(conformant: Session) -> None:
    s = conformant
    number, key = new_number(), secrets.token_hex(8)
    assert s.create(number=number, key=key).status_code == 201
    reused = s.create(number=number, key=key)
    assert reused.status_code == 409 and set(reused.json()) == {"status", "message"}
    assert s.create("cashout", number=number, key=key).status_code == 409
    assert s.create(number=number, key=key, merchant="M2").status_code == 409, "global scope"
    query = secrets.token_hex(8)
    url = f"{s.base}/transactions/cashin"
    as_query = s.client.post(
        url, params={"Idempotency-Key": query}, json={"amount": 1, "number": number},
        headers=s.headers(),
    )  # fmt: skip
    assert as_query.status_code == 201
    assert s.create(number=number, key=query).status_code == 409, "query and header share keys"
    assert s.create(number=number, key="").status_code == 201, "empty key is absent"
    assert s.create(number=number, key="").status_code == 201
    assert s.create(number=number, key="k" * 33).status_code == 400
    assert s.create(number=number, key="k" * 31 + secrets.token_hex(1)[:1]).status_code == 201
    assert s.events(client=number)["total"] == 5


def test_concurrent_requests_with_one_key_create_one_transaction(conformant: Session) -> None:
    s = conformant
    number, key = new_number(), secrets.token_hex(8)
    headers = {**s.headers(), "Idempotency-Key": key}

    async def burst() -> list[int]:
        async with httpx.AsyncClient(timeout=5) as client:
            requests = [
                client.post(
                    f"{s.base}/transactions/cashin",
                    json={"amount": 5, "number": number},
                    headers=headers,
                )
                for _ in range(20)
            ]
            return [r.status_code for r in await asyncio.gather(*requests)]

    codes = asyncio.run(burst())
    assert sorted(codes) == [201] + [409] * 19
    assert s.events(client=number)["total"] == 1


def test_validation_and_errors(conformant: Session) -> None:
    s = conformant
    for body in (
        {"number": new_number()},
        {"amount": 100},
        {"amount": "100", "number": new_number()},
        {"amount": 0, "number": new_number()},
        {"amount": -5, "number": new_number()},
        {"amount": True, "number": new_number()},
        {"amount": 100, "number": ""},
        {"amount": 100, "number": 781234567},
    ):
        response = s.create(body=body)
        assert response.status_code == 400, body
        assert set(response.json()) == {"status", "message"} and response.json()["status"] == 400
    extra = s.create(body={"amount": 1.5, "number": "anything", "currency": "RWF"})
    assert extra.status_code == 201 and extra.json()["amount"] == 1.5
    as_text = s.client.post(
        f"{s.base}/transactions/cashin",
        content=b'{"amount": 7, "number": "0781111111"}',
        headers={**s.headers(), "Content-Type": "text/plain"},
    )
    assert as_text.status_code == 201, "any request media type is accepted"
    broken = s.client.post(f"{s.base}/transactions/cashin", content=b"{", headers=s.headers())
    assert broken.status_code == 400
    unknown = s.client.get(f"{s.base}/nowhere")
    assert unknown.status_code == 404 and unknown.json() == {"status": 404, "message": "Not Found"}
    assert s.find("not-a-ref").status_code == 404
    bad_login = s.client.post(
        f"{s.base}/auth/agents/authorize",
        json={"client_id": s.app().client_id, "client_secret": "wrong"},
    )
    assert bad_login.status_code == 401 and bad_login.json()["status"] == 401
    assert s.client.post(f"{s.base}/auth/agents/authorize", json={}).status_code == 400


def test_authorization_forms(conformant: Session) -> None:
    s = conformant
    url = f"{s.base}/events/transactions"
    access = s.pair()["access"]
    assert s.client.get(url, headers={"Authorization": access}).status_code == 200, "bare token"
    assert s.client.get(url, headers={"Authorization": f"bearer {access}"}).status_code == 200
    for value in ("Bearer garbage", f"Basic {access}", f"Bearer {access[:-2]}xx", "Bearer"):
        assert s.client.get(url, headers={"Authorization": value}).status_code == 401, value
    assert s.client.get(url).status_code == 401
    none_alg = jwt.encode(jwt.decode(access, options={"verify_signature": False}), None, "none")
    assert s.client.get(url, headers={"Authorization": f"Bearer {none_alg}"}).status_code == 401


def test_privileges_and_isolation(conformant: Session) -> None:
    s = conformant
    assert s.create("cashin", privilege="read").status_code == 403
    assert s.create("cashout", privilege="read").status_code == 403
    assert s.create("cashout", privilege="cashin").status_code == 403
    assert s.create("cashin", privilege="cashout").status_code == 403
    number = new_number()
    ref = s.created_ref("cashin", privilege="cashin", number=number)
    s.created_ref("cashout", privilege="cashout", number=number)
    for privilege in independent.CREATE_RIGHTS:
        headers = s.headers(privilege)
        found = s.client.get(f"{s.base}/transactions/find/{ref}", headers=headers)
        assert found.status_code == 200, privilege
    assert s.find(ref, merchant="M2").status_code == 404
    assert s.events(merchant="M2", ref=ref)["total"] == 0
    assert s.events(merchant="M2", client=number)["transactions"] == []


def test_event_list_filters_paging_and_order(conformant: Session) -> None:
    s = conformant
    number = new_number()
    refs = [s.created_ref("cashin", number=number, amount=10 + i) for i in range(12)]
    cashout = s.created_ref("cashout", number=number, amount=999)
    s.customer(refs[0], "confirm")
    everything = s.events(client=number, limit=100)
    assert everything["total"] == 14 and everything["limit"] == 100
    assert set(everything) == {"client", "limit", "offset", "total", "transactions"}
    assert [e["data"]["ref"] for e in everything["transactions"][:13]] == [*refs, cashout]
    stamps = [e["created_at"] for e in everything["transactions"]]
    assert stamps == sorted(stamps), "oldest first"
    first = s.events(client=number)
    assert first["limit"] == 10 and len(first["transactions"]) == 10 and first["total"] == 14
    second = s.events(client=number, limit=10, offset=10)
    assert len(second["transactions"]) == 4 and second["offset"] == 10
    ids = [e["event_id"] for e in first["transactions"] + second["transactions"]]
    assert len(set(ids)) == 14
    kinds = s.events(client=number, kind="CASHOUT")
    assert kinds["kind"] == "CASHOUT" and [e["data"]["ref"] for e in kinds["transactions"]] == [
        cashout
    ]
    done = s.events(client=number, status="successful")
    assert done["total"] == 1 and done["status"] == "successful"
    assert s.events(client=number, **{"event-kind": "transaction:processed"})["total"] == 1
    by_amount = s.events(client=number, amount=999)
    assert by_amount["amount"] == 999 and by_amount["total"] == 1
    assert s.events(client=number, kind="SIDEWAYS")["transactions"] == []
    assert s.events(client=number, status="success")["total"] == 0
    bad = s.client.get(f"{s.base}/events/transactions", params={"limit": "x"}, headers=s.headers())
    assert bad.status_code == 400 and bad.json()["status"] == 400


def _new_pair(session: Session) -> dict[str, Any]:
    """An uncached pair: a cached one may already have lapsed when its TTL is one second."""
    response = session.authorize("read-write", "M1")
    assert response.status_code == 200, response.text
    pair: dict[str, Any] = response.json()
    return pair


def _a_fresh_token_is_accepted(session: Session, refresh: str | None = None) -> bool:
    """A one-second token can lapse between issue and use on a busy runner: three tries tell
    a slow runner from a server that refuses fresh tokens."""
    url = f"{session.base}/events/transactions"
    for _ in range(3):
        if refresh is None:
            pair = _new_pair(session)
        else:
            answer = session.client.get(f"{session.base}/auth/refresh/{refresh}")
            assert answer.status_code == 200, answer.text
            pair = answer.json()
            refresh = pair["refresh"]
        used = session.client.get(url, headers={"Authorization": f"Bearer {pair['access']}"})
        if used.status_code == 200:
            return True
    return False


def test_access_token_expiry_and_the_expired_token_defect(
    fleet: dict[str, Foreign], in_process: dict[str, Session]
) -> None:
    """One wait serves both: the conformant server rejects the old token, the defect keeps it."""
    short = in_process["conformant-short-ttl"]
    broken = session_for(fleet["expired-token-accepted"].config_path)
    for session in (short, broken):
        assert _a_fresh_token_is_accepted(session)
    pairs = [_new_pair(short), _new_pair(broken)]
    for pair in pairs:
        issued_at = jwt.decode(pair["access"], options={"verify_signature": False})["iat"]
        assert pair["expires"] - issued_at == 1
    time.sleep(max(0.0, max(p["expires"] for p in pairs) - time.time()) + 0.05)
    url = "/events/transactions"
    stale = {"Authorization": f"Bearer {pairs[0]['access']}"}
    assert short.client.get(short.base + url, headers=stale).status_code == 401
    assert _a_fresh_token_is_accepted(short, refresh=pairs[0]["refresh"])
    stale_broken = {"Authorization": f"Bearer {pairs[1]['access']}"}
    assert broken.client.get(broken.base + url, headers=stale_broken).status_code == 200


# --- the defects: each probe answers "is the defect visible?" -----------------------------------


def _key_reuse_executes(s: Session) -> bool:
    number, key = new_number(), secrets.token_hex(8)
    assert s.create(number=number, key=key).status_code == 201
    assert s.create(number=number, key=key).status_code == 409
    return bool(s.events(client=number)["total"] != 1)


def _wrong_kind_on_cashout(s: Session) -> bool:
    answered = s.create("cashout").json()
    stored = s.find(answered["ref"]).json()
    return bool(answered["kind"] != "CASHOUT" or stored["kind"] != "CASHOUT")


def _client_filter_ignored(s: Session) -> bool:
    mine, other = new_number(), new_number()
    s.created_ref(number=mine)
    s.created_ref(number=other)
    return any(e["data"]["client"] != mine for e in s.events(client=mine)["transactions"])


def _processed_twice(s: Session) -> bool:
    ref = s.created_ref()
    assert s.customer(ref, "confirm").status_code == 200
    second = s.customer(ref, "cancel")
    processed = s.events(ref=ref, **{"event-kind": "transaction:processed"})["total"]
    return second.status_code == 200 or processed != 1 or s.find(ref).json()["status"] == "failed"


def _find_other_merchant(s: Session) -> bool:
    return s.find(s.created_ref(), merchant="M2").status_code == 200


def _no_created_event(s: Session) -> bool:
    ref = s.created_ref()
    return "transaction:created" not in {e["event_kind"] for e in s.events(ref=ref)["transactions"]}


def _refresh_dead(s: Session) -> bool:
    return s.client.get(f"{s.base}/auth/refresh/{s.pair()['refresh']}").status_code != 200


def _read_only_can_create(s: Session) -> bool:
    return s.create(privilege="read").status_code < 300


def _total_wrong(s: Session) -> bool:
    number = new_number()
    for _ in range(3):
        s.created_ref(number=number)
    return bool(s.events(client=number, limit=1)["total"] != 3)


def _duplicate_event_ids(s: Session) -> bool:
    ref = s.created_ref()
    s.customer(ref, "confirm")
    ids = [e["event_id"] for e in s.events(ref=ref)["transactions"]]
    assert len(ids) == 2
    return len(set(ids)) != len(ids)


def _bearer_ignored(s: Session) -> bool:
    garbage = {"Authorization": "Bearer not-a-token"}
    return s.client.get(f"{s.base}/events/transactions", headers=garbage).status_code == 200


def _long_key_accepted(s: Session) -> bool:
    return s.create(key="x" * 33).status_code < 300


def _cashin_can_cashout(s: Session) -> bool:
    return s.create("cashout", privilege="cashin").status_code < 300


def _missing_number_accepted(s: Session) -> bool:
    return s.create(body={"amount": 100}).status_code < 300


def _find_timestamp_z(s: Session) -> bool:
    return bool(s.find(s.created_ref()).json()["timestamp"].endswith("Z"))


def _events_leak_merchants(s: Session) -> bool:
    number = new_number()
    s.created_ref(number=number)
    return bool(s.events(merchant="M2", client=number)["total"] != 0)


def _text_errors(s: Session) -> bool:
    response = s.find("no-such-ref")
    assert response.status_code == 404
    return not response.headers.get("content-type", "").startswith("application/json")


def _bad_json_500(s: Session) -> bool:
    url = f"{s.base}/transactions/cashin"
    return s.client.post(url, content=b"{nope", headers=s.headers()).status_code >= 500


# -- authentication and privileges --


def _authorize_with(s: Session, secret: str) -> bool:
    app = s.app()
    body = {"client_id": app.client_id, "client_secret": secret}
    return s.client.post(f"{s.base}/auth/agents/authorize", json=body).status_code == 200


def _secret_case_insensitive(s: Session) -> bool:
    return _authorize_with(s, s.app().client_secret.swapcase())


def _secret_trimmed(s: Session) -> bool:
    return _authorize_with(s, s.app().client_secret + " ")


def _refresh_accepts_access(s: Session) -> bool:
    return s.client.get(f"{s.base}/auth/refresh/{s.pair()['access']}").status_code == 200


def _refresh_signature_unchecked(s: Session) -> bool:
    claims = jwt.decode(s.pair()["refresh"], options={"verify_signature": False})
    forged = jwt.encode(claims, "not-the-service-key-but-long-enough-for-hs256", "HS256")
    return s.client.get(f"{s.base}/auth/refresh/{forged}").status_code == 200


def _refreshed_bearer(s: Session, privilege: str, merchant: str = "M1") -> dict[str, str]:
    refresh = s.pair(privilege, merchant)["refresh"]
    access = s.client.get(f"{s.base}/auth/refresh/{refresh}").json()["access"]
    return {"Authorization": f"Bearer {access}"}


def _refresh_by_privilege(s: Session) -> bool:
    ref = s.created_ref()
    headers = _refreshed_bearer(s, "read-write", "M2")
    return s.client.get(f"{s.base}/transactions/find/{ref}", headers=headers).status_code == 200


def _refresh_merchant_app(s: Session) -> bool:
    body = {"amount": 100, "number": new_number()}
    headers = _refreshed_bearer(s, "read")
    url = f"{s.base}/transactions/cashin"
    return s.client.post(url, json=body, headers=headers).status_code < 300


def _bearer_case_sensitive(s: Session) -> bool:
    lower = {"Authorization": f"bearer {s.pair()['access']}"}
    return s.client.get(f"{s.base}/events/transactions", headers=lower).status_code != 200


def _agents_refresh_unusable(s: Session) -> bool:
    answer = s.client.get(f"{s.base}/auth/agents/refresh/{s.pair()['refresh']}")
    if answer.status_code != 200:
        return False  # the path is not served: nothing unusable is handed out
    headers = {"Authorization": f"Bearer {answer.json()['access']}"}
    return s.client.get(f"{s.base}/events/transactions", headers=headers).status_code != 200


def _filter_leaks(s: Session, **filters: str) -> bool:
    number = new_number()
    s.created_ref(number=number)
    return bool(s.events(merchant="M2", client=number, **filters)["total"] != 0)


def _kind_filter_leaks_merchants(s: Session) -> bool:
    return _filter_leaks(s, kind="CASHIN")


def _status_filter_leaks_merchants(s: Session) -> bool:
    return _filter_leaks(s, status="pending")


def _refresh_merchant_last_app(s: Session) -> bool:
    body = {"amount": 100, "number": new_number()}
    headers = _refreshed_bearer(s, "read-write")
    url = f"{s.base}/transactions/cashin"
    return s.client.post(url, json=body, headers=headers).status_code >= 300


# -- creations and idempotency --


def _post(
    s: Session,
    kind: str = "cashin",
    *,
    header: str | None = None,
    query: str | None = None,
    amount: Any = 100,
    number: str | None = None,
) -> httpx.Response:
    """A creation with its key in the header, the query parameter, or both."""
    headers = s.headers()
    if header is not None:
        headers["Idempotency-Key"] = header
    return s.client.post(
        f"{s.base}/transactions/{kind}",
        params=None if query is None else {"Idempotency-Key": query},
        json={"amount": amount, "number": number or new_number()},
        headers=headers,
    )


def _cashout_long_key_accepted(s: Session) -> bool:
    return s.create("cashout", key="x" * 33).status_code < 300


def _cashout_query_key_ignored(s: Session) -> bool:
    key = secrets.token_hex(8)
    assert _post(s, "cashout", query=key).status_code == 201
    return _post(s, "cashout", query=key).status_code < 300


def _burst(s: Session, kind: str, size: int = 8, **keys: str) -> int:
    """How many of ``size`` simultaneous creations with one key executed."""
    number = new_number()
    headers = s.headers()
    if "header" in keys:
        headers["Idempotency-Key"] = keys["header"]
    params = {"Idempotency-Key": keys["query"]} if "query" in keys else None

    async def burst() -> None:
        async with httpx.AsyncClient(timeout=5) as client:
            url = f"{s.base}/transactions/{kind}"
            body = {"amount": 5, "number": number}
            calls = [
                client.post(url, params=params, headers=headers, json=body) for _ in range(size)
            ]
            await asyncio.gather(*calls)

    asyncio.run(burst())
    return int(s.events(client=number)["total"])


def _cashout_key_race(s: Session) -> bool:
    return _burst(s, "cashout", header=secrets.token_hex(8)) > 1


def _cashout_keyless_replayed(s: Session) -> bool:
    number = new_number()
    first = s.create("cashout", number=number, amount=150)
    second = s.create("cashout", number=number, amount=150)
    return bool(first.json()["ref"] == second.json()["ref"])


def _cashout_missing_amount_accepted(s: Session) -> bool:
    return s.create("cashout", body={"number": new_number()}).status_code < 300


def _both_channel_keys_joined(s: Session) -> bool:
    key = secrets.token_hex(8)
    assert _post(s, header=key).status_code == 201
    return _post(s, header=key, query=key).status_code < 300


def _differing_keys_ignored(s: Session) -> bool:
    header, query = secrets.token_hex(8), secrets.token_hex(8)
    assert _post(s, header=header, query=query).status_code == 201
    return _post(s, header=header, query=query).status_code < 300


def _keys_case_insensitive(s: Session) -> bool:
    key = "Idem" + secrets.token_hex(8)
    assert _post(s, header=key).status_code == 201
    return _post(s, header=key.swapcase()).status_code == 409


def _keys_stripped(s: Session) -> bool:
    key = secrets.token_hex(8)
    assert _post(s, query=key).status_code == 201
    return _post(s, query=key + " ").status_code == 409


def _query_key_any_length(s: Session) -> bool:
    return _post(s, query="q" * 33).status_code < 300


def _query_key_race(s: Session) -> bool:
    return _burst(s, "cashin", query=secrets.token_hex(8)) > 1


def _reuse_names_ref(s: Session) -> bool:
    key = secrets.token_hex(8)
    ref = s.created_ref(key=key)
    return ref in s.create(key=key, merchant="M2").text


def _key_channels_apart(s: Session) -> bool:
    key = secrets.token_hex(8)
    assert _post(s, header=key).status_code == 201
    return _post(s, query=key).status_code < 300


# -- find, the events list, fields/formats and the lifecycle --


def _total_counts_transactions(s: Session) -> bool:
    number = new_number()
    ref = s.created_ref(number=number)
    assert s.customer(ref, "confirm").status_code == 200
    return bool(s.events(client=number)["total"] != 2)


def _cashout_reuses_cashin_ref(s: Session) -> bool:
    return s.created_ref("cashin") == s.created_ref("cashout")


def _envelope_event_kind_underscore(s: Session) -> bool:
    envelope = s.events(ref=s.created_ref())
    return "event_kind" in envelope and "event-kind" not in envelope


def _stamp(text: str) -> datetime:
    """An ISO 8601 instant of this server (9 fraction digits) to the microsecond."""
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", text.replace("Z", "+00:00")))


def _events_dated_at_creation(s: Session) -> bool:
    ref = s.created_ref()
    assert s.customer(ref, "confirm").status_code == 200
    (processed,) = s.events(ref=ref, **{"event-kind": "transaction:processed"})["transactions"]
    return _stamp(processed["created_at"]) < _stamp(processed["data"]["processed_at"])


def _snapshot_created_at_is_event_time(s: Session) -> bool:
    created = s.create().json()
    assert s.customer(created["ref"], "confirm").status_code == 200
    stamps = {_stamp(e["data"]["created_at"]) for e in s.events(ref=created["ref"])["transactions"]}
    return stamps != {_stamp(created["created_at"])}


def _find_timestamp_now(s: Session) -> bool:
    created = s.create().json()
    time.sleep(0.01)
    found = s.find(created["ref"]).json()
    return _stamp(found["timestamp"]) != _stamp(created["created_at"])


def _cashout_created_event_says_cashin(s: Session) -> bool:
    (created,) = s.events(ref=s.created_ref("cashout"))["transactions"]
    return bool(created["data"]["kind"] != "CASHOUT")


def _cashout_amount_negative(s: Session) -> bool:
    return bool(s.find(s.created_ref("cashout", amount=100)).json()["amount"] != 100)


def _cashout_not_processed(s: Session) -> bool:
    ref = s.created_ref("cashout")
    assert s.customer(ref, "confirm").status_code == 200
    return bool(s.find(ref).json()["status"] == "pending")


def _find_records_event(s: Session) -> bool:
    ref = s.created_ref()
    s.find(ref)
    return bool(s.events(ref=ref)["total"] != 1)


def _failed_filter_misses(s: Session) -> bool:
    number = new_number()
    ref = s.created_ref(number=number)
    assert s.customer(ref, "cancel").status_code == 200
    return bool(s.events(client=number, status="failed")["total"] == 0)


# -- what the mutation score showed unseen --


def _pending_fails_on_its_own(s: Session) -> bool:
    ref = s.created_ref()
    time.sleep(0.7)
    return bool(s.find(ref).json()["status"] != "pending")


def _huge_amount_shortened(s: Session) -> bool:
    response = s.create(amount=10**401)
    return response.status_code == 201 and response.json()["amount"] == 410


def _chunked_body_500(s: Session) -> bool:
    body = json.dumps({"amount": 100, "number": new_number()}).encode()
    url = f"{s.base}/transactions/cashin"
    return s.client.post(url, content=iter([body]), headers=s.headers()).status_code >= 500


def _nan_amount_accepted(s: Session) -> bool:
    url = f"{s.base}/transactions/cashin"
    body = f'{{"amount": NaN, "number": "{new_number()}"}}'
    return s.client.post(url, content=body, headers=s.headers()).status_code < 400


def _non_ascii_key_refused(s: Session) -> bool:
    return _post(s, query="clé-" + secrets.token_hex(8)).status_code == 400


# -- issue 30's new kinds (model_defects.py): no check was written for these --


def _at_once(calls: list[tuple[str, str, dict[str, Any]]]) -> list[httpx.Response]:
    """Every ``(method, url, httpx keyword arguments)`` in flight before any answer is read."""

    async def together() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=5) as client:
            return list(await asyncio.gather(*(client.request(m, u, **kw) for m, u, kw in calls)))

    return asyncio.run(together())


def _in_some_round(round_shows: Callable[[Session], bool]) -> Callable[[Session], bool]:
    """A race probe repeated a few rounds: on a busy machine one round's requests may not
    overlap within the defect's await, so one round that shows it is enough; a conformant
    server shows it in none."""

    def probe(s: Session) -> bool:
        return any(round_shows(s) for _ in range(RACE_ROUNDS))

    probe.__name__ = round_shows.__name__
    return probe


def _creation(
    s: Session, number: str, amount: Any = 100, **headers: str
) -> tuple[str, str, dict[str, Any]]:
    """A cashin for ``number`` as a call of ``_at_once``, with any extra headers."""
    url = f"{s.base}/transactions/cashin"
    body = {"amount": amount, "number": number}
    return "POST", url, {"json": body, "headers": {**s.headers(), **headers}}


@_in_some_round
def _pooled_ref_race(s: Session) -> bool:
    number = new_number()
    answers = _at_once([_creation(s, number, 100 + i) for i in range(6)])
    refs = [a.json()["ref"] for a in answers if a.status_code == 201]
    assert refs, [a.text for a in answers]
    return len(set(refs)) != len(refs)


@_in_some_round
def _created_event_lost_race(s: Session) -> bool:
    number = new_number()
    accepted = sum(a.status_code == 201 for a in _at_once([_creation(s, number)] * 6))
    return bool(s.events(client=number, limit=100)["total"] != accepted)


@_in_some_round
def _key_channels_race(s: Session) -> bool:
    number, key = new_number(), secrets.token_hex(8)
    method, url, header = _creation(s, number, **{"Idempotency-Key": key})
    query = {**_creation(s, number)[2], "params": {"Idempotency-Key": key}}
    _at_once([(method, url, header), (method, url, query)] * 3)
    return bool(s.events(client=number)["total"] != 1)


@_in_some_round
def _customer_answers_race(s: Session) -> bool:
    ref = s.created_ref()
    confirm, cancel = s.config.customer.confirm, s.config.customer.cancel
    assert confirm is not None and cancel is not None
    calls: list[tuple[str, str, dict[str, Any]]] = [
        (t.method, t.url(ref), {}) for t in (confirm, cancel)
    ] * 2
    answered = sum(a.status_code == 200 for a in _at_once(calls))
    processed = s.events(ref=ref, **{"event-kind": "transaction:processed"})["total"]
    return answered != 1 or processed != 1


def _total_across_await(s: Session) -> bool:
    """Lists racing creations; a few rounds, since a round may see every creation land first."""
    number = new_number()
    listing = (
        "GET",
        f"{s.base}/events/transactions",
        {"params": {"client": number, "limit": 100}, "headers": s.headers()},
    )
    for _ in range(RACE_ROUNDS):
        answers = _at_once([_creation(s, number), listing] * 6)
        lists = [a.json() for a in answers if a.request.method == "GET"]
        if any(e["total"] != len(e["transactions"]) for e in lists):
            return True
    return False


def _key_forgotten_after_3s(s: Session) -> bool:
    key = secrets.token_hex(8)
    assert _post(s, header=key).status_code == 201
    time.sleep(independent.KEY_MEMORY_S + 0.5)
    return _post(s, header=key).status_code < 300


def _settled_status_reverts(s: Session) -> bool:
    ref = s.created_ref()
    assert s.customer(ref, "confirm").status_code == 200
    assert s.find(ref).json()["status"] == "successful"
    time.sleep(independent.SETTLED_CACHE_S + 0.5)
    return bool(s.find(ref).json()["status"] != "successful")


def _expired_token_grace(s: Session) -> bool:
    """On a server whose access tokens live 1 s (``SHORT_TTL_DEFECTS``, ``NEGATIVE_SERVER``)."""
    response = s.authorize()
    assert response.status_code == 200
    pair = response.json()
    assert pair["expires"] - time.time() < 3, "this probe needs a short-lived access token"
    time.sleep(max(0.0, pair["expires"] - time.time()) + 1.5)
    stale = {"Authorization": f"Bearer {pair['access']}"}
    return s.client.get(f"{s.base}/events/transactions", headers=stale).status_code == 200


def _snapshot_goes_live(s: Session) -> bool:
    ref = s.created_ref()
    assert s.customer(ref, "confirm").status_code == 200
    time.sleep(independent.SETTLED_CACHE_S + 0.5)
    created = s.events(ref=ref, **{"event-kind": "transaction:created"})["transactions"]
    return bool(created[0]["data"]["status"] != "pending")


def _find_upper_ref_any_merchant(s: Session) -> bool:
    return s.find(s.created_ref().upper(), merchant="M2").status_code == 200


def _trailing_slash_no_privilege(s: Session) -> bool:
    url = f"{s.base}/transactions/cashin/"
    body = {"amount": 100, "number": new_number()}
    return s.client.post(url, json=body, headers=s.headers("read")).status_code < 300


def _ref_filter_case_any_merchant(s: Session) -> bool:
    return bool(s.events(merchant="M2", ref=s.created_ref().upper())["total"] != 0)


def _client_filter_250_any_merchant(s: Session) -> bool:
    number = new_number()
    s.created_ref(number=number)
    return bool(s.events(merchant="M2", client="25" + number)["total"] != 0)


def _total_kind_status_drops_kind(s: Session) -> bool:
    number = new_number()
    s.created_ref("cashin", number=number)
    s.created_ref("cashout", number=number)
    envelope = s.events(client=number, kind="CASHIN", status="pending")
    return bool(envelope["total"] != len(envelope["transactions"]))


def _event_id_by_row(s: Session) -> bool:
    number = new_number()
    s.created_ref(number=number)
    ref = s.created_ref(number=number)
    (alone,) = s.events(ref=ref)["transactions"]
    listed = s.events(client=number)["transactions"]
    (among,) = [e for e in listed if e["data"]["ref"] == ref]
    return bool(alone["event_id"] != among["event_id"])


def _listed_amount_rounded(s: Session) -> bool:
    (created,) = s.events(ref=s.created_ref(amount=150.75))["transactions"]
    return bool(created["data"]["amount"] != 150.75)


def _processed_snapshot_before_status(s: Session) -> bool:
    ref = s.created_ref()
    assert s.customer(ref, "confirm").status_code == 200
    (processed,) = s.events(ref=ref, **{"event-kind": "transaction:processed"})["transactions"]
    return bool(processed["data"]["status"] == "pending")


PROBES: dict[str, Callable[[Session], bool]] = {
    "key-reuse-executes": _key_reuse_executes,
    "wrong-kind-on-cashout": _wrong_kind_on_cashout,
    "client-filter-ignored": _client_filter_ignored,
    "processed-twice": _processed_twice,
    "find-other-merchant": _find_other_merchant,
    "no-created-event": _no_created_event,
    "refresh-dead": _refresh_dead,
    "read-only-can-create": _read_only_can_create,
    "total-wrong": _total_wrong,
    "duplicate-event-ids": _duplicate_event_ids,
    "bearer-ignored": _bearer_ignored,
    "long-key-accepted": _long_key_accepted,
    "cashin-can-cashout": _cashin_can_cashout,
    "missing-number-accepted": _missing_number_accepted,
    "find-timestamp-z": _find_timestamp_z,
    "events-leak-merchants": _events_leak_merchants,
    "text-errors": _text_errors,
    "bad-json-500": _bad_json_500,
    # -- authentication and privileges --
    "secret-case-insensitive": _secret_case_insensitive,
    "secret-trimmed": _secret_trimmed,
    "refresh-accepts-access": _refresh_accepts_access,
    "refresh-signature-unchecked": _refresh_signature_unchecked,
    "refresh-by-privilege": _refresh_by_privilege,
    "refresh-merchant-app": _refresh_merchant_app,
    "bearer-case-sensitive": _bearer_case_sensitive,
    "agents-refresh-unusable": _agents_refresh_unusable,
    "kind-filter-leaks-merchants": _kind_filter_leaks_merchants,
    "status-filter-leaks-merchants": _status_filter_leaks_merchants,
    "refresh-merchant-last-app": _refresh_merchant_last_app,
    # -- creations and idempotency --
    "cashout-long-key-accepted": _cashout_long_key_accepted,
    "cashout-query-key-ignored": _cashout_query_key_ignored,
    "cashout-key-race": _cashout_key_race,
    "cashout-keyless-replayed": _cashout_keyless_replayed,
    "cashout-missing-amount-accepted": _cashout_missing_amount_accepted,
    "both-channel-keys-joined": _both_channel_keys_joined,
    "differing-keys-ignored": _differing_keys_ignored,
    "keys-case-insensitive": _keys_case_insensitive,
    "keys-stripped": _keys_stripped,
    "query-key-any-length": _query_key_any_length,
    "query-key-race": _query_key_race,
    "reuse-names-ref": _reuse_names_ref,
    "key-channels-apart": _key_channels_apart,
    # -- find, the events list, fields/formats and the lifecycle --
    "total-counts-transactions": _total_counts_transactions,
    "cashout-reuses-cashin-ref": _cashout_reuses_cashin_ref,
    "envelope-event-kind-underscore": _envelope_event_kind_underscore,
    "events-dated-at-creation": _events_dated_at_creation,
    "snapshot-created-at-is-event-time": _snapshot_created_at_is_event_time,
    "find-timestamp-now": _find_timestamp_now,
    "cashout-created-event-says-cashin": _cashout_created_event_says_cashin,
    "cashout-amount-negative": _cashout_amount_negative,
    "cashout-not-processed": _cashout_not_processed,
    "find-records-event": _find_records_event,
    "failed-filter-misses": _failed_filter_misses,
    # -- what the mutation score showed unseen --
    "pending-fails-on-its-own": _pending_fails_on_its_own,
    "huge-amount-shortened": _huge_amount_shortened,
    "chunked-body-500": _chunked_body_500,
    "nan-amount-accepted": _nan_amount_accepted,
    "non-ascii-key-refused": _non_ascii_key_refused,
    # -- issue 30's new kinds (model_defects.py) --
    "pooled-ref-race": _pooled_ref_race,
    "created-event-lost-race": _created_event_lost_race,
    "key-channels-race": _key_channels_race,
    "customer-answers-race": _customer_answers_race,
    "total-across-await": _total_across_await,
    "key-forgotten-after-3s": _key_forgotten_after_3s,
    "settled-status-reverts": _settled_status_reverts,
    "expired-token-grace": _expired_token_grace,
    "snapshot-goes-live": _snapshot_goes_live,
    "find-upper-ref-any-merchant": _find_upper_ref_any_merchant,
    "trailing-slash-no-privilege": _trailing_slash_no_privilege,
    "ref-filter-case-any-merchant": _ref_filter_case_any_merchant,
    "client-filter-250-any-merchant": _client_filter_250_any_merchant,
    "total-kind-status-drops-kind": _total_kind_status_drops_kind,
    "event-id-by-row": _event_id_by_row,
    "listed-amount-rounded": _listed_amount_rounded,
    "processed-snapshot-before-status": _processed_snapshot_before_status,
}


def test_every_defect_has_a_probe() -> None:
    assert set(PROBES) | {"expired-token-accepted"} == set(independent.DEFECTS)


def test_every_defect_is_named_a_check_or_left_to_the_model() -> None:
    """Each defect either names the check that must fail (DEFECT_CHECKS) or is one no check was
    told about (MODEL_DEFECTS), never both; every kind of issue 30 has three or more."""
    named, unnamed = set(DEFECT_CHECKS), set(MODEL_DEFECTS)
    assert not named & unnamed
    assert named | unnamed == set(independent.DEFECTS)
    assert set(MODEL_DEFECTS.values()) <= set(MODEL_KINDS)
    for kind in MODEL_KINDS:
        assert sum(k == kind for k in MODEL_DEFECTS.values()) >= 3, kind


def _probe_both(probe: Callable[[Session], bool], *sessions: Session) -> list[bool]:
    """The probe on each session at once: the time probes' waits overlap."""
    with ThreadPoolExecutor(len(sessions)) as pool:
        return list(pool.map(probe, sessions))


@pytest.mark.parametrize("defect", sorted(PROBES))
def test_defect_is_visible_and_absent_from_the_conformant(
    defect: str, in_process: dict[str, Session], conformant: Session
) -> None:
    negative = in_process[NEGATIVE_SERVER[defect]] if defect in NEGATIVE_SERVER else conformant
    visible, false_alarm = _probe_both(PROBES[defect], in_process[defect], negative)
    assert visible, f"{defect} not visible"
    assert not false_alarm, f"the {defect} probe fires on the conformant server"


def test_defect_changes_nothing_else(in_process: dict[str, Session]) -> None:
    """A defect server still walks the ordinary flow (one example; the rest share the code)."""
    s = in_process["client-filter-ignored"]
    ref = s.created_ref()
    assert s.customer(ref, "confirm").status_code == 200
    assert s.find(ref).json()["status"] == "successful"
    assert s.events(ref=ref)["total"] == 2


# --- the static mock, the not-API server, the crashing server ---------------------------------


def test_static_mock_answers_fixed_examples(fleet: dict[str, Foreign]) -> None:
    s = session_for(fleet["mock"].config_path)
    pair = s.client.post(
        f"{s.base}/auth/agents/authorize", json={"client_id": "any", "client_secret": "thing"}
    )
    assert pair.status_code == 200
    assert pair.json() == {"access": "string", "refresh": "string", "expires": 900}
    assert s.client.post(f"{s.base}/auth/agents/authorize", json={}).status_code == 422
    for path in ("/auth/refresh/x", "/auth/agents/refresh/x"):
        assert s.client.get(s.base + path).json()["access"] == "string"
    bearer = {"Authorization": "Bearer string"}
    url = f"{s.base}/transactions/cashin"
    anonymous = s.client.post(url, json={"amount": 1, "number": "1"})
    assert anonymous.status_code == 401
    assert anonymous.headers["content-type"].startswith("application/problem+json")
    assert s.client.post(url, json={"number": "1"}, headers=bearer).status_code == 422
    first = s.client.post(url, json={"amount": 5, "number": "1"}, headers=bearer)
    second = s.client.post(url, json={"amount": 7, "number": "2"}, headers=bearer)
    assert first.status_code == 200 and first.json() == second.json()
    ref = first.json()["ref"]
    assert ref == "3fa85f64-5717-4562-b3fc-2c963f66afa6" and first.json()["amount"] == 100
    cashout = s.client.post(
        f"{s.base}/transactions/cashout", json={"amount": 5, "number": "1"}, headers=bearer
    )
    assert cashout.json()["kind"] == "CASHOUT" and cashout.json()["ref"] == ref
    found = s.client.get(f"{s.base}/transactions/find/anything", headers=bearer).json()
    assert found["ref"] == ref
    events = s.client.get(f"{s.base}/events/transactions", headers=bearer).json()
    (event,) = events["transactions"]
    assert event["data"]["ref"] == ref and event["event_kind"] == "transaction:created"
    assert s.customer(ref, "confirm").status_code == 200
    after = s.client.get(f"{s.base}/transactions/find/{ref}", headers=bearer).json()
    assert after["status"] == "pending", "confirming changed nothing"
    assert s.client.get(f"{s.base}/events/transactions").status_code == 401


def test_not_api_answers_html(fleet: dict[str, Foreign]) -> None:
    server = fleet["not_api"]
    with httpx.Client(timeout=5) as client:
        listing = client.get(server.root_url + "/")
        assert listing.status_code == 200
        assert listing.headers["content-type"].startswith("text/html")
        assert "Directory listing" in listing.text and "notes.txt" in listing.text
        post = client.post(f"{server.base_url}/transactions/cashin", json={"amount": 1})
        assert post.status_code == 501
        missing = client.get(f"{server.base_url}/transactions/find/x")
        assert missing.status_code == 404 and missing.headers["content-type"].startswith(
            "text/html"
        )


def test_servers_stop_promptly_on_sigterm(fleet: dict[str, Foreign]) -> None:
    for name in ("sigterm-independent", "sigterm-mock", "sigterm-not_api"):
        started = time.monotonic()
        status = fleet[name].stop()
        assert time.monotonic() - started < 2.0, name
        assert status in (0, -15), (name, status, fleet[name].stderr())


def test_dies_after_n_answered_requests(tmp_path: Path) -> None:
    server = start_foreign("dies", tmp_path, "--die-after", "3")
    try:
        s = session_for(server.config_path)
        assert s.authorize().status_code == 200  # 1
        assert s.client.get(f"{s.base}/nowhere").status_code == 404  # 2
        assert s.authorize().status_code == 200  # 3: answered in full, then the crash
        server.process.wait(5)
        assert server.process.returncode == 70
        with pytest.raises(httpx.TransportError):
            s.authorize()
    finally:
        server.stop()
