"""The fixed paypack-py walk the proxy's self-tests drive through ``paysuite proxy``.

Run as ``python tests/proxy/paypack_walk.py`` with a job (JSON) on stdin: ``base_url`` (the
proxy's address with the API's path), ``root_url`` (the proxy's root, where the stub's sandbox
customer is reached), ``client_id``, ``client_secret``, ``number``, ``key``. Prints what each
step answered as JSON. A subprocess of its own because the SDK keeps its state in module globals.

The walk is a merchant's ordinary day with paypack-py 1.0.5, unchanged: authorize, a cashin and
a cashout, find the cashin, list the customer's events, the customer confirms the cashin and
cancels the cashout (the stub's sandbox, through the proxy as a test harness would), find both
again, list each ref's events, refresh the token, a list filtered by status, and a cashin sent
twice with one Idempotency-Key (the SDK has no parameter for it: the key goes on its session's
headers, as a caller of the SDK would add it).
"""

from __future__ import annotations

import json
import sys
from typing import Any


def walk(job: dict[str, Any]) -> dict[str, Any]:
    import paypack.client
    import paypack.config
    import paypack.http_client
    import requests

    paypack.config.base_url = job["base_url"]
    paypack.client.base_url = job["base_url"]
    from paypack.client import HttpClient
    from paypack.events import Event
    from paypack.oauth2 import Oauth
    from paypack.transactions import Transaction

    HttpClient(client_id=job["client_id"], client_secret=job["client_secret"])
    number, steps = job["number"], {}

    def step(name: str, call: Any) -> Any:
        try:
            steps[name] = call()
        except Exception as exc:  # a faulty target breaks the SDK anywhere
            steps[name] = {"error": f"{type(exc).__name__}: {exc}"}
        return steps[name]

    def ref_of(answer: Any) -> str:
        ref = answer.get("ref") if isinstance(answer, dict) else None
        return ref if isinstance(ref, str) else "00000000-0000-4000-8000-000000000000"

    def customer(ref: str, action: str) -> dict[str, Any]:
        reply = requests.post(f"{job['root_url']}/_sandbox/transactions/{ref}/{action}", timeout=30)
        return {"status": reply.status_code}

    step("authorize", lambda: Oauth().auth())
    cashin = ref_of(step("cashin", lambda: Transaction().cashin(amount=100, phone_number=number)))
    cashout = ref_of(
        step("cashout", lambda: Transaction().cashout(amount=200, phone_number=number))
    )
    step("find", lambda: Transaction().find(cashin))
    step("events", lambda: Event().list(client=number))
    step("confirm", lambda: customer(cashin, "confirm"))
    step("cancel", lambda: customer(cashout, "cancel"))
    step("find confirmed", lambda: Transaction().find(cashin))
    step("find cancelled", lambda: Transaction().find(cashout))
    step("events of the cashin", lambda: Event().list(ref=cashin))
    step("events of the cashout", lambda: Event().list(ref=cashout))
    step("refresh", lambda: Oauth().refresh_access_token())
    step("filtered", lambda: Event().list(client=number, status="success"))
    paypack.http_client.client.headers.update({"Idempotency-Key": job["key"]})
    step("keyed cashin", lambda: Transaction().cashin(amount=300, phone_number=number))
    step("reused key", lambda: Transaction().cashin(amount=300, phone_number=number))
    return steps


def main() -> int:
    print(json.dumps(walk(json.loads(sys.stdin.read()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
