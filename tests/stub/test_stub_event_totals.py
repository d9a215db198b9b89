"""The events list's running totals (``event_totals``) and the store's faster paths.

The envelope's ``total`` and ``amount`` (RC-27) come from cells kept by triggers instead of a
scan. These tests hold them to what a scan computes after mixed traffic (creations, 409s,
confirmations, auto-resolutions, time-outs, the drop-acknowledged fault, float amounts), after a
restart and after migrating a database of the earlier schema; they check paging at a few
thousand events against a model kept in Python, the creation path without SAVEPOINT (a failed
insert leaves nothing behind), and the cached timestamp rendering against the plain one.
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import time
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from store_checks import count_pending, count_transactions, totals_mismatches
from stubkit import new_number

from stub_server import timefmt
from stub_server.store import EventQuery, KeyReused, NewTransaction, Store, uuid4_text

T0 = 1_790_000_000_000_000  # 2026-09-21, epoch microseconds


def scan(db_path: Path, merchant: str, where: str = "", params: tuple[Any, ...] = ()) -> tuple:
    """(count, sum) of a merchant's events by a plain scan, independent of the store's code."""
    conn = sqlite3.connect(db_path)
    try:
        n, total = conn.execute(
            f"SELECT COUNT(*), TOTAL(amount) FROM events WHERE merchant = ?{where}",
            (merchant, *params),
        ).fetchone()
    finally:
        conn.close()
    return n, total


def create(store: Store, merchant: str, **fields: Any) -> asyncio.Future[None]:
    values: dict[str, Any] = {
        "ref": uuid4_text(),
        "merchant": merchant,
        "app_id": "app",
        "kind": "CASHIN",
        "amount": 100,
        "client": "0781234567",
        "fee": 2.3,
        "created_us": T0,
        "webhook_mode": None,
        "key": uuid.uuid4().hex,
        "due_us": None,
        "due_status": None,
    }
    values.update(fields)
    key_mode = values.pop("key_mode", "strict")
    return store.create_transaction(NewTransaction(**values), key_mode=key_mode)


# -- paging and totals at a few thousand events -----------------------------------------------
def test_list_events_at_a_few_thousand_events(inproc, tmp_path: Path) -> None:
    server = inproc(db=str(tmp_path / "stub.db"), background=False)
    store = server.stub.store
    rng = random.Random(7)
    clients = ["0781000001", "0781000002", "0781000003"]
    model: list[dict[str, Any]] = []  # every DEMO01 event, in insertion order
    pending: list[tuple[int, dict[str, Any]]] = []

    async def populate() -> None:
        clock = T0
        for _batch in range(30):
            waiters = []
            for _ in range(100):
                clock += 1000
                merchant = "DEMO01" if rng.random() < 0.9 else "DEMO02"
                tx = {
                    "kind": rng.choice(("CASHIN", "CASHOUT")),
                    "amount": rng.randrange(100, 50_000),
                    "client": rng.choice(clients),
                    "ref": uuid4_text(),
                }
                waiters.append(create(store, merchant, created_us=clock, **tx))
                if merchant == "DEMO01":
                    event = {**tx, "event_kind": "transaction:created", "status": "pending"}
                    model.append({**event, "created_us": clock})
                    pending.append((len(model) - 1, tx))
            await asyncio.gather(*waiters)
            # process a third of what is still pending, like confirmations and time-outs would
            chosen = rng.sample(pending, len(pending) // 3)
            items = []
            for entry in chosen:
                pending.remove(entry)
                ref = entry[1]["ref"]
                status = rng.choice(("success", "failed"))
                tx_id = store.find(ref, "DEMO01").id  # type: ignore[union-attr]
                items.append((tx_id, status))
                entry[1]["status"] = status
            clock += 1000
            store.process_many(items, clock, record_event=True)
            for (_tx_id, status), entry in zip(items, chosen, strict=True):
                tx = entry[1]
                model.append(
                    {
                        "kind": tx["kind"],
                        "amount": tx["amount"],
                        "client": tx["client"],
                        "ref": tx["ref"],
                        "event_kind": "transaction:processed",
                        "status": status,
                        "created_us": clock,
                    }
                )

    server.run(populate())
    assert len(model) > 3000
    api = server.api
    newest_first = sorted(
        range(len(model)), key=lambda i: (model[i]["created_us"], i), reverse=True
    )

    def expected(**match: Any) -> tuple[int, int]:
        rows = [e for e in model if all(e[k] == v for k, v in match.items())]
        return len(rows), sum(e["amount"] for e in rows)

    cases: list[tuple[dict[str, str], dict[str, Any]]] = [
        ({}, {}),
        ({"status": "pending"}, {"status": "pending"}),
        ({"status": "successful"}, {"status": "success"}),
        ({"status": "failed", "kind": "CASHOUT"}, {"status": "failed", "kind": "CASHOUT"}),
        ({"event-kind": "transaction:processed"}, {"event_kind": "transaction:processed"}),
        ({"kind": "CASHIN", "event-kind": "transaction:created"},
         {"kind": "CASHIN", "event_kind": "transaction:created"}),
        ({"client": clients[1]}, {"client": clients[1]}),
        ({"client": clients[2], "status": "success"}, {"client": clients[2], "status": "success"}),
        ({"ref": model[-1]["ref"]}, {"ref": model[-1]["ref"]}),
    ]  # fmt: skip
    for params, match in cases:
        body = api.events(**params).json()
        assert (body["total"], body["amount"]) == expected(**match), params
        assert isinstance(body["amount"], int)
    # a time range: the first thousand events' window, both bounds inclusive
    start, end = model[0]["created_us"], model[999]["created_us"]
    body = api.events(
        **{
            "from": timefmt.utc_text(start),
            "to": timefmt.utc_text(end),
        }
    ).json()
    in_range = [e for e in model if start <= e["created_us"] <= end]
    assert (body["total"], body["amount"]) == (
        len(in_range),
        sum(e["amount"] for e in in_range),
    )
    # every page of the unfiltered list, newest first, adds up to the whole
    seen: list[tuple[str, str]] = []
    offset = 0
    while True:
        page = api.events(limit=100, offset=offset).json()
        assert page["total"] == len(model) and page["limit"] == 100 and page["offset"] == offset
        seen += [(e["data"]["ref"], e["event_kind"]) for e in page["transactions"]]
        if len(page["transactions"]) < 100:
            break
        offset += 100
    assert seen == [(model[i]["ref"], model[i]["event_kind"]) for i in newest_first]
    beyond = api.events(limit=100, offset=len(model)).json()
    assert beyond["transactions"] == [] and beyond["total"] == len(model)
    assert totals_mismatches(store) == []


# -- running totals against a scan ------------------------------------------------------------
def test_running_totals_match_a_scan_after_mixed_traffic(inproc, tmp_path: Path) -> None:
    db = tmp_path / "stub.db"
    config = {
        "db": str(db),
        "faults": ["drop-acknowledged"],
        "drop_rate": 0.3,
        "pending_timeout_s": 0.4,
        "auto_resolve": {
            "default": {"outcome": "none"},
            "rules": [
                {"number_suffix": "1", "outcome": "success", "delay_s": 0.1},
                {"number_suffix": "2", "outcome": "failed", "delay_s": 0.1},
            ],
        },
    }
    server = inproc(**config)
    api = server.api
    demo1 = api.app("read-write", "DEMO01")
    demo2 = api.app("read-write", "DEMO02")
    rng = random.Random(11)
    acknowledged = 0
    for i in range(120):
        app = demo1 if i % 3 else demo2
        # DEMO02 also gets float amounts, which send its list to the exact scan
        amount: Any = rng.randrange(100, 9000)
        if app is demo2 and i % 2:
            amount = amount + 0.25
        key = f"mixed-{i // 2}"  # every second request reuses a key: 409 unless it was dropped
        response = api.create(
            rng.choice(("cashin", "cashout")), app=app, amount=amount, key=key,
            number=new_number()[:-1] + rng.choice("0123"),
        )  # fmt: skip
        assert response.status_code in (200, 409), response.text
        acknowledged += response.status_code == 200
        if response.status_code == 200 and rng.random() < 0.3:
            api.sandbox(response.json()["ref"], rng.choice(("confirm", "cancel")))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not server.call(count_pending, server.stub.store):
            break
        time.sleep(0.05)
    assert server.call(count_pending, server.stub.store) == 0
    stored = server.call(count_transactions, server.stub.store)
    assert 0 < stored < acknowledged  # the fault dropped some acknowledged creations

    def check(label: str) -> None:
        assert server.call(totals_mismatches, server.stub.store) == [], label
        for app in (demo1, demo2):
            for params, where, args in (
                ({}, "", ()),
                ({"status": "pending"}, " AND status = ?", ("pending",)),
                ({"status": "success"}, " AND status = ?", ("success",)),
                ({"status": "failed"}, " AND status = ?", ("failed",)),
                ({"kind": "CASHOUT"}, " AND kind = ?", ("CASHOUT",)),
                (
                    {"event-kind": "transaction:processed", "kind": "CASHIN"},
                    " AND event_kind = ? AND kind = ?",
                    ("transaction:processed", "CASHIN"),
                ),
            ):
                body = api.events(app, **params).json()
                n, total = scan(db, app.merchant, where, args)
                assert body["total"] == n, (label, app.merchant, params)
                assert body["amount"] == pytest.approx(total, abs=1e-6), (label, params)
                if app is demo1:  # integer amounts only: an exact integer, as a scan sums it
                    assert isinstance(body["amount"], int)

    check("running")
    server.close()
    restarted = inproc(**config)  # the same database file, a new process's worth of state
    api = restarted.api
    demo1 = api.app("read-write", "DEMO01")
    demo2 = api.app("read-write", "DEMO02")
    server = restarted
    check("after a restart")


def test_creation_that_fails_midway_leaves_nothing(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    # make the created-event insert (the last of a creation's three) fail for one client
    store.conn.execute(
        "CREATE TRIGGER boom BEFORE INSERT ON events WHEN new.client = '0789999999'"
        " BEGIN SELECT RAISE(ABORT, 'boom'); END"
    )

    async def scenario() -> None:
        first = create(store, "M", key="k1", ref="r1")
        with pytest.raises(sqlite3.IntegrityError):
            create(store, "M", key="k2", ref="r2", client="0789999999")
        third = create(store, "M", key="k3", ref="r3")
        with pytest.raises(KeyReused):
            create(store, "M", key="k1", ref="r4")
        await asyncio.gather(first, third)
        await create(store, "M", key="k2", ref="r5")  # the failed creation left its key free

    asyncio.run(scenario())
    db = store.conn
    assert [r[0] for r in db.execute("SELECT ref FROM transactions ORDER BY id")] == [
        "r1",
        "r3",
        "r5",
    ]
    assert sorted(db.execute("SELECT key, ref FROM idempotency")) == [
        ("k1", "r1"),
        ("k2", "r5"),
        ("k3", "r3"),
    ]
    assert db.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 3
    assert totals_mismatches(store) == []
    store.close()


def test_sums_a_cell_cannot_give_exactly_come_from_the_scan(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "s.db"))
    huge = 2**62

    async def fill() -> None:
        waiters = [create(store, "BIG", amount=huge) for _ in range(3)]  # overflows int64
        waiters += [create(store, "FLT", amount=a) for a in (100.1, 100.2, 100.3, 250)]
        waiters += [create(store, "INT", amount=a) for a in (100, 200, 300)]
        await asyncio.gather(*waiters)

    asyncio.run(fill())
    for merchant in ("BIG", "FLT", "INT"):
        total, amount, _ = store.list_events(EventQuery(merchant=merchant))
        want = store.scan_totals(" WHERE merchant = ?", [merchant])
        assert (total, amount) == want and type(amount) is type(want[1])
    assert store.list_events(EventQuery(merchant="BIG"))[1] == float(3 * huge)
    assert store.list_events(EventQuery(merchant="INT"))[1] == 600
    assert store.list_events(EventQuery(merchant="FLT"))[1] == 100.1 + 100.2 + 100.3 + 250
    assert store.list_events(EventQuery(merchant="NONE"))[:2] == (0, 0)
    assert totals_mismatches(store) == []
    store.close()


def test_checkpoints_happen_off_the_request_path(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(str(path))
    before = path.stat().st_size

    async def fill() -> None:
        for _ in range(120):  # 120 batches: 120 commits, past the checkpoint threshold
            await create(store, "M")

    asyncio.run(fill())
    deadline = time.monotonic() + 10
    while path.stat().st_size <= before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.stat().st_size > before  # pages were copied from the WAL into the database
    assert store.conn.execute("SELECT COUNT(*) FROM transactions").fetchone()[0] == 120
    store.close()
    assert not os.path.exists(str(path) + "-wal")


# -- cached renderings ------------------------------------------------------------------------
def test_cached_timestamps_render_like_datetime() -> None:
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    zones = [UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=9, minutes=30))]
    rng = random.Random(3)
    for _ in range(20_000):
        us = rng.choice([rng.randrange(-(10**15), 3 * 10**16), T0 + rng.randrange(10**8)])
        moment = epoch + timedelta(microseconds=us)
        assert timefmt.utc_text(us) == moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        zone = rng.choice(zones)
        assert timefmt.offset_text(us, zone) == moment.astimezone(zone).isoformat(
            timespec="microseconds"
        )
        assert timefmt.utc_text(us, broken=True) == moment.strftime("%Y-%m-%d %H:%M:%S")


def test_generated_refs_are_uuid4() -> None:
    for _ in range(2000):
        text = uuid4_text()
        parsed = uuid.UUID(text)
        assert str(parsed) == text and parsed.version == 4 and parsed.variant == uuid.RFC_4122


# -- time ranges from hourly cells, index hints, deep pages ---------------------------------------
HOUR = 3_600_000_000


def test_time_ranges_page_filters_and_deep_offsets_match_a_scan(tmp_path: Path) -> None:
    """``from``/``to`` totals come from hourly cells plus scans of the partial hours; a ref or a
    client filter goes through its own index; deep pages are found in the index first. Every
    answer must be what a plain scan and a plain ORDER BY give, to the event."""
    path = tmp_path / "s.db"
    store = Store(str(path))
    rng = random.Random(5)
    clients = [new_number() for _ in range(12)]

    async def fill() -> None:
        waiters = []
        for i in range(900):
            waiters.append(
                create(
                    store, ("M1", "M2")[i % 2],
                    created_us=T0 + rng.randrange(0, 30 * HOUR),
                    kind=rng.choice(("CASHIN", "CASHOUT")),
                    client=rng.choice(clients),
                    amount=rng.choice((100, 250, 1000)) if i != 700 else 100.5,
                )
            )  # fmt: skip
        await asyncio.gather(*waiters)

    asyncio.run(fill())
    store.process_many(
        [(i, rng.choice(("success", "failed"))) for i in range(1, 900, 3)],
        T0 + 31 * HOUR,
        record_event=True,
    )
    conn = sqlite3.connect(path)

    def expected(q: EventQuery) -> tuple[int, Any, list[str]]:
        where = ["merchant = ?"]
        params: list[Any] = [q.merchant]
        for column, value in (("status", q.status), ("kind", q.kind), ("client", q.client),
                              ("ref", q.ref), ("event_kind", q.event_kind)):  # fmt: skip
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if q.from_us is not None:
            where.append("created_us >= ?")
            params.append(q.from_us)
        if q.to_us is not None:
            where.append("created_us <= ?")
            params.append(q.to_us)
        sql = " WHERE " + " AND ".join(where)
        n, amount = conn.execute(
            f"SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM events{sql}", params
        ).fetchone()
        ids = [
            r[0]
            for r in conn.execute(
                f"SELECT event_id FROM events NOT INDEXED{sql} ORDER BY created_us DESC, seq DESC"
                " LIMIT ? OFFSET ?",
                [*params, q.limit, q.offset],
            )
        ]
        return n, amount, ids

    some_ref = conn.execute("SELECT ref FROM events WHERE merchant = 'M1' LIMIT 1").fetchone()[0]
    checked = 0
    for _ in range(300):
        lo = T0 + rng.randrange(-2 * HOUR, 33 * HOUR) if rng.random() < 0.8 else None
        hi = T0 + rng.randrange(-2 * HOUR, 33 * HOUR) if rng.random() < 0.8 else None
        if rng.random() < 0.2 and lo is not None:
            lo -= lo % HOUR  # exactly on an hour's start
        q = EventQuery(
            merchant=rng.choice(("M1", "M2")),
            status=rng.choice((None, None, "pending", "success", "failed")),
            kind=rng.choice((None, None, "CASHIN", "CASHOUT")),
            event_kind=rng.choice((None, None, "transaction:created", "transaction:processed")),
            client=rng.choice((None,) * 6 + (clients[0],)),
            ref=rng.choice((None,) * 9 + (some_ref,)),
            from_us=lo,
            to_us=hi,
            limit=rng.choice((1, 20, 100)),
            offset=rng.choice((0, 0, 5, 250, 400)),
        )
        total, amount, page = store.list_events(q)
        want = expected(q)
        assert (total, amount) == want[:2] and type(amount) is type(want[1]), q
        assert [e.event_id for e in page] == want[2], q
        checked += 1
    hourly = conn.execute(
        "SELECT COALESCE(SUM(n), 0) FROM event_totals_hourly WHERE n != 0"
    ).fetchone()[0]
    assert hourly == conn.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    conn.close()
    store.close()
    assert checked == 300
