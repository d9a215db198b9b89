"""Reconciliation, "nothing lost": every acknowledged create is checked on the target after the run.

Each create the load saw acknowledged must be findable by its ref with the fields the client sent,
and its ``transaction:created`` event listed by ``?ref=``; across the ledger no idempotency key
produced two refs nor a ref two keys. The ledger only knows what clients were told, so a target
that answers 409 to a retry but executes it anyway would pass those checks: storm creates use a
customer number derived from their key, and the created events listed for it (``?client=``)
must name one transaction per key. Anything else is a loss and fails the run.

It runs in the Locust master after the load stops: a bounded pool of greenlets, each on its own
keep-alive connection (``load.connection``), within a time budget that holds whatever the target
does (at the deadline, or on a Ctrl-C, the checks under way are killed where they wait and the
rest reported unchecked: "nothing lost" cannot be claimed for what was not checked). A target
that answers nothing before any check succeeded is gone: the rest is unchecked at once.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from json import dumps
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from load.ledger import CreateRecord
from load.records import Reconciliation
from paysuite_core import bounded_http
from paysuite_core.bounded_http import LOAD_LIMITS, Limits, TotalTimeout
from paysuite_core.target_config import TargetConfig
from paysuite_core.throttle import Throttle, send_honouring
from paysuite_core.tls import TLSSettings
from paysuite_core.tokens import PlainAnswer, Request, Send, TokenFlow
from paysuite_core.url_paths import segment

if TYPE_CHECKING:  # gevent: not imported where reconcile is only read
    from gevent import Greenlet
    from gevent.queue import Queue

CREATED = "transaction:created"
SAMPLE_LIMIT = 20
PROGRESS_EVERY_S = 3.0
#: How long past its budget the reconciliation may take: the killed greenlets' unwinding (each
#: closes its connection) is waited for this long at most.
BUDGET_MARGIN_S = 0.5
#: Why records were not checked, or a step not done, after a Ctrl-C.
INTERRUPTED = "the reconciliation was interrupted (Ctrl-C)"
#: The error kinds (exception class names, kept as such in load.json's ``error_kinds``) in the
#: words a person reads in the verdict, with the option that bounds each.
ERROR_WORDS = {
    **bounded_http.ERROR_WORDS,
    "ThrottleExhausted": "the target kept answering 429 past the time left (--reconcile-timeout)",
}


def no_answer(exc: BaseException) -> bool:
    """The target gave no answer at all: no connection, or a request that timed out (the total
    timeout is ``TotalTimeout``, not an ``OSError``; a socket's own time-out is one)."""
    return isinstance(exc, (OSError, TotalTimeout))


class _Session:
    """A keep-alive connection to the target (``load.connection``, as the Locust users' own),
    each exchange bounded by ``Limits`` (total time, body size). A 429 is sent again after its
    Retry-After as the throttle allows; one it no longer retries raises ``ThrottleExhausted``
    (the record is an error). One per checking greenlet: ``checks`` holds the run's figures."""

    def __init__(self, checks: _Checks) -> None:
        # gevent: not imported where reconcile is only read
        from load.connection import Connection, origin_and_target

        self.checks = checks
        self.base_url = checks.config.base_url
        origin = origin_and_target(self.base_url)[0]
        self._connection = Connection(origin, checks.limits or LOAD_LIMITS, tls=checks.tls)

    def exchange(
        self, method: str, path: str, headers: dict[str, str], body: bytes | None = None
    ) -> PlainAnswer:
        """One exchange on ``path``, below the base URL."""
        import gevent

        from load.connection import origin_and_target

        _, target = origin_and_target(self.base_url + path)
        headers = {"Accept-Encoding": "identity", **headers}

        def once() -> tuple[int, bytes, str | None]:
            return self._connection.exchange(method, target, body, headers, header="retry-after")

        status, data, _ = send_honouring(
            self.checks.throttle,
            once,
            lambda answer: answer[0],
            lambda answer: {"Retry-After": answer[2]} if answer[2] is not None else None,
            sleep=gevent.sleep,
            deadline=self.checks.deadline,
        )
        return PlainAnswer(status, data)

    def get(self, path: str, headers: dict[str, str], **params: str | int) -> PlainAnswer:
        return self.exchange("GET", f"{path}?{urlencode(params)}" if params else path, headers)

    @contextmanager
    def send(self, request: Request) -> Iterator[PlainAnswer]:
        """The token flow's ``Send``: authorize and refresh on this connection."""
        headers = {k: v for k, v in request.headers.items() if v is not None}
        body = None if request.json is None else dumps(request.json).encode()
        yield self.exchange(request.method, request.path, headers, body)

    def close(self) -> None:
        self._connection.close()


class _Tokens:
    """One access token per merchant, shared by the checking greenlets (reads are open to every
    privilege, RC-12); authorize is slow on purpose on most targets, so it happens once.

    A token request that got no answer is not tried again by each greenlet that waited for it,
    one total timeout each (a frozen target made 16 greenlets queue for 32 s): its failure is
    theirs, and anyone's who asks before all of them have been told."""

    def __init__(self, config: TargetConfig) -> None:
        from gevent.lock import Semaphore

        self.config = config
        self.flows: dict[str, TokenFlow] = {}
        #: one lock per merchant: a merchant's token requests do not wait for another's
        self._locks: dict[str, Semaphore] = defaultdict(Semaphore)
        #: per merchant, the greenlets waiting for its lock
        self._waiting: dict[str, set[Greenlet]] = defaultdict(set)
        #: per merchant, a token request that got no answer and those still to be told
        self._unanswered: dict[str, tuple[BaseException, set[Greenlet]]] = {}

    @property
    def authorizes(self) -> int:
        """Authorize requests made for the reconciliation (reported in load.json)."""
        return sum(flow.authorizes for flow in self.flows.values())

    def header(self, session: _Session, merchant: str, stale: str | None = None) -> dict[str, str]:
        """The merchant's bearer header; ``stale``: the token just refused, to be renewed."""
        from gevent import getcurrent

        me = getcurrent()
        waiting = self._waiting[merchant]
        waiting.add(me)
        lock = self._locks[merchant]
        try:
            lock.acquire()
        finally:
            waiting.discard(me)
        try:
            self._share_unanswered(merchant, me)
            # authorize/refresh on the caller's own connection: another greenlet's may be busy
            # or broken (a failed connect would hold its pool slot until the total timeout)
            token = self._access(session.send, merchant, stale)
        finally:
            lock.release()
        return {"Authorization": f"Bearer {token}", "Accept": "application/json"}

    def _share_unanswered(self, merchant: str, me: Greenlet) -> None:
        """Raise the token request's failure while some who waited for it are yet to be told
        (gevent's lock is not fair: one that failed can take it again before they wake)."""
        unanswered = self._unanswered.get(merchant)
        if unanswered is None:
            return
        failure, to_tell = unanswered
        told = me in to_tell
        to_tell.discard(me)
        to_tell.difference_update([g for g in to_tell if g.dead])  # killed at the deadline
        if not to_tell:
            del self._unanswered[merchant]
            if not told:
                return
        raise failure

    def _access(self, send: Send, merchant: str, stale: str | None) -> str:
        flow = self.flows.get(merchant)
        if flow is None:
            apps = [a for a in self.config.applications if a.merchant == merchant]
            apps = apps or list(self.config.applications)
            app = sorted(apps, key=lambda a: a.privilege != "read")[0]
            flow = TokenFlow(send, app, fallback_ttl_s=self.config.access_token_ttl_s)
            self.flows[merchant] = flow
        flow.send = send
        try:
            if flow.pair is not None and flow.pair.access == stale:
                flow.renew()
            return flow.access()
        except Exception as exc:
            if no_answer(exc) and self._waiting[merchant]:
                self._unanswered[merchant] = (exc, set(self._waiting[merchant]))
            raise


def _same_amount(a: object, b: object) -> bool:
    try:
        return abs(float(a) - float(b)) < 1e-6  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def check_one(
    session: _Session,
    tokens: _Tokens,
    record: CreateRecord,
    listed_events: dict[str, set[str]] | None = None,
) -> str:
    """``ok``, ``missing``, ``mismatch:<fields>``, ``no_created_event``, ``error:<why>``.

    ``listed_events``: filled with ref -> the event_ids the list shows, for the webhooks."""
    merchant = record.get("merchant", "")
    ref = record["ref"]
    headers = tokens.header(session, merchant)
    find = f"/transactions/find/{segment(ref)}"  # the target's ref: one segment
    found = session.get(find, headers)
    if found.status == 401:  # the token expired during a long reconciliation
        headers = tokens.header(session, merchant, stale=headers["Authorization"][7:])
        found = session.get(find, headers)
    if found.status == 404:
        return "missing"
    if not 200 <= found.status < 300:
        return f"error:find status {found.status}"
    data = found.json()
    differs = {
        "ref": data.get("ref") not in (None, ref),
        "kind": data.get("kind") != record["kind"],
        "amount": not _same_amount(data.get("amount"), record["amount"]),
        "client": "client" in data and data.get("client") != record["number"],
    }
    wrong = [name for name, differ in differs.items() if differ]
    if wrong:
        return "mismatch:" + ",".join(wrong)
    events = session.get("/events/transactions", headers, ref=ref, limit=100)
    if not 200 <= events.status < 300:
        return f"error:events status {events.status}"
    listed = events.json().get("transactions") or []
    if listed_events is not None:
        listed_events[ref] = {
            str(e["event_id"]) for e in listed
            if (e.get("data") or {}).get("ref") == ref and isinstance(e.get("event_id"), str)
        }  # fmt: skip
    for event in listed:
        if event.get("event_kind") == CREATED and (event.get("data") or {}).get("ref") == ref:
            return "ok"
    return "no_created_event"


def storm_targets(records: Iterable[CreateRecord]) -> dict[tuple[str, str], set[str]]:
    """(merchant, customer number) -> the storm keys retried with that number.

    Usually one key a number; two keys can draw the same number (a short ``numbers`` list), and
    then the target rightly holds one transaction for each.
    """
    targets: dict[tuple[str, str], set[str]] = defaultdict(set)
    for record in records:
        if record.get("storm"):
            targets[(record.get("merchant", ""), record["number"])].add(record["key"])
    return dict(targets)


def transactions_for_number(
    session: _Session, tokens: _Tokens, merchant: str, number: str
) -> set[str]:
    """Refs of the transactions the target created for a customer number (created events).

    Filters by ``client`` only, the document's own filter, and reads the event kind from each
    record, so no reference-only filter is needed.
    """
    headers = tokens.header(session, merchant)
    listed = session.get("/events/transactions", headers, client=number, limit=100)
    if not 200 <= listed.status < 300:
        raise RuntimeError(f"HTTP {listed.status}")
    return {
        str((event.get("data") or {}).get("ref"))
        for event in listed.json().get("transactions") or []
        if event.get("event_kind") == CREATED
    }


def server_duplicates(
    session: _Session, tokens: _Tokens, targets: dict[tuple[str, str], set[str]]
) -> Reconciliation:
    """Storm numbers for which the target holds more transactions than keys were retried."""
    duplicates: list[dict[str, str | list[str]]] = []
    for (merchant, number), keys in targets.items():
        refs = transactions_for_number(session, tokens, merchant, number)
        if len(refs) > len(keys):
            duplicates.append({"merchant": merchant, "number": number, "keys": sorted(keys),
                               "refs": sorted(refs)})  # fmt: skip
    return {
        "storm_keys_checked": sum(len(keys) for keys in targets.values()),
        "server_duplicate_keys": len(duplicates),
        "server_duplicate_samples": duplicates[:SAMPLE_LIMIT],
    }


def ledger_anomalies(
    records: Iterable[CreateRecord],
) -> tuple[list[CreateRecord], Reconciliation]:
    """Unique records by ref, and the idempotency anomalies visible in the ledger itself."""
    refs_by_key: dict[tuple[str, str], set[str]] = defaultdict(set)
    keys_by_ref: dict[str, set[str]] = defaultdict(set)
    unique: dict[str, CreateRecord] = {}
    for record in records:
        refs_by_key[(record.get("merchant", ""), record["key"])].add(record["ref"])
        keys_by_ref[record["ref"]].add(record["key"])
        unique.setdefault(record["ref"], record)
    duplicate_keys = {k: sorted(v) for k, v in refs_by_key.items() if len(v) > 1}
    reused_refs = {r: sorted(v) for r, v in keys_by_ref.items() if len(v) > 1}
    return list(unique.values()), {
        "keys": len(refs_by_key),
        "duplicate_keys": len(duplicate_keys),
        "duplicate_key_samples": [
            {"merchant": m, "key": k, "refs": refs}
            for (m, k), refs in list(duplicate_keys.items())[:SAMPLE_LIMIT]
        ],
        "reused_refs": len(reused_refs),
        "reused_ref_samples": [
            {"ref": r, "keys": keys} for r, keys in list(reused_refs.items())[:SAMPLE_LIMIT]
        ],
    }


@dataclass
class _Checks:
    """The checking greenlets' shared tally (gevent: no locks, nothing yields while counting)."""

    config: TargetConfig
    limits: Limits | None
    throttle: Throttle
    deadline: float
    tokens: _Tokens
    queue: Queue
    listed_events: dict[str, set[str]] | None
    #: checks that got no answer before any succeeded: at ``gone_after`` the target is gone
    gone_after: int
    unreachable: int = 0
    done: int = 0
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    error_kinds: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    samples: list[dict[str, str]] = field(default_factory=list)
    #: the run's TLS settings (``LoadPlan.tls``), as the users had them
    tls: TLSSettings | None = None

    def worker(self) -> None:
        import gevent.queue

        session = _Session(self)
        try:
            while time.monotonic() < self.deadline and self.unreachable < self.gone_after:
                try:
                    record = self.queue.get_nowait()
                except gevent.queue.Empty:
                    return
                try:
                    outcome = check_one(session, self.tokens, record, self.listed_events)
                except Exception as exc:  # any failure to check is reported
                    outcome = f"error:{type(exc).__name__}"
                    # a failed connection is not reused (its pool slot would wait for the
                    # total timeout): a fresh one for the next check
                    session.close()
                    session = _Session(self)
                    if no_answer(exc) and not self.outcomes.get("ok"):
                        self.unreachable += 1
                self.count(record, outcome)
        finally:
            session.close()

    def count(self, record: CreateRecord, outcome: str) -> None:
        # nothing yields here: a kill at the deadline (raised where a greenlet waits) leaves a
        # record either counted or unchecked, never both
        kind = outcome.split(":", 1)[0]
        self.outcomes[kind] += 1
        if kind == "error":
            self.error_kinds[outcome.split(":", 1)[1]] += 1
        self.done += 1
        if kind != "ok" and len(self.samples) < SAMPLE_LIMIT:
            self.samples.append({"ref": record["ref"], "key": record["key"], "outcome": outcome})

    def run(self, workers: int, total: int, progress: Callable[[str], None]) -> bool:
        """Check until done, the deadline or the target gone; True when a Ctrl-C stopped it."""
        import gevent

        greenlets = [gevent.spawn(self.worker) for _ in range(workers)]
        last = time.monotonic()
        try:
            while not all(g.dead for g in greenlets):
                now = time.monotonic()
                if now >= self.deadline or self.unreachable >= self.gone_after:
                    # the checks under way would each wait up to the total timeout: stopped
                    # where they wait (``finally`` closes the connection), records unchecked
                    gevent.killall(greenlets, block=True, timeout=BUDGET_MARGIN_S)
                    return False
                gevent.sleep(min(0.2, self.deadline - now))
                if time.monotonic() - last >= PROGRESS_EVERY_S:
                    last = time.monotonic()
                    progress(f"paysuite: reconciled {self.done}/{total}")
        except KeyboardInterrupt:
            # stopped as at the deadline, and the verdict still given (the caller writes the
            # reports); a second Ctrl-C during the killall propagates
            gevent.killall(greenlets, block=True, timeout=BUDGET_MARGIN_S)
            return True
        return False

    def count_storm(
        self,
        storm: dict[tuple[str, str], set[str]],
        target_gone: bool,
        interrupted: bool,
        progress: Callable[[str], None],
    ) -> Reconciliation:
        """``server_duplicates`` within what is left of the budget; not tried on a target gone
        nor after a Ctrl-C, and a Ctrl-C during the count ends it."""
        import gevent

        def uncounted(why: str) -> Reconciliation:
            # an uncountable storm fails like an unchecked create
            return {"storm_keys_checked": 0, "server_duplicate_keys": 0, "storm_check_error": why}

        if interrupted:
            return uncounted(INTERRUPTED)
        if target_gone:
            return uncounted("the target stopped answering")
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            return uncounted("the --reconcile-timeout budget ran out")
        progress(f"paysuite: counting the target's transactions for {len(storm)} storm keys")
        session = _Session(self)
        budget = gevent.Timeout(remaining)
        budget.start()
        try:
            return server_duplicates(session, self.tokens, storm)
        except gevent.Timeout as exc:
            if exc is not budget:
                raise
            return uncounted("the --reconcile-timeout budget ran out")
        except KeyboardInterrupt:
            return uncounted(INTERRUPTED)
        except Exception as exc:  # reported, and fails the run
            return uncounted(f"{type(exc).__name__}: {exc}")
        finally:
            budget.cancel()
            session.close()


def reconcile(
    records: list[CreateRecord],
    config: TargetConfig,
    *,
    concurrency: int = 16,
    time_budget_s: float = 120.0,
    progress: Callable[[str], None] = print,
    limits: Limits | None = None,
    webhook_journal: Path | None = None,
    max_throttle_wait_s: float | None = None,
    tls: TLSSettings | None = None,
    without_ref: int = 0,
) -> Reconciliation:
    """Check every acknowledged create on the target; returns the counts for load.json.

    ``webhook_journal``: the run's receiver journal (``load.webhook_journal``): then every event
    listed for an acknowledged create must also have been delivered by webhook.
    ``max_throttle_wait_s``: how long, in all, it may wait for a target that answers 429
    (default: its whole ``time_budget_s``, which bounds it anyway). ``tls``: the run's TLS
    settings (``LoadPlan.tls``; default: verification against the environment's or default CAs).
    ``without_ref``: creates the users saw acknowledged without a ref (they fail it too)."""
    import gevent.queue

    started = time.monotonic()
    unique, anomalies = ledger_anomalies(records)
    queue: gevent.queue.Queue = gevent.queue.Queue(items=unique)
    deadline = started + time_budget_s
    tokens = _Tokens(config)
    # a 429 is waited for within the budget, by every checking greenlet at the asked pace
    throttle = Throttle(time_budget_s if max_throttle_wait_s is None else max_throttle_wait_s)
    workers = max(1, min(concurrency, len(unique)))
    checks = _Checks(
        config, limits, throttle, deadline, tokens, queue,
        {} if webhook_journal is not None else None, gone_after=workers, tls=tls,
    )  # fmt: skip
    if unique:
        progress(f"paysuite: reconciling {len(unique)} acknowledged creates on {config.base_url}")
    interrupted = checks.run(workers, len(unique), progress)
    done = checks.done
    unchecked = len(unique) - done
    target_gone = not interrupted and checks.unreachable >= workers and unchecked > 0
    if unchecked:
        why = (
            INTERRUPTED
            if interrupted
            else "the target stopped answering"
            if target_gone
            else "the time budget ran out"
        )
        progress(f"paysuite: reconciled {done}/{len(unique)}; {unchecked} unchecked ({why})")
    storm = storm_targets(records)
    server_side: Reconciliation = {}
    if storm:
        server_side = checks.count_storm(storm, target_gone, interrupted, progress)
    # ``interrupted``: the checks were; a Ctrl-C in a later step is said by that step's error
    stopped = interrupted or server_side.get("storm_check_error") == INTERRUPTED
    outcomes = checks.outcomes
    result: Reconciliation = {
        "acknowledged": len(records),
        "unique_refs": len(unique),
        "checked": done,
        "found": outcomes.get("ok", 0),
        "missing": outcomes.get("missing", 0),
        "missing_created_event": outcomes.get("no_created_event", 0),
        "mismatched": outcomes.get("mismatch", 0),
        "errors": outcomes.get("error", 0),
        "error_kinds": dict(sorted(checks.error_kinds.items(), key=lambda kv: -kv[1])),
        "unchecked": unchecked,
        "target_gone": target_gone,
        "interrupted": interrupted,
        **anomalies,
        **server_side,
        "samples": checks.samples,
        "elapsed_s": round(time.monotonic() - started, 2),
        "authorizes": tokens.authorizes,
        "throttling": throttle.stats().to_dict(),
    }
    if throttle.stats().throttled:
        progress(f"paysuite: reconciliation: {throttle.stats().text()}")
    if checks.listed_events is not None and webhook_journal is not None:
        result.update(_webhooks(checks.listed_events, webhook_journal, deadline, progress, stopped))
    result["lost"] = result["missing"] + result["missing_created_event"]
    result["acknowledged_without_ref"] = without_ref
    result["reasons"] = failure_reasons(result)
    result["passed"] = not result["reasons"]
    # "found nothing lost" over zero creates would read as a finding; it is an absence of one
    result["nothing_to_check"] = not records and not result["reasons"]
    return result


def _webhooks(
    listed_events: dict[str, set[str]],
    journal: Path,
    deadline: float,
    progress: Callable[[str], None],
    interrupted: bool,
) -> Reconciliation:
    """``reconcile_webhooks`` for the events listed; after a Ctrl-C neither waited for nor
    judged (a delivery still on its way would read as undelivered): said, and a failure."""
    from load.webhook_journal import reconcile_webhooks

    if not interrupted:
        remaining = max(5.0, deadline - time.monotonic())
        try:
            return reconcile_webhooks(
                listed_events, journal, time_budget_s=remaining, progress=progress
            )
        except KeyboardInterrupt:
            pass
    return {"webhook_check_error": INTERRUPTED}


def _gone_why(result: Reconciliation) -> str:
    """How the target stopped answering, from the kinds of the checks' errors."""
    kinds = result.get("error_kinds") or {}
    timed_out = any(
        kind in kinds
        for kind in ("TotalTimeout", "ReadTimeout", "ConnectTimeout", "TimeoutError", "timeout")
    )
    return "no answer in time" if timed_out else "no connection"


def failure_reasons(result: Reconciliation) -> list[str]:
    """Why a reconciliation fails, one phrase per cause with its count (empty: it passes).

    The three kinds: lost (not findable, or without its created event), mismatched or
    duplicated (the target holds something else than what was acknowledged), and could not be
    checked (errors while checking, or the time budget ran out)."""
    reasons = []
    lost = result.get("lost", 0)
    if lost:
        parts = []
        if result.get("missing"):
            parts.append(f"{result['missing']} not findable by ref")
        if result.get("missing_created_event"):
            parts.append(f"{result['missing_created_event']} without a transaction:created event")
        reasons.append(f"{lost} lost ({', '.join(parts)})" if parts else f"{lost} lost")
    if result.get("mismatched"):
        reasons.append(f"{result['mismatched']} mismatched (the target holds other fields)")
    if result.get("webhook_undelivered"):
        why = "; ".join(result.get("webhook_rejected_reasons") or []) or "never arrived"
        reasons.append(
            f"{result['webhook_undelivered']} of {result['webhook_events']} listed events of "
            f"acknowledged creates not delivered by webhook ({why})"
        )
    if result.get("duplicate_keys"):
        reasons.append(f"{result['duplicate_keys']} idempotency keys acknowledged with two refs")
    if result.get("reused_refs"):
        reasons.append(f"{result['reused_refs']} refs handed out for two keys")
    if result.get("server_duplicate_keys"):
        reasons.append(f"{result['server_duplicate_keys']} storm keys executed twice on the target")
    if result.get("errors"):
        kinds = result.get("error_kinds") or {}
        top = ", ".join(f"{n} {ERROR_WORDS.get(why, why)}" for why, n in list(kinds.items())[:3])
        reasons.append(f"{result['errors']} could not be checked (" + (top or "errors") + ")")
    if result.get("unchecked"):
        why = (
            INTERRUPTED
            if result.get("interrupted")
            else f"the target stopped answering: {_gone_why(result)}"
            if result.get("target_gone")
            else "the --reconcile-timeout budget ran out"
        )
        reasons.append(f"{result['unchecked']} could not be checked ({why})")
    if result.get("storm_check_error"):
        reasons.append(f"storm keys could not be counted ({result['storm_check_error']})")
    if result.get("webhook_check_error"):
        reasons.append(f"webhook deliveries were not checked ({result['webhook_check_error']})")
    if result.get("acknowledged_without_ref"):
        reasons.append(
            f"{result['acknowledged_without_ref']} creates acknowledged without a ref "
            "(cannot be checked)"
        )
    return reasons
