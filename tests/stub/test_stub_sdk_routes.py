"""The SDK-only routes (RC-36, RC-37), compared with what the document's own routes show."""

from __future__ import annotations

import pytest
from stubkit import new_number

from stub_server.merchant_queries import provider_of


@pytest.fixture
def server(inproc):
    return inproc(fee_rate=0.023)


def _settle(api, kind: str, amount: int, number: str, action: str | None) -> str:
    ref = api.create(kind, amount=amount, number=number).json()["ref"]
    if action:
        assert api.sandbox(ref, action).status_code == 200
    return ref


def test_merchant_me_balances_follow_settled_transactions(server) -> None:
    api = server.api
    mine, other = api.app("read-write", "DEMO01"), api.app("read-write", "DEMO02")
    me = api.http.get("/merchants/me", headers=api.headers(mine)).json()
    assert me == {
        "id": "DEMO01", "name": "DEMO01", "in_rate": 0.023, "out_rate": 0.023,
        "airtel_in_rate": 0.023, "airtel_out_rate": 0.023,
        "balance": 0, "mtn_balance": 0, "airtel_balance": 0,
    }  # fmt: skip
    _settle(api, "cashin", 1000, "0781234567", "confirm")  # MTN +1000 - 23
    _settle(api, "cashout", 300, "+250721234567", "confirm")  # Airtel -300 - 6.9
    _settle(api, "cashin", 500, "0751234567", "confirm")  # neither channel: +500 - 11.5
    _settle(api, "cashin", 700, "0791234567", "cancel")  # failed: moves nothing
    _settle(api, "cashin", 900, "0791234567", None)  # pending: moves nothing
    api.create("cashin", app=other, amount=5000)  # another merchant's
    me = api.http.get("/merchants/me", headers=api.headers(mine)).json()
    assert (me["mtn_balance"], me["airtel_balance"], me["balance"]) == (977, -306.9, 1158.6)
    # the balance is what the settled transactions of the events list add up to
    events = api.events(mine, status="success", **{"event-kind": "transaction:processed"})
    settled = events.json()["transactions"]
    net = sum(
        (e["data"]["amount"] - e["data"]["fee"])
        if e["data"]["kind"] == "CASHIN"
        else -(e["data"]["amount"] + e["data"]["fee"])
        for e in settled
    )
    assert me["balance"] == round(net, 2)


def test_transactions_list_shows_what_find_shows(server) -> None:
    api = server.api
    number = new_number("072")
    refs = [_settle(api, kind, amount, number, None) for kind, amount in
            (("cashin", 100), ("cashout", 250), ("cashin", 400))]  # fmt: skip
    assert api.sandbox(refs[0], "confirm").status_code == 200
    body = api.http.get(
        "/transactions/list", params={"client": number}, headers=api.headers()
    ).json()
    assert body["total"] == 3 and (body["limit"], body["offset"]) == (20, 0)
    assert (body["cashin"], body["cashout"], body["fee"]) == (500, 250, 17.25)
    assert body["client"] == number and "kind" not in body and "from" not in body
    assert [tx["ref"] for tx in body["transactions"]] == refs[::-1]  # newest first
    for tx in body["transactions"]:
        found = api.find(tx["ref"]).json()
        assert tx == {**found, "provider": "momo-airtel-rw"}
    # filters, paging, and a bare token (paypack-js)
    page = api.http.get(
        "/transactions/list",
        params={"client": number, "kind": "CASHIN", "limit": 1, "offset": 1},
        headers={"Authorization": api.token()},
    ).json()
    assert page["total"] == 2 and page["kind"] == "CASHIN" and page["cashout"] == 0
    assert [tx["ref"] for tx in page["transactions"]] == [refs[0]]
    done = api.http.get(
        "/transactions/list", params={"client": number, "status": "successful"},
        headers=api.headers(),
    ).json()  # fmt: skip
    assert [tx["ref"] for tx in done["transactions"]] == [refs[0]]
    assert done["transactions"][0]["status"] == "success"
    other = api.http.get(
        "/transactions/list", params={"client": number},
        headers=api.headers(api.app("read-write", "DEMO02")),
    ).json()  # fmt: skip
    assert other["total"] == 0 and other["transactions"] == []


@pytest.mark.parametrize(
    ("param", "value"),
    [("limit", "0"), ("limit", "101"), ("offset", "-1"), ("kind", "cashin"),
     ("status", "done"), ("from", "yesterday")],
)  # fmt: skip
def test_transactions_list_rejects_bad_filters(server, param: str, value: str) -> None:
    api = server.api
    response = api.http.get("/transactions/list", params={param: value}, headers=api.headers())
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "validation_error" and body["message"].startswith(f"{param}: ")


def test_a_huge_offset_is_an_empty_page(server) -> None:
    api = server.api
    response = api.http.get(
        "/transactions/list", params={"offset": "9" * 40}, headers=api.headers()
    )
    assert response.status_code == 200 and response.json()["transactions"] == []


@pytest.mark.parametrize(
    ("number", "provider"),
    [("0781234567", "momo-mtn-rw"), ("+250791234567", "momo-mtn-rw"),
     ("250731234567", "momo-airtel-rw"), ("0721234567", "momo-airtel-rw"),
     ("0751234567", "unknown"), ("+0781234567", "unknown")],
)  # fmt: skip
def test_provider_matches_the_go_sdk_and_the_sql(server, number: str, provider: str) -> None:
    """``provider_of`` (list items) and the SQL of the balances agree on every prefix shape."""
    assert provider_of(number) == provider
    from stub_server import merchant_queries

    sql = f"SELECT {merchant_queries._PROVIDER_SQL} FROM (SELECT ? AS client)"
    got = server.call(lambda: server.stub.store.conn.execute(sql, (number,)).fetchone()[0])
    assert got == provider


def test_answers_match_the_extension_schemas(server) -> None:
    """What the stub serves is what ``spec/openapi.yaml`` declares for the extensions."""
    from jsonschema import Draft202012Validator

    from paysuite_core.specfile import load_spec

    components = load_spec(extensions=True)["components"]
    api = server.api
    _settle(api, "cashin", 100, new_number(), "confirm")
    for path, schema in (("/merchants/me", "MerchantProfile"),
                         ("/transactions/list", "TransactionList")):  # fmt: skip
        body = api.http.get(path, params={"kind": "CASHIN"} if "list" in path else None,
                            headers=api.headers()).json()  # fmt: skip
        validator = Draft202012Validator(
            {"$ref": f"#/components/schemas/{schema}", "components": components}
        )
        assert not list(validator.iter_errors(body)), (path, body)
