"""Concurrent histories: a few threads send short sub-histories at once, and some order of the
requests must explain every answer (MODEL-007).

Each request is recorded as a linearizability ``Call``: the monotonic times around its exchange,
its thread, the model's request record and the answer as the model's judge takes it. Four
threads start each round on a barrier, so that their requests are in flight together:

1. creations at the same instant by one merchant for one customer, each with a fresh key (each
   must create its own transaction under its own ref), another application creating for the
   same customer, and the list of that customer read meanwhile (total and rows explainable);
   twice, for two customers, since whether a request lands inside a race's window is luck;
2. one fresh key sent at once in the header and in the query, another in the query by both
   kinds (one execution per key at most);
3. the customer's confirm racing the customer's cancel on one pending transaction (one terminal
   state, one processed event), with finds and a list of it meanwhile.

Then the model's settle window passes, the customer's answer is awaited, and a re-read (every
ref found, every customer's list walked) joins the history as calls that come after all, so a
lost or doubled effect shows. ``conformance.model.linearizability.check`` then searches for an
order; its bound reached is undecided (a note), never a failure.

Why the client sends its own retries after a 429: ``RecordingClient.request`` retries inside,
which hides when the attempt that counted left; a call's interval must start then (a 429 takes
no effect), or a request would look concurrent with what came before it.
"""

from __future__ import annotations

import concurrent.futures
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from conformance.history.driver import Driver, Step
from conformance.model.judge import judge_call, step_of
from conformance.model.linearizability import Call, Verdict, check
from conformance.model.records import CONCURRENT, Answer, Problem, Request
from conformance.model.state import State, World
from paysuite_core.driver.customer import DriverFailed
from paysuite_core.driver.http import RecordingClient, Reply, ThrottledOut
from paysuite_core.results.evidence import Evidence, Recorded
from paysuite_core.results.outcome import CouldNotCheck
from paysuite_core.throttle import THROTTLED, Throttle, retry_after_of

if TYPE_CHECKING:
    import httpx

    from paysuite_core.driver.target import Target
    from paysuite_core.target_config import Application

#: Threads per round (the barrier's parties).
THREADS = 4
#: The concurrent part's share of the phase's budget, and the least it takes when it runs.
SHARE = 0.25
MIN_S = 6.0
#: How long a thread waits for the others at a round's barrier before it goes alone.
BARRIER_S = 10.0
#: Lists of round 1 at most (it reads while the creations are in flight, then once more).
MAX_LISTS = 10
#: Configurations the checker may visit (a few rounds of four threads need far fewer).
MAX_CONFIGURATIONS = 200_000


def budget_share(budget_s: float) -> float:
    """Seconds of the phase's budget the concurrent part takes (after the sequential part)."""
    return min(budget_s, max(MIN_S, budget_s * SHARE))


def why_not(target: Target) -> str | None:
    """Why no concurrent history runs against this configuration (beside the phase's own)."""
    apps = target.apps()
    if len(apps) < 2:
        return (
            "one application configured: the concurrent histories race two applications' "
            "requests (a second merchant's creations, a reader beside a writer)"
        )
    if not any(app.can_cashin() or app.can_cashout() for app in apps):
        return "read-only credentials: a concurrent history needs an application that may create"
    return None


@dataclass
class ConcurrentResult:
    """The concurrent history, the checker's verdict, and the problem at its frontier."""

    not_applicable: str | None = None
    steps: list[Step] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    verdict: Verdict | None = None
    problem: Problem | None = None
    stopped: str | None = None
    duration_s: float = 0.0

    @property
    def failed(self) -> bool:
        return self.verdict is not None and not self.verdict.ok


class _Log:
    """The history as the threads record it: one ``Call`` and one ``Step`` per request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[Call] = []
        self.steps: list[Step] = []

    def add(
        self,
        thread: int,
        request: Request,
        answer: Answer,
        invoked: float,
        completed: float | None,
        exchanges: list[Recorded],
    ) -> None:
        with self._lock:
            index = len(self.calls) + 1
            self.calls.append(Call(index, thread, invoked, completed, request, answer))
            done = completed if completed is not None else invoked
            self.steps.append(Step(index, request, answer, invoked, done, exchanges, thread))


class PacedClient(RecordingClient):
    """A thread's client: the run's throttle honoured attempt by attempt, so that ``sent_at``
    is when the attempt that counted left. The throttle's last 429 is returned, not raised: the
    model takes it as no effect."""

    def __init__(
        self,
        target: Target,
        evidence: Evidence,
        throttle: Throttle | None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(
            target.base_url, lambda: evidence, target.limits, None, target.tls, transport
        )
        self.masker = target.masker
        self.pace = throttle
        self.sent_at = 0.0

    def request(self, method: str, path: str, **kwargs: Any) -> Reply:
        attempt = 0
        while True:
            if self.pace is not None:
                pause = self.pace.pause_s(self.check_deadline)
                if pause > 0:
                    time.sleep(pause)
            self.sent_at = time.monotonic()
            reply = super().request(method, path, **kwargs)
            if self.pace is None or reply.status != THROTTLED:
                return reply
            decision = self.pace.throttled(
                retry_after_of(reply.headers), attempt, deadline=self.check_deadline
            )
            if not decision.retry:
                return reply
            time.sleep(decision.wait_s)
            attempt += 1


class _NoAnswer(Exception):
    """A request of the thread got no answer: its sub-history ends there (it was recorded)."""


class Racer(Driver):
    """One thread of the concurrent history: the history driver's requests, each recorded as a
    call instead of judged as it comes (an order is judged at the end)."""

    def __init__(
        self, target: Target, world: World, log: _Log, thread: int, deadline: float
    ) -> None:
        self.evidence = Evidence(limit=100_000)
        self.paced = PacedClient(target, self.evidence, target.throttle)
        super().__init__(target, self.paced, world)
        self.log = log
        self.thread = thread
        self.deadline = deadline

    def enter(self) -> None:
        """In the thread that runs this racer: its budget, and its evidence for the customer's
        requests (sent through the target's own client, which records per thread)."""
        self.paced.check_deadline = self.deadline + 5.0
        self.target.current = self.evidence

    def share_tokens(self, owner: Driver) -> None:
        self.labels, self.pairs = owner.labels, owner.pairs

    def record(
        self, request: Request, answer: Answer, at: float, done: float, replies: list[Reply]
    ) -> None:
        # a walk's pages: the first left at ``at`` (a page after a 429 left later, unknown)
        invoked = max(at, self.paced.sent_at) if len(replies) == 1 else at
        self.log.add(self.thread, request, answer, invoked, done, [r.exchange for r in replies])

    def _send(self, request: Request, send: Callable[[], Reply]) -> Reply:
        before = len(self.evidence.exchanges)
        at = time.monotonic()
        try:
            reply = send()  # through self.paced, the driver's client
        except Exception:
            sent = self.evidence.exchanges[before:]
            if sent:  # it left and no answer came: it may have taken effect or not
                invoked = max(at, self.paced.sent_at)
                self.log.add(self.thread, request, Answer(None), invoked, None, sent[-1:])
            raise _NoAnswer from None
        self.record(request, Answer(reply.status, reply.body), at, time.monotonic(), [reply])
        return reply

    def act(self, ref: str, outcome: str) -> None:
        """The customer's answer through the configured driver, its exchange kept."""
        from conformance.model.records import Act
        from paysuite_core.driver.http import TargetUnreachable

        customer = self.target.customer
        assert customer is not None
        request = Act(ref, "confirm" if outcome == "confirm" else "cancel")
        before = len(self.evidence.exchanges)
        at = time.monotonic()
        completed: float | None = None
        try:
            customer.act(ref, request.outcome)
            answer = Answer(200)
        except DriverFailed:
            sent = self.evidence.exchanges[before:]
            answer = Answer(sent[-1].status if sent and sent[-1].status else 409)
        except ThrottledOut:
            answer = Answer(THROTTLED)
        except TargetUnreachable:
            answer = Answer(None)
        if answer.status is not None:
            completed = time.monotonic()
        self.acted.add(ref)
        self.log.add(self.thread, request, answer, at, completed, self.evidence.exchanges[before:])


# --- the rounds ---------------------------------------------------------------------------
Task = Callable[[Racer], None]


def _round(racers: list[Racer], tasks: list[Task]) -> None:
    """Each task in a thread of its own, all released together by one barrier."""
    start = threading.Barrier(len(tasks))

    def go(racer: Racer, task: Task) -> None:
        racer.enter()
        try:
            start.wait(BARRIER_S)
        except threading.BrokenBarrierError:
            pass  # a slow start: the others went; this one goes as soon as it can
        try:
            task(racer)
        except (_NoAnswer, CouldNotCheck):
            pass  # recorded (or never sent); this thread's sub-history ends here

    with concurrent.futures.ThreadPoolExecutor(len(tasks), "paysuite-history") as pool:
        futures = [pool.submit(go, r, t) for r, t in zip(racers, tasks, strict=False)]
    for future in futures:
        future.result()


@dataclass
class _Cast:
    """Who plays what: merchant A's applications by kind, its reader, and a second app."""

    writer: dict[str, Application]
    reader: Application
    other: Application

    def kinds(self) -> list[str]:
        return sorted(self.writer)


def _cast(target: Target, owner: Driver) -> _Cast:
    apps = target.apps()
    first = next(a for a in apps if a.can_cashin() or a.can_cashout())
    mine = [a for a in apps if a.merchant == first.merchant]
    writer: dict[str, Application] = {}
    for kind in ("CASHIN", "CASHOUT"):
        able = [a for a in mine if (a.can_cashin() if kind == "CASHIN" else a.can_cashout())]
        if able:
            writer[kind] = able[0]
    other = next((a for a in apps if a.merchant != first.merchant), None)
    if other is None:
        other = next(a for a in apps if a is not first)
    return _Cast(writer, owner.reader_of(first.merchant), other)


def _creations_at_once(cast: _Cast, number: str) -> list[Task]:
    """Round 1: one customer's creations at the same instant, a second application's for the
    same customer, and that customer's list read again and again until they are answered."""
    kinds = cast.kinds()
    one, two = kinds[0], kinds[-1]
    other = cast.other
    creating = threading.Semaphore(0)  # released once per answered creation thread

    def made(task: Task) -> Task:
        def run(racer: Racer) -> None:
            try:
                task(racer)
            finally:
                creating.release()

        return run

    def stranger(r: Racer) -> None:
        if other.can_cashin() or other.can_cashout():
            kind = "CASHIN" if other.can_cashin() else "CASHOUT"
            r.create(other, kind, number, _key(), "header")
        else:
            r.list_events(other, {"client": number})

    def lists(r: Racer) -> None:
        answered = 0
        for _ in range(MAX_LISTS):
            r.list_events(cast.reader, {"client": number})
            while answered < 3 and creating.acquire(blocking=False):
                answered += 1
            if answered == 3:
                break

    return [
        made(_create_then_find(cast.writer[one], one, number, _key(), "header")),
        made(_create_then_find(cast.writer[two], two, number, _key(), "query")),
        made(stranger),
        lists,
    ]


def _one_key_at_once(cast: _Cast, number: str) -> list[Task]:
    """Round 2: one fresh key sent at once in the header and in the query (one kind), and
    another in the query by both kinds: one execution per key at most."""
    both, other = _key(), _key()
    kinds = cast.kinds()
    last = kinds[-1]
    plan = [(last, both, "header"), (last, both, "query")]
    plan += [(kinds[0], other, "query"), (last, other, "query")]
    return [_create_then_find(cast.writer[k], k, number, key, ch) for k, key, ch in plan]


def _answers_at_once(cast: _Cast, ref: str) -> list[Task]:
    """Round 3: the customer's confirm racing the cancel, with finds and the list meanwhile."""

    def finds(r: Racer) -> None:
        for _ in range(2):
            r.find(cast.reader, ref)

    return [
        lambda r: r.act(ref, "confirm"),
        lambda r: r.act(ref, "cancel"),
        finds,
        lambda r: r.list_events(cast.reader, {"ref": ref}),
    ]


def _create_then_find(app: Application, kind: str, number: str, key: str, channel: str) -> Task:
    """A creation, then a find of the ref it answered by the same thread (while the others'
    requests may still be in flight)."""

    def task(racer: Racer) -> None:
        reply = racer.create(app, kind, number, key, channel)
        ref = reply.get("ref")
        if reply.ok and isinstance(ref, str):
            racer.find(racer.reader_of(app.merchant), ref)

    return task


def _key() -> str:
    return uuid.uuid4().hex


# --- the run ------------------------------------------------------------------------------
def run_concurrent(target: Target, world: World, deadline: float) -> ConcurrentResult:
    """The rounds, the settle wait and the re-read against ``target``, then the check."""
    result = ConcurrentResult()
    reason = why_not(target)
    if reason is not None:
        result.not_applicable = reason
        return result
    started = time.monotonic()
    numbers = [target.number() for _ in range(4)]  # drawn first: a pattern may take a while
    world = replace(world, own_numbers=frozenset(numbers))
    log = _Log()
    owner = Racer(target, world, log, 0, deadline)
    racers = [Racer(target, world, log, n, deadline) for n in range(1, THREADS + 1)]
    saved = target.current  # the running check's evidence: the owner records apart
    try:
        owner.enter()
        _play(target, world, owner, racers, numbers, deadline)
    except Exception as exc:  # the target stopped answering: undecided, said
        result.stopped = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
    finally:
        for racer in (owner, *racers):
            racer.paced.close()
        target.current = saved
    result.calls, result.steps = log.calls, log.steps
    if result.stopped is None and result.calls:
        result.verdict = check(
            [State()],
            result.calls,
            step_of(world),
            max_configurations=MAX_CONFIGURATIONS,
            deadline=max(deadline, time.monotonic() + 2.0),
        )
        if not result.verdict.ok:
            kept, result.verdict = shrink(world, result.calls, result.verdict)
            result.calls = kept
            result.steps = [s for s in result.steps if s.index in {c.index for c in kept}]
            result.problem = frontier_problem(world, result.calls, result.verdict)
    result.duration_s = round(time.monotonic() - started, 3)
    return result


#: How many re-checks a failing concurrent history's shrinking may take.
MAX_SHRINK_CHECKS = 200


def shrink(world: World, calls: list[Call], verdict: Verdict) -> tuple[list[Call], Verdict]:
    """The failing history with every call left out that it still fails without, the same
    requests still unexplained (no others): what a person must read to see the defect. As
    hypothesis shrinks a sequential history, but over recorded answers (nothing is sent again).
    A call left out that would make another unexplained (a creation a later find needs) stays."""
    parting = set(verdict.unexplained)
    kept = list(calls)
    checks = 0
    for call in sorted(calls, key=lambda c: -c.index):
        if call.index in parting or checks >= MAX_SHRINK_CHECKS:
            continue
        trial = [c for c in kept if c.index != call.index]
        checks += 1
        again = check([State()], trial, step_of(world), max_configurations=MAX_CONFIGURATIONS // 10)
        if not again.ok and not again.budget_exhausted and set(again.unexplained) <= parting:
            kept, verdict = trial, again
    return kept, verdict


def _play(
    target: Target,
    world: World,
    owner: Racer,
    racers: list[Racer],
    numbers: list[str],
    deadline: float,
) -> None:
    cast = _cast(target, owner)
    apps = {a.client_id: a for a in (cast.reader, cast.other, *cast.writer.values())}
    for racer in racers:
        racer.share_tokens(owner)  # the same dicts: a pair authorized anew reaches every thread
    _fresh_pairs(owner, apps.values())
    kind = cast.kinds()[0]
    pending = owner.create(cast.writer[kind], kind, numbers[2], _key(), "header")
    ref = pending.get("ref")
    for number in (numbers[0], numbers[3]):  # twice: a race's window is a matter of luck
        _round(racers, _creations_at_once(cast, number))
        _fresh_pairs(owner, apps.values())
    _round(racers, _one_key_at_once(cast, numbers[1]))
    if pending.ok and isinstance(ref, str):
        _fresh_pairs(owner, apps.values())
        _round(racers, _answers_at_once(cast, ref))
    _reread(target, world, owner, racers, cast.reader, numbers, deadline)


def _fresh_pairs(owner: Racer, apps: Iterable[Application]) -> None:
    """A pair authorized just now for each application, before each round and the re-read:
    a target may issue access tokens that live a second or two, and a round must not run
    into their expiry (the model would then excuse every refusal)."""
    for app in apps:
        owner.authorize(app)


def _reread(
    target: Target,
    world: World,
    owner: Racer,
    racers: list[Racer],
    reader: Application,
    numbers: list[str],
    deadline: float,
) -> None:
    """Once the settle window passed and the customer's answer was awaited: every ref found,
    every customer's list walked, by each merchant that made something (calls after all)."""
    time.sleep(max(0.0, min(world.settle_s + 0.1, deadline - time.monotonic())))
    refs = list(dict.fromkeys(ref for r in (owner, *racers) for ref in r.refs))
    acted = {ref for r in racers for ref in r.acted}
    wait = max(0.0, min(target.driver_timeout(), deadline - time.monotonic()))
    _fresh_pairs(owner, [reader])
    _await(owner, reader, acted, wait)
    merchants = sorted({a.merchant for a in target.apps() if a.client_id in owner.labels})
    _fresh_pairs(
        owner, {owner.reader_of(m).client_id: owner.reader_of(m) for m in merchants}.values()
    )
    for ref in refs:
        for merchant in merchants:
            owner.find(owner.reader_of(merchant), ref)
    for merchant in merchants:
        reader = owner.reader_of(merchant)
        for number in numbers:
            owner.walk(reader, {"client": number})
        for ref in acted:
            owner.walk(reader, {"ref": ref})


def _await(owner: Racer, reader: Application, refs: set[str], timeout_s: float) -> None:
    """Poll find (unrecorded) until each ref the customer answered reads a terminal status."""
    from paysuite_core.driver.api import find_path

    end = time.monotonic() + timeout_s
    token = owner.token_of(reader)[1]
    for ref in sorted(refs):
        while time.monotonic() < end:
            reply = owner.paced.request("GET", find_path(ref), token=token)
            if not reply.ok or reply.get("status") != "pending":
                break
            time.sleep(0.1)


def frontier_problem(world: World, calls: list[Call], verdict: Verdict) -> Problem:
    """What the model says of the unexplained calls after the explained prefix (the first
    problem, in the states that prefix can leave)."""
    by_index = {call.index: call for call in calls}
    states = {State()}
    for index in verdict.explained:
        call = by_index[index]
        after: set[State] = set()
        for state in states:
            after.update(step_of(world)(state, call))
        states = after or states
    for index in verdict.unexplained:
        call = by_index[index]
        for state in sorted(states, key=repr):
            judged = judge_call(world, state, call)
            if judged.problem is not None and not judged.problem.reference:
                return Problem(CONCURRENT, judged.problem.message, judged.problem.allowed)
    return Problem(CONCURRENT, verdict.summary(), "some order of the requests explains each answer")
