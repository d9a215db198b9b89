"""The virtual users: one Locust user class per behaviour, each with Locust task weights.

``MerchantUser`` runs the shape's mix of cashin, cashout, find (of refs it created; read-only
users look up refs their merchant's users created) and list events (plain and filtered);
``StormUser`` retries the few idempotency keys of the current time slot, a 409 on a reused key
counted as a success; ``LifecycleUser`` creates, then polls find until the transaction leaves
``pending``, recording the time to processed. The shape names its classes
(``Shape.user_classes``). Request names are stable (``cashin``, ``cashout``, ``find``,
``events``, ``events?filter``, ``authorize``, ``refresh``), so statistics and SLOs line up across
runs and shapes. Every acknowledged create goes to the ledger for the reconciliation.
"""

from __future__ import annotations

import functools
import hashlib
import math
import random
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from fractions import Fraction
from typing import Any, TypeVar

from locust import User, between, constant_throughput, task
from locust.env import Environment
from locust.exception import LocustError
from locust.user.task import TaskSet

from load import bounded
from load.context import of
from load.ledger import LEDGER, CreateRecord
from load.shape_catalog import Pacing
from paysuite_core import tokens
from paysuite_core.target_config import Application
from paysuite_core.tokens import AuthError, TokenFlow
from paysuite_core.url_paths import segment

T = TypeVar("T")
#: a Locust task: a function of the user that runs it
Task = Callable[..., None]

KINDS = {"cashin": "CASHIN", "cashout": "CASHOUT"}
LIFECYCLE_POLL_S = 0.25
#: a load test that re-authorizes on every hiccup measures its own authorize storm
MIN_AUTHORIZE_INTERVAL_S = 5.0
#: the ledger's counter of an operation that was due, made once instead of on every task
_STARTED = {op: f"started:{op}" for op in (*KINDS, "find", "events", "events?filter")}


def wait_function(pacing: Pacing, users: int) -> Callable[[User], float]:
    """Locust's own wait function for a pacing; a throughput is shared by the shape's users
    (a constant pacing's ``low`` and ``high`` are equal: ``between`` waits exactly that)."""
    if pacing.kind == "throughput":
        return constant_throughput(pacing.rps / max(users, 1))
    return between(pacing.low, pacing.high)


def token_flow(client: bounded.Client, app: Application, fallback_ttl_s: float) -> TokenFlow:
    """The project's one token flow, its exchanges the user's own bounded requests: counted,
    timed and capped under the names ``authorize`` and ``refresh``."""

    @contextmanager
    def send(request: tokens.Request) -> Iterator[bounded.Reply]:
        headers = {k: v for k, v in request.headers.items() if v is not None}
        with client.request(
            request.method, request.path, name=request.name, headers=headers, json=request.json
        ) as reply:
            yield reply

    interval = MIN_AUTHORIZE_INTERVAL_S
    return TokenFlow(send, app, fallback_ttl_s=fallback_ttl_s, min_authorize_interval_s=interval)


def weighted(weights: Mapping[Task, float]) -> list[TaskSet | Callable[..., Any]]:
    """Locust's ``tasks = {task: weight}`` as the list it draws from, for weights given at run
    time (``--mix``): each task repeated by its weight, fractional weights scaled to integers."""
    fractions = {t: Fraction(w).limit_denominator(100) for t, w in weights.items() if w > 0}
    scale = math.lcm(*(f.denominator for f in fractions.values()))
    return [t for t, f in fractions.items() for _ in range(int(f * scale))]


class PaysuiteUser(User):
    """One merchant integration under load: its requests go through ``load.bounded.Client``
    (one keep-alive connection, no retries of paysuite's own, bounded by the run's
    ``Limits``, reported to Locust's statistics as any ``HttpUser``'s are)."""

    abstract = True
    # the target's base URL comes from --host or the configuration's base_url
    host = ""
    #: only applications that may create (a read-only one has nothing to retry or walk)
    creators_only = False

    def __init__(self, environment: Environment) -> None:
        super().__init__(environment)
        if not self.host:
            raise LocustError(
                "You must specify the base host: --host, or base_url in --paysuite-config."
            )
        plan = of(environment).current_plan()
        # the certificate is judged as the pre-check judged it (``LoadPlan.tls``)
        self.http = bounded.Client(self.host, plan.limits, environment.events.request, tls=plan.tls)

    def wait_time(self) -> float:
        return self._wait(self)

    def on_start(self) -> None:
        self.ctx = of(self.environment).current()
        shape = self.ctx.plan.shape
        self.rng = random.Random()
        self.app = self.ctx.next_application(creators_only=self.creators_only)
        self.tokens = token_flow(self.http, self.app, self.ctx.plan.target.access_token_ttl_s)
        self.refs: deque[str] = deque(maxlen=200)
        self.numbers: deque[str] = deque(maxlen=50)
        self._wait = wait_function(shape.pacing, shape.users)
        self._headers_token: str | None = None
        self._headers: dict[str, str] = {}
        self.tasks = weighted(self.task_weights(self._allowed_mix(shape.mix)))
        try:
            self.tokens.authorize()
        except AuthError:
            pass  # counted as a failed "authorize"; the first task tries again, rate-limited

    def on_stop(self) -> None:
        self.http.close()

    def task_weights(self, mix: dict[str, float]) -> dict[Task, float]:
        """This class's tasks weighted by the run's mix (the shape's, or ``--mix``)."""
        return {}

    def _allowed_mix(self, mix: dict[str, float]) -> dict[str, float]:
        may = {"cashin": self.app.can_cashin(), "cashout": self.app.can_cashout()}
        allowed = {op: weight for op, weight in mix.items() if weight > 0 and may.get(op, True)}
        # a read-only application with a create-only mix: it can still read
        return allowed or {"find": 1.0, "events": 1.0}

    def _creating_op(self) -> str:
        return "cashin" if self.app.can_cashin() else "cashout"

    def attempt(self, op: str, action: Callable[[], object]) -> None:
        """Run one due operation, counted as started: a run that completes none cannot pass."""
        LEDGER.count(_STARTED[op])
        try:
            action()
        except AuthError as exc:
            # due and not sent: a failed request of its own name, so a run whose authorize
            # always fails can never pass
            LEDGER.count("auth_errors")
            self.environment.events.request.fire(
                request_type="POST" if op in KINDS else "GET",
                name=op,
                response_time=0,
                response_length=0,
                exception=exc,
                context={},
            )

    # -- requests ------------------------------------------------------------------------------
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
        ref = self._send(
            "POST",
            f"/transactions/{op}",
            op,
            lambda resp: self._judge_create(resp, op, storm),
            headers={"Idempotency-Key": key},
            json={"amount": amount, "number": number},
        )
        if ref is not None:
            self.refs.append(ref)
            self.numbers.append(number)
            self.ctx.refs_by_merchant[self.app.merchant].append(ref)
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
        **kwargs: object,
    ) -> T | None:
        """One request with this user's token; a 401 renews the token and retries once. The
        refused attempt stays in the statistics as a failure: a target that drops tokens early
        should show up there, not be hidden by the retry."""
        for attempt in (1, 2):
            sent = self._auth_headers()
            merged = {**sent, **headers} if headers else sent
            with self.http.request(method, path, headers=merged, name=name, **kwargs) as reply:
                if reply.problem is not None:
                    return None  # counted as a failure with its reason already
                if reply.status != 401 or attempt == 2:
                    return judge(reply)
                reply.failure("401: token refused; refreshing")
            self.tokens.renew()
        return None

    def _auth_headers(self) -> dict[str, str]:
        """Made again only when the access token changes; ``access()`` still runs before every
        request, so a token due for renewal is renewed exactly as before. ``bounded`` copies
        what it changes, so the dict can be shared."""
        access = self.tokens.access()
        if access is not self._headers_token:
            self._headers = {"Accept-Encoding": "identity", **self.tokens.headers()}
            self._headers_token = access
        return self._headers

    def _judge_create(self, resp: bounded.Reply, op: str, storm: bool) -> str | None:
        if storm and resp.status == 409:
            resp.success()  # the expected answer to a reused key
            LEDGER.count("idempotency_conflicts")
            return None
        data = _json_2xx(resp)
        if data is None:
            return None
        ref = data.get("ref")
        if not isinstance(ref, str) or not ref:
            resp.failure("2xx without a ref")
            LEDGER.count("acknowledged_without_ref")
            return None
        if data.get("kind") not in (None, KINDS[op]):
            resp.failure(f"kind {data.get('kind')!r}, expected {KINDS[op]}")
        else:
            resp.success()
        return ref

    def lookup(self, ref: str) -> dict[str, Any] | None:
        return self._send("GET", f"/transactions/find/{segment(ref)}", "find", _judge_found)

    def list_events(self, *, filtered: bool) -> None:
        params = ""
        if filtered:
            choices = [f"kind={self.rng.choice(('CASHIN', 'CASHOUT'))}", "status=pending"]
            if self.refs:
                choices.append(f"ref={segment(self.rng.choice(self.refs))}")
            if self.numbers:
                choices.append(f"client={segment(self.rng.choice(self.numbers))}")
            params = "?" + self.rng.choice(choices)
        name = "events?filter" if filtered else "events"
        self._send("GET", f"/events/transactions{params}", name, _judge_listed)


def _json_2xx(resp: bounded.Reply, require: str | None = None) -> dict[str, Any] | None:
    """The JSON object of a 2xx answer (holding ``require``); a failure of the request else."""
    if not 200 <= resp.status < 300:
        resp.failure(f"status {resp.status}")
        return None
    try:
        data = resp.json()
    except Exception:  # any undecodable body is the same failure
        data = None
    if not isinstance(data, dict) or (require is not None and require not in data):
        resp.failure(f"2xx without {require!r}" if require else "2xx without a ref")
        if require is None:
            LEDGER.count("acknowledged_without_ref")
        return None
    if require is not None:
        resp.success()
    return data


# the judges of find and the events list, made once (not a closure per request)
_judge_found = functools.partial(_json_2xx, require="ref")
_judge_listed = functools.partial(_json_2xx, require="transactions")


class MerchantUser(PaysuiteUser):
    """The mixed merchant workload (smoke, steady, ramp, spike, soak). The weights here are the
    default mix; a shape's own mix or ``--mix`` reweights them."""

    @task(3)
    def cashin(self) -> None:
        self.attempt("cashin", lambda: self.create("cashin"))

    @task(2)
    def cashout(self) -> None:
        self.attempt("cashout", lambda: self.create("cashout"))

    @task(3)
    def find(self) -> None:
        pool = self.refs or self.ctx.refs_by_merchant[self.app.merchant]
        if not pool:  # nothing to find yet: counted as what is sent
            self.events()
            return
        ref = self.rng.choice(pool)
        self.attempt("find", lambda: self.lookup(ref))

    @task(1)
    def events(self) -> None:
        self.attempt("events", lambda: self.list_events(filtered=False))

    @task(1)
    def events_filtered(self) -> None:
        self.attempt("events?filter", lambda: self.list_events(filtered=True))

    def task_weights(self, mix: dict[str, float]) -> dict[Task, float]:
        # each operation's task is the method of its name (``events?filter``: events_filtered)
        return {
            getattr(MerchantUser, op.replace("?filter", "_filtered")): w for op, w in mix.items()
        }


class StormUser(PaysuiteUser):
    """Idempotency storm: every user races on the same few keys of the current time slot."""

    creators_only = True

    @task
    def storm(self) -> None:
        op = self._creating_op()
        self.attempt(op, lambda: self.storm_create(op))

    def task_weights(self, mix: dict[str, float]) -> dict[Task, float]:
        return {StormUser.storm: 1.0}

    def storm_create(self, op: str) -> None:
        shape = self.ctx.plan.shape
        slot = int(time.time() // shape.storm_slot_s)
        index = self.rng.randrange(max(shape.storm_keys, 1))
        # same merchant, operation, key and body: a true retry, whatever the key's scope
        seed = f"{self.ctx.plan.run_id}|{self.app.merchant}|{op}|{slot}|{index}"
        key = hashlib.sha256(seed.encode()).hexdigest()[:32]
        rng = random.Random(key)
        number, amount = self.ctx.numbers.number(rng), self.ctx.amounts.amount(rng)
        self.create(op, key=key, number=number, amount=amount, storm=True)


class LifecycleUser(PaysuiteUser):
    """Lifecycle walker: create, make (or let) the customer answer, poll find until processed."""

    creators_only = True

    @task(1)
    def cashin_round(self) -> None:
        self.attempt("cashin", lambda: self.lifecycle_round("cashin"))

    @task(1)
    def cashout_round(self) -> None:
        self.attempt("cashout", lambda: self.lifecycle_round("cashout"))

    def task_weights(self, mix: dict[str, float]) -> dict[Task, float]:
        # a non-create weight in the mix goes to the create this application may send
        weights: dict[Task, float] = {}
        for op, weight in mix.items():
            chosen = getattr(LifecycleUser, f"{op if op in KINDS else self._creating_op()}_round")
            weights[chosen] = weights.get(chosen, 0.0) + weight
        return weights

    def lifecycle_round(self, op: str) -> None:
        customer = self.ctx.plan.target.customer
        driver = customer.driver if self.ctx.plan.lifecycle_mode == "driver" else None
        number = customer.confirm_number if driver == "magic-numbers" else None
        started = time.monotonic()
        ref = self.create(op, number=number)
        if ref is None:
            return
        if driver == "sandbox":
            self._confirm(ref)
        deadline = started + customer.timeout_s
        while time.monotonic() < deadline:
            data = self.lookup(ref)
            status = data.get("status") if data else None
            if status and status != "pending":
                LEDGER.record_time_to_processed(time.monotonic() - started, str(status))
                return
            time.sleep(LIFECYCLE_POLL_S)
        LEDGER.count("lifecycle_timeouts")

    def _confirm(self, ref: str) -> None:
        confirm = self.ctx.plan.target.customer.confirm
        assert confirm is not None
        headers = {"Accept": "application/json"}
        with self.http.request(
            confirm.method, confirm.url(ref), headers=headers, name="customer"
        ) as reply:
            # 409: the target resolved it by itself first; the customer's answer still came
            if reply.problem is None and (200 <= reply.status < 300 or reply.status == 409):
                reply.success()
            elif reply.problem is None:
                reply.failure(f"status {reply.status}")


#: the user classes a shape can name (``Shape.user_classes``)
USER_CLASSES: dict[str, type[PaysuiteUser]] = {
    cls.__name__: cls for cls in (MerchantUser, StormUser, LifecycleUser)
}
