"""Format checks: UUID refs and event ids, the three timestamp shapes, JSON everywhere."""

from __future__ import annotations

import uuid

import pytest

from conformance import timestamps
from conformance.decorators import check
from conformance.http import Reply
from conformance.target import (
    AUTHORIZE,
    CASHIN,
    EVENTS,
    REFRESH_PATHS,
    UUID_RE,
    Target,
    data_of,
    expect,
    find_path,
)


def _app(target: Target):
    app = target.writer("CASHIN")
    if app is None:
        pytest.skip("no application may cashin")
    return app


@check("FMT-001")
def test_refs_uuid_unique(configured: Target) -> None:
    target = configured
    app = _app(target)
    replies = [target.created("CASHIN", app)[0] for _ in range(6)]
    if target.writer("CASHOUT") is not None:
        replies += [target.created("CASHOUT", target.writer("CASHOUT"))[0] for _ in range(2)]
    refs = [r.get("ref") for r in replies]
    bad = [r for r in replies if not UUID_RE.match(str(r.get("ref")))]
    expect(not bad, f"ref {bad[0].get('ref')!r} is not UUID-shaped" if bad else "", *bad[:1])
    dupes = [r for i, r in enumerate(replies) if r.get("ref") in refs[:i]]
    expect(
        not dupes,
        f"ref {dupes[0].get('ref') if dupes else ''} was returned twice by "
        f"{len(replies)} creations",
        *dupes[:2],
    )


@check("FMT-002")
def test_event_ids_uuid_unique(configured: Target) -> None:
    target = configured
    app = _app(target)
    number = target.number()
    for _ in range(3):
        target.created("CASHIN", app, number=number)
    reply = target.list_events(app, client=number)
    events = reply.get("transactions") or []
    expect(reply.ok and events, f"no events listed ({reply.status})", reply)
    ids = [e.get("event_id") for e in events]
    bad = [i for i in ids if not UUID_RE.match(str(i))]
    expect(not bad, f"event_id {bad[0] if bad else ''!r} is not UUID-shaped", reply)
    expect(len(set(ids)) == len(ids), f"event ids repeat: {ids}", reply)


@check("FMT-003")
def test_creation_created_at(configured: Target) -> None:
    target = configured
    reply, created = target.created("CASHIN", _app(target))
    problem = timestamps.utc_with_fraction(created.get("created_at"))
    expect(problem is None, f"creation created_at: {problem}", reply)


@check("FMT-004")
def test_find_timestamp(configured: Target) -> None:
    target = configured
    app = _app(target)
    _, created = target.created("CASHIN", app)
    reply = target.find(created["ref"], app)
    expect(reply.ok, f"find answered {reply.status}", reply)
    problem = timestamps.numeric_offset_with_fraction(reply.get("timestamp"))
    expect(problem is None, f"find timestamp: {problem}", reply)


@check("FMT-005")
def test_event_timestamps(configured: Target) -> None:
    target = configured
    app = _app(target)
    number = target.number()
    _, created = target.created("CASHIN", app, number=number)
    assert target.customer is not None
    if target.customer.unavailable_reason() is None and target.customer.driver == "sandbox":
        target.resolve(created["ref"], "confirm")
        target.wait_processed(created["ref"], app)
    events = target.events_for_ref(app, created["ref"])
    expect(
        events, "no event listed for a new transaction", target.list_events(app, ref=created["ref"])
    )
    problems = []
    for event in events:
        kind = event.get("event_kind")
        problem = timestamps.utc(event.get("created_at"))
        if problem:
            problems.append(f"{kind} created_at: {problem}")
        data = data_of(event)
        for name in ("created_at", "processed_at"):
            value = data.get(name)
            if name == "processed_at" and kind != "transaction:processed" and not value:
                continue  # nothing processed yet: null, absent or empty are all honest
            problem = timestamps.utc(value)
            if problem:
                problems.append(f"{kind} data.{name}: {problem}")
    reply = target.list_events(app, ref=created["ref"])
    expect(not problems, "; ".join(problems), reply)


def _is_json(reply: Reply) -> bool:
    media = reply.content_type.split(";")[0].strip().lower()
    return (media == "application/json" or media.endswith("+json")) and reply.is_json


@check("FMT-006")
def test_json_everywhere(configured: Target) -> None:
    target = configured
    app = _app(target)
    pair = target.pair(app, fresh=True)
    client = target.client
    replies = [
        target.authorize(app),
        client.post(AUTHORIZE, json={"client_id": "nobody", "client_secret": "x"}),
        target.create("CASHIN", app, key=target.fresh_key()),
        client.post(CASHIN, json={"amount": "x"}, token=pair.access),
        client.get(EVENTS, token=pair.access),
        client.get(EVENTS),
        client.get(find_path(str(uuid.uuid4())), token=pair.access),
    ]
    ref = replies[2].get("ref")
    if ref:
        replies.append(client.get(find_path(ref), token=pair.access))
    for template in REFRESH_PATHS:  # only the paths the target serves: either is conformant
        fresh = target.pair(app, fresh=True)
        reply = target.refresh(fresh.refresh, template)
        if reply.ok:
            replies.append(reply)
            replies.append(target.refresh("not-a-token", template))
    bad = [r for r in replies if not _is_json(r)]
    expect(
        not bad,
        "; ".join(
            f"{r.exchange.method} {r.exchange.url} -> {r.status} with Content-Type "
            f"{r.content_type or '(none)'}{'' if r.is_json else ' and a non-JSON body'}"
            for r in bad
        ),
        *bad,
    )
