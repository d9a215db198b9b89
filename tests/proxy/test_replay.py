"""``paysuite replay``: a recorded, masked session re-sent with the values of the replay itself.

The unit tests pin each mapping (secrets, tokens, refs, idempotency keys, URLs); the stub tests
record a real session, mask it, write it as HAR, replay it and look at what was sent and answered.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_masking import AUTHORIZE, REFRESH, SDK_REFRESH, exchange

from paysuite_core.exchange import Exchange
from paysuite_core.launcher import RunningStub, start_stub, stop_stub
from paysuite_core.results.masking import Masker, mask_exchange
from paysuite_core.target_config import TargetConfig, parse_target_config
from proxy.har import read_session, write_har
from proxy.replay import (
    MAX_GAP_S,
    Outgoing,
    Rebuilder,
    Sender,
    Skipped,
    open_client,
    replay_session,
)

OLD = "http://127.0.0.1:9/api"
NEW = "http://127.0.0.1:7/api"
REF_1 = "7d2f3c1e-0000-4000-8000-00000000aaaa"


def config(secret: str = "the-real-secret") -> TargetConfig:
    return parse_target_config(
        {"base_url": NEW, "applications": [{"client_id": "app-1", "client_secret": secret}]}
    )


def outgoing(result: Outgoing | Skipped) -> Outgoing:
    assert isinstance(result, Outgoing), result
    return result


def replayed(recorded: Exchange, url: str, answer: Any, status: int = 200) -> Exchange:
    return replace(recorded, url=url, status=status, response_body=json.dumps(answer).encode())


class FakeJudge:
    """Stands for proxy.judge.Judge: sees every replayed exchange, flags what it is told to."""

    def __init__(self, flag: Any = None) -> None:
        self.seen: list[Exchange] = []
        self.flag = flag or (lambda _exchange: [])
        self.finished = False

    def observe(self, exchange: Exchange) -> Sequence[Any]:
        self.seen.append(exchange)
        return list(self.flag(exchange))

    def finish(self) -> Sequence[Any]:
        self.finished = True
        return ["at the end"]


# --- URLs ----------------------------------------------------------------------------------
def test_urls_move_onto_the_target_by_the_recorded_target() -> None:
    rebuilder = Rebuilder(target="http://127.0.0.1:7/v2/", recorded_target=OLD)
    assert rebuilder.url(OLD + "/transactions/find/x?a=1") == (
        "http://127.0.0.1:7/v2/transactions/find/x?a=1"
    )


def test_a_target_given_as_the_apis_base_url_is_not_doubled() -> None:
    """--target copied from a configuration's base_url (``.../api``) onto a recording whose
    paths already start with /api: one /api, not two."""
    rebuilder = Rebuilder(target="http://127.0.0.1:7/api", recorded_target="http://127.0.0.1:9")
    assert rebuilder.url("http://127.0.0.1:9/api/transactions/find/x") == (
        "http://127.0.0.1:7/api/transactions/find/x"
    )
    assert rebuilder.url("http://127.0.0.1:9/apis/x") == "http://127.0.0.1:7/api/apis/x"


def test_a_recorded_target_is_swapped_only_as_a_whole_origin_or_path() -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target="http://127.0.0.1:80")
    # not port "80"+"80"; the recorded /api is NEW's own /api, so it is not doubled either
    assert rebuilder.url("http://127.0.0.1:8080/api/x") == NEW + "/x"


def test_without_a_recorded_target_the_path_is_appended_to_the_target() -> None:
    rebuilder = Rebuilder(target="http://127.0.0.1:7")
    assert (
        rebuilder.url(OLD + "/transactions/find/x") == "http://127.0.0.1:7/api/transactions/find/x"
    )


# --- secrets -------------------------------------------------------------------------------
def authorize(
    status: int = 200, secret: str = "«masked:secret:1»", client: str = "app-1"
) -> Exchange:
    return exchange(
        1, "POST", AUTHORIZE,
        headers=(("Content-Type", "application/json"), ("Content-Length", "60"), ("Host", "x")),
        body={"client_id": client, "client_secret": secret}, status=status,
        answer={"access": "«masked:access:1»", "refresh": "«masked:refresh:1»", "expires": 900},
    )  # fmt: skip


def test_a_masked_secret_is_filled_from_the_configuration() -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD, config=config('se"cret\\x'))
    sent = outgoing(rebuilder.rebuild(authorize()))
    assert sent.url == NEW + AUTHORIZE
    assert json.loads(sent.body) == {"client_id": "app-1", "client_secret": 'se"cret\\x'}
    # framing and connection headers are the client library's business, not the recording's
    assert [name for name, _ in sent.headers] == ["Accept", "Content-Type"]


def test_a_secret_that_was_refused_is_sent_wrong_again() -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD, config=config())
    good = outgoing(rebuilder.rebuild(authorize()))
    bad = outgoing(rebuilder.rebuild(authorize(status=401, secret="«masked:secret:2»")))
    assert json.loads(good.body)["client_secret"] == "the-real-secret"
    wrong = json.loads(bad.body)["client_secret"]
    assert wrong.startswith("wrong-") and wrong != "the-real-secret"


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        ({}, "no --config"),
        ({"config": config()}, "'app-9' of the recording maps to no application of --config"),
    ],
)
def test_a_secret_the_replay_cannot_fill_skips_that_exchange(
    settings: dict[str, Any], reason: str
) -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD, **settings)
    skipped = rebuilder.rebuild(authorize(client="app-9"))
    assert isinstance(skipped, Skipped)
    assert reason in skipped.reason and skipped.seq == 1
    assert "not replayed: #1 POST" in skipped.line()


# --- tokens and refs -----------------------------------------------------------------------
def test_tokens_and_refs_map_to_what_the_replay_obtained() -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD, config=config())
    recorded_auth = authorize()
    rebuilder.learn(
        recorded_auth,
        replayed(recorded_auth, NEW, {"access": "A-new", "refresh": "R/new", "expires": 900}),
    )
    recorded_cashin = exchange(
        2, "POST", "/transactions/cashin", headers=(("Authorization", "Bearer «masked:access:1»"),),
        body={"amount": 100, "number": "0781234567"}, answer={"ref": REF_1, "status": "pending"},
    )  # fmt: skip
    cashin = outgoing(rebuilder.rebuild(recorded_cashin))
    assert ("Authorization", "Bearer A-new") in cashin.headers
    rebuilder.learn(recorded_cashin, replayed(recorded_cashin, NEW, {"ref": "new-ref-0001"}))
    find = outgoing(
        rebuilder.rebuild(
            exchange(
                3,
                "GET",
                f"/transactions/find/{REF_1}",
                headers=(("Authorization", "«masked:access:1»"),),
            )
        )
    )
    assert find.url == NEW + "/transactions/find/new-ref-0001"
    assert ("Authorization", "A-new") in find.headers
    events = outgoing(rebuilder.rebuild(exchange(4, "GET", f"/events/transactions?ref={REF_1}")))
    assert events.url == NEW + "/events/transactions?ref=new-ref-0001"
    refresh = outgoing(rebuilder.rebuild(exchange(5, "GET", f"{SDK_REFRESH}«masked:refresh:1»")))
    assert refresh.url == NEW + f"{SDK_REFRESH}R%2Fnew"  # a path segment stays one segment
    rebuilder.values["«masked:access:9»"] = "a+b c"
    query = outgoing(rebuilder.rebuild(exchange(6, "GET", "/x?token=«masked:access:9»")))
    assert query.url == NEW + "/x?token=a%2Bb%20c"  # "+" in a query would read as a space


def test_a_refresh_token_reused_after_rotation_is_reused_in_the_replay() -> None:
    """The evidence of AUTH-012 survives: the replay sends the replay's first refresh token
    again, not the one the rotation issued."""
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD, config=config())
    recorded_auth = authorize()
    rebuilder.learn(recorded_auth, replayed(recorded_auth, NEW, {"access": "A1", "refresh": "R1"}))
    first = exchange(
        2, "GET", f"{REFRESH}«masked:refresh:1»",
        answer={"access": "«masked:access:2»", "refresh": "«masked:refresh:2»"},
    )  # fmt: skip
    assert outgoing(rebuilder.rebuild(first)).url == NEW + f"{REFRESH}R1"
    rebuilder.learn(first, replayed(first, NEW, {"access": "A2", "refresh": "R2"}))
    again = outgoing(rebuilder.rebuild(exchange(3, "GET", f"{REFRESH}«masked:refresh:1»")))
    assert again.url == NEW + f"{REFRESH}R1"
    rotated = outgoing(rebuilder.rebuild(exchange(4, "GET", f"{REFRESH}«masked:refresh:2»")))
    assert rotated.url == NEW + f"{REFRESH}R2"


def test_a_refused_answer_binds_nothing() -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD, config=config())
    recorded_auth = authorize()
    rebuilder.learn(recorded_auth, replayed(recorded_auth, NEW, {"error": "no"}, status=401))
    assert rebuilder.values == {}


def test_a_token_the_replay_never_obtained_skips_that_exchange() -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD)
    skipped = rebuilder.rebuild(
        exchange(
            2,
            "GET",
            "/transactions/find/x",
            headers=(("Authorization", "Bearer «masked:access:4»"),),
        )
    )
    assert isinstance(skipped, Skipped)
    assert "«masked:access:4»" in skipped.reason and "before the recording began" in skipped.reason


# --- idempotency keys ----------------------------------------------------------------------
def test_keys_are_renewed_consistently_and_in_shape() -> None:
    rebuilder = Rebuilder(target=NEW, recorded_target=OLD)
    uuid_key, long_key = str(uuid.uuid4()), "k" * 40

    def key_of(path: str, key: str | None = None) -> Outgoing:
        headers = (("Idempotency-Key", key),) if key is not None else ()
        return outgoing(rebuilder.rebuild(exchange(1, "POST", path, headers=headers)))

    first = dict(key_of("/transactions/cashin", uuid_key).headers)["Idempotency-Key"]
    again = dict(key_of("/transactions/cashout", uuid_key).headers)["Idempotency-Key"]
    other = dict(key_of("/transactions/cashin", long_key).headers)["Idempotency-Key"]
    assert first == again != uuid_key
    assert [i for i, c in enumerate(first) if c == "-"] == [8, 13, 18, 23]
    assert len(first) == len(uuid_key) and len(other) == 40  # an over-long key stays over-long
    in_query = key_of(f"/transactions/cashin?idempotency-Key={uuid_key}&x=1").url
    assert in_query == NEW + f"/transactions/cashin?idempotency-Key={first}&x=1"
    kept = Rebuilder(target=NEW, recorded_target=OLD, keep_keys=True)
    sent = outgoing(kept.rebuild(exchange(1, "POST", "/x", headers=(("Idempotency-Key", "K1"),))))
    assert ("Idempotency-Key", "K1") in sent.headers


# --- the loop ------------------------------------------------------------------------------
def test_timing_is_kept_only_when_asked_and_each_gap_is_bounded() -> None:
    recorded = [
        replace(exchange(i, "GET", "/x"), started=t) for i, t in ((1, 0.0), (2, 2.5), (3, 1000.0))
    ]

    class Echo(Sender):
        def send(self, seq: int, outgoing: Outgoing) -> Exchange:
            return replace(recorded[seq - 1], url=outgoing.url)

    pauses: list[float] = []
    with open_client() as client:
        replay_session(
            recorded, Rebuilder(NEW, OLD), Echo(client), FakeJudge(), sleep=pauses.append
        )
        assert pauses == []
        judge = FakeJudge(flag=lambda e: ["v"] if e.seq == 2 else [])
        result = replay_session(
            recorded,
            Rebuilder(NEW, OLD),
            Echo(client),
            judge,
            keep_timing=True,
            sleep=pauses.append,
        )
    assert pauses == [2.5, MAX_GAP_S]
    assert result.violations == ["v", "at the end"] and judge.finished
    assert [e.url for e in judge.seen] == [NEW + "/x"] * 3


# --- against the stub ----------------------------------------------------------------------
class Recorder:
    """Plays a client against a target directly and keeps the exchanges it made."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url
        self.client = open_client()
        self.sender = Sender(self.client)
        self.exchanges: list[Exchange] = []

    def call(self, method: str, path: str, body: Any = None, **headers: str) -> Exchange:
        all_headers = [("Accept", "application/json")]
        if body is not None:
            all_headers.append(("Content-Type", "application/json"))
        all_headers += [(name.replace("_", "-"), value) for name, value in headers.items()]
        payload = b"" if body is None else json.dumps(body).encode()
        made = self.sender.send(
            len(self.exchanges) + 1,
            Outgoing(method, self.base + path, tuple(all_headers), payload),
        )
        self.exchanges.append(made)
        return made


def client_flow(stub: RunningStub) -> list[Exchange]:
    """What a merchant's backend does: authorize, create twice with one key, find, refresh,
    find with the new token, list the events, find an unknown ref, a wrong secret."""
    app = next(a for a in stub.config().applications if a.privilege == "read-write")
    record = Recorder(stub.base_url)
    pair = record.call(
        "POST",
        AUTHORIZE,
        {"client_id": app.client_id, "client_secret": app.client_secret},
    ).response_json()
    bearer = f"Bearer {pair['access']}"
    key = uuid.uuid4().hex
    body = {"amount": 100, "number": "0781234567"}
    ref = record.call(
        "POST", "/transactions/cashin", body, Authorization=bearer, Idempotency_Key=key
    )
    record.call("POST", "/transactions/cashin", body, Authorization=bearer, Idempotency_Key=key)
    ref = ref.response_json()["ref"]
    record.call("GET", f"/transactions/find/{ref}", Authorization=bearer)
    renewed = record.call("GET", f"{REFRESH}{pair['refresh']}").response_json()
    record.call("GET", f"/transactions/find/{ref}", Authorization=f"Bearer {renewed['access']}")
    record.call("GET", f"/events/transactions?ref={ref}", Authorization=bearer)
    record.call("GET", f"/transactions/find/{uuid.uuid4()}", Authorization=bearer)
    record.call("POST", AUTHORIZE, {"client_id": app.client_id, "client_secret": "nope"})
    record.client.close()
    return record.exchanges


def replay_file(har: Path, stub: RunningStub, judge: FakeJudge) -> Any:
    recorded = read_session(har)
    with open_client() as client:
        return replay_session(
            recorded.exchanges,
            Rebuilder(stub.base_url, recorded.target, stub.config()),
            Sender(client),
            judge,
        )


def test_a_recorded_session_replays_against_the_target_that_recorded_it(tmp_path: Path) -> None:
    stub = start_stub(tmp_path / "stub", startup_timeout_s=60)
    try:
        recorded = client_flow(stub)
        app_secrets = {a.client_secret for a in stub.config().applications}
        har = write_har(
            [mask_exchange(e, Masker.for_config(stub.config())) for e in recorded],
            tmp_path / "session.har",
            target=stub.base_url,
        )
        assert not any(secret in har.read_text("utf-8") for secret in app_secrets)
        judge = FakeJudge()
        result = replay_file(har, stub, judge)
    finally:
        stop_stub(stub)
    assert result.skipped == [] and result.stopped == ""
    assert [e.status for e in judge.seen] == [e.status for e in recorded]
    auth, first, second, find, refresh, find_new, events, unknown, wrong = judge.seen
    assert auth.status == 200 and json.loads(auth.request_body)["client_secret"] in app_secrets
    new_ref = first.response_json()["ref"]
    old_ref = recorded[1].response_json()["ref"]
    assert new_ref != old_ref
    assert (
        find.url.endswith(f"/transactions/find/{new_ref}")
        and find.response_json()["ref"] == new_ref
    )
    assert events.url.endswith(f"?ref={new_ref}")
    # the key was renewed (no collision with the recording) but still reused
    assert first.request_header("Idempotency-Key") == second.request_header("Idempotency-Key")
    assert first.request_header("Idempotency-Key") != recorded[1].request_header("Idempotency-Key")
    assert refresh.url.endswith(auth.response_json()["refresh"])
    assert find_new.request_header("Authorization") == f"Bearer {refresh.response_json()['access']}"
    assert unknown.status == 404 and wrong.status == 401


def test_a_clean_recording_replayed_against_a_faulty_build_shows_the_fault(tmp_path: Path) -> None:
    """The same database (same applications) restarted with idempotency-ignored: the replayed
    reuse of one key now creates a second transaction, and the judge sees both."""
    workdir = tmp_path / "stub"
    stub = start_stub(workdir, startup_timeout_s=60)
    try:
        recorded = client_flow(stub)
    finally:
        stop_stub(stub)
    har = write_har(
        [mask_exchange(e, Masker()) for e in recorded], tmp_path / "s.har", target=stub.base_url
    )
    faulty = start_stub(workdir, faults=["idempotency-ignored"], startup_timeout_s=60)
    try:
        judge = FakeJudge()
        result = replay_file(har, faulty, judge)
    finally:
        stop_stub(faulty)
    assert result.skipped == []
    first, second = judge.seen[1], judge.seen[2]
    assert first.request_header("Idempotency-Key") == second.request_header("Idempotency-Key")
    assert recorded[2].status >= 400  # the clean build refused the reused key
    assert second.status < 300  # the faulty one executed it
    assert first.response_json()["ref"] != second.response_json()["ref"]


def test_ctrl_c_stops_sending_and_keeps_what_was_replayed() -> None:
    recorded = [exchange(1, "GET", "/x"), exchange(2, "GET", "/y"), exchange(3, "GET", "/z")]

    class Interrupted(Sender):
        def send(self, seq: int, outgoing: Outgoing) -> Exchange:
            if seq == 2:
                raise KeyboardInterrupt
            return replace(recorded[seq - 1], url=outgoing.url)

    judge = FakeJudge()
    with open_client() as client:
        result = replay_session(recorded, Rebuilder(NEW, OLD), Interrupted(client), judge)
    assert result.interrupted and [e.seq for e in result.exchanges] == [1]
    assert judge.finished and result.violations == ["at the end"]


def test_a_target_that_refuses_connections_stops_the_replay(tmp_path: Path) -> None:
    recorded = [exchange(1, "GET", "/x"), exchange(2, "GET", "/y")]
    with open_client() as client:
        result = replay_session(
            recorded, Rebuilder("http://127.0.0.1:9", OLD), Sender(client), FakeJudge()
        )
    assert result.exchanges == [] and "refused the connection" in result.stopped
