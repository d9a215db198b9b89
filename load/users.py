"""The virtual user: a Locust user that behaves like a merchant integration.

Each user holds one application of the target configuration (round-robin), authorizes once, and
runs the shape's weighted mix of operations its privilege allows: cashin, cashout, find (of refs
it created; read-only users look up refs their merchant's users created), list events (plain and
filtered). Every create carries a fresh idempotency key, a number and an amount valid for the
target, and every acknowledged create goes to the ledger for the reconciliation. Request names are
stable (``cashin``, ``cashout``, ``find``, ``events``, ``events?filter``, ``authorize``,
``refresh``), so statistics and SLOs line up across runs and shapes.

Two load shapes change what a task is: ``idempotency-storm`` (users share a few keys per time slot,
and a 409 on a reused key is the expected answer, counted as a success) and ``lifecycle`` (create,
then poll find until the transaction leaves ``pending``, recording the time to processed).
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import random
import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from locust import User, task
from locust.env import Environment
from locust.exception import LocustError
from locust.user.wait_time import constant_throughput

from load import bounded
from load import context as run_context
from load.auth import AuthError, token_flow
from load.ledger import LEDGER, CreateRecord

T = TypeVar("T")

KINDS = {"cashin": "CASHIN", "cashout": "CASHOUT"}
LIFECYCLE_POLL_S = 0.25


class PaysuiteUser(User):
    """One merchant integration under load (see the module docstring).

    Its requests go through ``load.bounded.Client`` (``self.http``): one keep-alive connection,
    no retries of paysuite's own, every request bounded by the run's ``Limits`` and
    reported to Locust's statistics as any ``HttpUser``'s are."""

    # the target's base URL comes from --host or the configuration's base_url
    host = ""
    #: do not verify a TLS certificate (as Locust's FastHttpUser): load targets are local
    insecure = True

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        if not self.host:
            raise LocustError(
                "You must specify the base host: --host, or base_url in --paysuite-config."
            )
        self.limits = run_context.current_plan().limits
        self.http = bounded.Client(
            self.host, self.limits, environment.events.request, insecure=self.insecure
        )

    def wait_time(self) -> float:
        pause = self._pause
        if pause is not None:  # ("constant", s): read once at start
            return pause
        pacing = self.ctx.shape.pacing
        if pacing[0] == "throughput":
            return self._pacer(self)
        return self.rng.uniform(pacing[1], pacing[2])  # ("between", lo, hi)

    def on_start(self) -> None:
        self.ctx = run_context.current()
        shape = self.ctx.shape
        self.rng = random.Random()
        storm = shape.name == "idempotency-storm"
        lifecycle = shape.name == "lifecycle"
        self.app = self.ctx.next_application(creators_only=storm or lifecycle)
        self.tokens = token_flow(self.http, self.app, self.ctx.config.access_token_ttl_s)
        self.refs: deque[str] = deque(maxlen=200)
        self.numbers: deque[str] = deque(maxlen=50)
        if shape.pacing[0] == "throughput":
            per_user = float(shape.pacing[1]) / max(shape.users, 1)
            self._pacer = constant_throughput(per_user)
        pacing = shape.pacing
        self._pause: float | None = None
        if pacing[0] != "throughput" and len(pacing) == 2:
            self._pause = float(pacing[1])
        # what a task does, and the names it counts under: decided once, not on every task
        self._mode = "storm" if storm else "lifecycle" if lifecycle else "mix"
        self._headers_token: str | None = None
        self._headers: dict[str, str] = {}
        self.ops, self.weights = self._allowed_mix(shape.mix)
        self._started = {op: f"started:{op}" for op in (*self.ops, *KINDS, "events")}
        # random.choices' own cumulative weights, computed once instead of on every task
        self._cum_weights = list(itertools.accumulate(self.weights))
        self._total_weight = self._cum_weights[-1]
        try:
            self.tokens.authorize()
        except AuthError:
            pass  # counted as a failed "authorize"; the first task tries again, rate-limited

    def on_stop(self) -> None:
        self.http.close()

    # -- the mix -------------------------------------------------------------------------------
    def _allowed_mix(self, mix: dict[str, float]) -> tuple[list[str], list[float]]:
        ops, weights = [], []
        for op, weight in mix.items():
            if weight <= 0:
                continue
            if op == "cashin" and not self.app.can_cashin():
                continue
            if op == "cashout" and not self.app.can_cashout():
                continue
            ops.append(op)
            weights.append(weight)
        if not ops:  # a read-only application with a create-only mix: it can still read
            ops, weights = ["find", "events"], [1.0, 1.0]
        return ops, weights

    def _creating_op(self) -> str:
        return "cashin" if self.app.can_cashin() else "cashout"

    @task
    def step(self) -> None:
        mode = self._mode
        if mode == "storm":
            op = self._creating_op()
        else:
            # what rng.choices(self.ops, self.weights)[0] draws, from the same random number
            draw = self.rng.random() * self._total_weight
            op = self.ops[bisect.bisect(self._cum_weights, draw, 0, len(self.ops) - 1)]
            if mode == "lifecycle" and op not in KINDS:
                op = self._creating_op()
            elif op == "find" and not (self.refs or self.ctx.merchant_refs(self.app.merchant)):
                op = "events"  # nothing to find yet: counted as what is sent (find() does so)
        LEDGER.count(self._started[op])  # a run that completes none of them cannot pass
        try:
            if mode == "storm":
                self.storm_create()
            elif mode == "lifecycle":
                self.lifecycle_round(op)
            elif op in KINDS:
                self.create(op)
            elif op == "find":
                self.find()
            else:
                self.events(filtered=op == "events?filter")
        except AuthError as exc:
            # The operation was due and could not be sent: it counts as a failed request of
            # its own name, so a run whose authorize always fails can never pass (issue 13).
            LEDGER.count("auth_errors")
            self.environment.events.request.fire(
                request_type="POST" if op in KINDS else "GET",
                name=op,
                response_time=0,
                response_length=0,
                exception=exc,
                context={},
            )

    # -- operations ----------------------------------------------------------------------------
    def create(
        self,
        op: str,
        *,
        key: str | None = None,
        number: str | None = None,
        amount: float | None = None,
        storm: bool = False,
    ) -> str | None:
        """POST a cashin/cashout; returns the ref when acknowledged with a 2xx."""
        key = key or uuid.uuid4().hex  # 32 characters: the document's maximum
        number = number or self.ctx.numbers.number()
        amount = amount if amount is not None else self.ctx.amounts.amount()
        body = {"amount": amount, "number": number}
        ref = self._send(
            "POST",
            f"/transactions/{op}",
            op,
            lambda resp: self._judge_create(resp, op, storm),
            headers={"Idempotency-Key": key},
            json=body,
        )
        if ref is not None:
            self._remember(ref, number)
            record: CreateRecord = {
                "ref": ref,
                "key": key,
                "kind": KINDS[op],
                "number": number,
                "amount": amount,
                "merchant": self.app.merchant,
                "t": round(time.time(), 3),
            }
            if storm:
                record["storm"] = True
            LEDGER.record_create(record)
        return ref

    def _send(
        self,
        method: str,
        path: str,
        name: str,
        judge: Callable[[bounded.Reply], T | None],
        *,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> T | None:
        """One request with this user's token; a 401 renews the token and retries once.

        The refused attempt stays in the statistics as a failure: a target that drops tokens
        early should show up there, not be hidden by the retry.
        """
        for attempt in (1, 2):
            sent = self._auth_headers()
            with self.http.request(
                method,
                path,
                headers={**sent, **headers} if headers else sent,
                name=name,
                **kwargs,
            ) as reply:
                if reply.problem is not None:
                    return None  # counted as a failure with its reason already
                if reply.status != 401 or attempt == 2:
                    return judge(reply)
                reply.failure("401: token refused; refreshing")
            self.tokens.renew()
        return None

    def _auth_headers(self) -> dict[str, str]:
        """The token flow's headers (``Accept-Encoding: identity`` added, see ``load.bounded``),
        made again only when the access token changes: ``access()`` still runs before every
        request, so a token due for renewal is renewed exactly as before. Never modified by
        its users (``bounded`` copies what it changes)."""
        access = self.tokens.access()
        if access is not self._headers_token:
            self._headers = {"Accept-Encoding": "identity", **self.tokens.headers()}
            self._headers_token = access
        return self._headers

    def _judge_create(self, resp: bounded.Reply, op: str, storm: bool) -> str | None:
        status = resp.status
        if storm and status == 409:
            resp.success()  # the expected answer to a reused key
            LEDGER.count("idempotency_conflicts")
            return None
        if not 200 <= status < 300:
            resp.failure(f"status {status}")
            return None
        try:
            data = resp.json()
        except Exception:  # noqa: BLE001 - any undecodable body is the same failure
            data = None
        ref = data.get("ref") if isinstance(data, dict) else None
        if not isinstance(ref, str) or not ref:
            resp.failure("2xx without a ref")
            LEDGER.count("acknowledged_without_ref")
            return None
        if data.get("kind") not in (None, KINDS[op]):
            resp.failure(f"kind {data.get('kind')!r}, expected {KINDS[op]}")
        else:
            resp.success()
        return ref

    def _remember(self, ref: str, number: str) -> None:
        self.refs.append(ref)
        self.numbers.append(number)
        self.ctx.merchant_refs(self.app.merchant).append(ref)

    def _some_ref(self) -> str | None:
        pool = self.refs or self.ctx.merchant_refs(self.app.merchant)
        return self.rng.choice(pool) if pool else None

    def find(self, ref: str | None = None) -> dict[str, Any] | None:
        ref = ref or self._some_ref()
        if ref is None:
            self.events(filtered=False)
            return None
        return self._send("GET", f"/transactions/find/{ref}", "find", _judge_found)

    def events(self, *, filtered: bool) -> None:
        params = ""
        name = "events"
        if filtered:
            name = "events?filter"
            choices = [f"kind={self.rng.choice(('CASHIN', 'CASHOUT'))}", "status=pending"]
            if self.refs:
                choices.append(f"ref={self.rng.choice(self.refs)}")
            if self.numbers:
                choices.append(f"client={self.rng.choice(self.numbers)}")
            params = "?" + self.rng.choice(choices)
        self._send("GET", f"/events/transactions{params}", name, _judge_listed)

    @staticmethod
    def _judge_json(resp: bounded.Reply, require: str) -> dict[str, Any] | None:
        status = resp.status
        if not 200 <= status < 300:
            resp.failure(f"status {status}")
            return None
        try:
            data = resp.json()
        except Exception:  # noqa: BLE001
            data = None
        if not isinstance(data, dict) or require not in data:
            resp.failure(f"2xx without {require!r}")
            return None
        resp.success()
        return data

    # -- idempotency storm ---------------------------------------------------------------------
    def storm_create(self) -> None:
        """Reuse one of the few keys of the current time slot: all users race on the same keys."""
        shape = self.ctx.shape
        slot = int(time.time() // shape.storm_slot_s)
        index = self.rng.randrange(max(shape.storm_keys, 1))
        op = self._creating_op()
        # same merchant, operation, key and body: a true retry, whatever the key's scope
        seed = f"{self.ctx.run_id}|{self.app.merchant}|{op}|{slot}|{index}"
        key = hashlib.sha256(seed.encode()).hexdigest()[:32]
        rng = random.Random(key)
        self.create(
            op,
            key=key,
            number=self.ctx.numbers.number(rng),
            amount=self.ctx.amounts.amount(rng),
            storm=True,
        )

    # -- lifecycle -----------------------------------------------------------------------------
    def lifecycle_round(self, op: str) -> None:
        """Create, make (or let) the customer answer, poll find until processed."""
        customer = self.ctx.config.customer
        number = None
        if self.ctx.lifecycle_resolve == "driver" and customer.driver == "magic-numbers":
            number = customer.confirm_number
        started = time.monotonic()
        ref = self.create(op, number=number)
        if ref is None:
            return
        if self.ctx.lifecycle_resolve == "driver" and customer.driver == "sandbox":
            assert customer.confirm is not None
            with self.http.request(
                customer.confirm.method,
                customer.confirm.url(ref),
                headers={"Accept": "application/json"},
                name="customer",
            ) as reply:
                # 409: the target resolved it by itself first; the customer's answer still came
                if reply.problem is not None:
                    pass
                elif 200 <= reply.status < 300 or reply.status == 409:
                    reply.success()
                else:
                    reply.failure(f"status {reply.status}")
        deadline = started + customer.timeout_s
        while time.monotonic() < deadline:
            data = self.find(ref)
            status = data.get("status") if data else None
            if status and status != "pending":
                LEDGER.record_time_to_processed(time.monotonic() - started, str(status))
                return
            time.sleep(LIFECYCLE_POLL_S)
        LEDGER.count("lifecycle_timeouts")


# the judges of find and the events list, made once (not a closure per request)
_judge_found = functools.partial(PaysuiteUser._judge_json, require="ref")
_judge_listed = functools.partial(PaysuiteUser._judge_json, require="transactions")
