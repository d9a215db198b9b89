"""hypothesis's stateful testing as the history's author: each rule one request of the document
(or the customer's answer, or a wait), each history ended by a full re-read.

The machine draws only choices (which application, which of the history's refs, numbers and
keys, which spelling); values come from the suite's own sources (fresh customer numbers and
amounts valid for the target, uuid keys), so histories of two runs never collide on a shared
target. hypothesis shrinks a failing history to the fewest steps that still fail.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule

from conformance.history.driver import Driver, Violation
from conformance.model.records import Spelling
from paysuite_core.driver.http import CheckBudgetExceeded
from paysuite_core.tokens import REFRESH_PATHS

if TYPE_CHECKING:
    from conformance.history.session import Session
    from paysuite_core.target_config import Application

INDEX = st.integers(min_value=0, max_value=7)
KEYS = st.sampled_from(["none", "fresh", "reuse", "reuse", "long"])
WAITS_S = (0.3, 1.0, 3.2)
WAITS = st.sampled_from(WAITS_S)
WAIT_PER_HISTORY_S = 3.5


def _pick(items: list[str], index: int) -> str | None:
    return items[index % len(items)] if items else None


def _may(app: Application, kind: str) -> bool:
    return app.can_cashin() if kind == "CASHIN" else app.can_cashout()


def _other(kind: str) -> str:
    return "CASHOUT" if kind == "CASHIN" else "CASHIN"


class HistoryMachine(RuleBasedStateMachine):
    """One history. ``session`` holds the run: its budget, its target and what failed."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.driver: Driver | None = session.new_driver()

    # --- the run's guard --------------------------------------------------------------------
    def _go(self, action: Callable[[Driver], object]) -> None:
        driver = self.driver
        if driver is None or not self.session.may_continue():
            return
        try:
            action(driver)
        except Violation as violation:
            self.session.failed(violation)
            raise
        except CheckBudgetExceeded:
            # the phase's client has the phase's budget (and a grace) for its deadline: a
            # throttled wait past it is the budget's end, not a target that stopped answering
            self.session.deadline = min(self.session.deadline, time.monotonic())
            self.driver = None
        except Exception as exc:  # a run-level stop, reported by the session
            self.session.stop(exc)
            self.driver = None

    def _app(self, driver: Driver, index: int) -> Application:
        apps = list(driver.apps.values())
        return apps[index % len(apps)]

    def _reader(self, driver: Driver, ref: str) -> Application:
        txn = driver.state.txn(ref)
        return driver.reader_of(txn.merchant if txn is not None else None)

    # --- rules ----------------------------------------------------------------------------
    @rule(
        kind=st.sampled_from(["CASHIN", "CASHOUT"]),
        app=INDEX,
        key=KEYS,
        key_index=INDEX,
        channel=st.sampled_from(["header", "query"]),
        again=st.booleans(),
        number_index=INDEX,
        fractional=st.booleans(),
    )
    def create(
        self,
        kind: str,
        app: int,
        key: str,
        key_index: int,
        channel: str,
        again: bool,
        number_index: int,
        fractional: bool,
    ) -> None:
        def go(driver: Driver) -> None:
            chooser = self._app(driver, app)
            number = _pick(driver.numbers, number_index) if again else None
            if number is None:
                number = driver.target.number()
                driver.numbers.append(number)
            chosen: str | None = None
            if key == "fresh" or (key == "reuse" and not driver.keys):
                chosen = uuid.uuid4().hex
            elif key == "reuse":
                # a key that executed for this application's merchant first (the reuse the
                # rule is about); another merchant's, or a refused creation's, only when the
                # merchant has none: drawn from every key, most reuses were no reuse at all
                own = [
                    k for k in driver.keys if driver.state.key_use(chooser.merchant, k) == "used"
                ]
                chosen = _pick(own or driver.keys, key_index)
            elif key == "long":
                chosen = uuid.uuid4().hex + "x"
            fraction = 0.25 if fractional else 0.0  # booleans: hypothesis draws both often
            driver.create(chooser, kind, number, chosen, channel, fraction=fraction)

        self._go(go)

    @rule(
        kinds=st.tuples(
            st.sampled_from(["CASHIN", "CASHOUT"]), st.sampled_from(["CASHIN", "CASHOUT"])
        ),
        apps=st.tuples(INDEX, INDEX),
        channels=st.tuples(
            st.sampled_from(["header", "query"]), st.sampled_from(["header", "query"])
        ),
        later=st.sampled_from([0.0, 0.0, max(WAITS_S)]),
    )
    def create_then_reuse_its_key(
        self,
        kinds: tuple[str, str],
        apps: tuple[int, int],
        channels: tuple[str, str],
        later: float,
    ) -> None:
        """A creation that executes, then its key again from an application of the same merchant
        (either kind, either channel), at once or a few seconds later (a key is remembered, not
        cached for a while): the reuse the key rule is about, drawn at once. Left to
        ``create``'s own draws, a reuse by the right merchant of a key that executed is a rare
        coincidence of a few independent choices, and one seconds later rarer still."""

        def go(driver: Driver) -> None:
            creators = [a for a in driver.apps.values() if a.can_cashin() or a.can_cashout()]
            first = creators[apps[0] % len(creators)]
            kind = kinds[0] if _may(first, kinds[0]) else _other(kinds[0])
            peers = [a for a in driver.apps.values() if a.merchant == first.merchant]
            key = uuid.uuid4().hex
            second = peers[apps[1] % len(peers)]
            for app, sent, channel, then in (
                (first, kind, channels[0], later),
                (second, kinds[1], channels[1], 0.0),
            ):
                number = driver.target.number()
                driver.numbers.append(number)
                driver.create(app, sent, number, key, channel)
                if then and driver.waited + then <= WAIT_PER_HISTORY_S:
                    driver.waited += then
                    self.session.sleep(then)

        self._go(go)

    @rule(kind=st.sampled_from(["CASHIN", "CASHOUT"]), app=INDEX)
    def create_with_a_trailing_slash(self, kind: str, app: int) -> None:
        def go(driver: Driver) -> None:
            number = driver.target.number()
            driver.numbers.append(number)
            driver.create(self._app(driver, app), kind, number, uuid.uuid4().hex, "header", "slash")

        self._go(go)

    @rule(
        ref=INDEX, app=INDEX, spelling=st.sampled_from(["canonical", "canonical", "upper", "slash"])
    )
    def find(self, ref: int, app: int, spelling: Spelling) -> None:
        def go(driver: Driver) -> None:
            chosen = _pick(driver.refs, ref) or driver.unknown_ref()
            driver.find(self._app(driver, app), chosen, spelling)

        self._go(go)

    @rule(
        app=INDEX,
        by=st.sampled_from(["client", "ref", "client+kind", "client+status", "client+kind+status"]),
        index=INDEX,
        paged=st.booleans(),
        spelling=st.sampled_from(["canonical", "canonical", "other"]),
    )
    def list_events(self, app: int, by: str, index: int, paged: bool, spelling: str) -> None:
        def go(driver: Driver) -> None:
            chooser = self._app(driver, app)
            filters: dict[str, str] = {}
            sent: dict[str, str] = {}
            spelled: Spelling = "canonical"
            if by == "ref":
                ref = _pick(driver.refs, index)
                if ref is None:
                    return
                filters["ref"] = ref
                if spelling == "other":
                    spelled, sent = "upper", {"ref": ref.upper()}
            else:
                number = _pick(driver.numbers, index)
                if number is None:
                    return
                filters["client"] = number
                if spelling == "other":
                    spelled, sent = "country-code", {"client": "25" + number}
            if by in ("client+kind", "client+kind+status"):
                filters["kind"] = "CASHIN" if index % 2 else "CASHOUT"
            if by in ("client+status", "client+kind+status"):  # two filters: each one counts
                words = sorted({t.word for t in driver.state.txns if t.word} | {"pending"})
                filters["status"] = words[index % len(words)]
            if sent:
                sent = {**filters, **sent}
            driver.list_events(
                chooser, filters, limit=2 if paged else None, spelling=spelled, sent=sent or None
            )

        self._go(go)

    @rule(
        ref=INDEX,
        spelling=st.sampled_from(["canonical", "upper", "slash"]),
        listed=st.sampled_from(["ref", "client"]),
        spelled=st.booleans(),
    )
    def another_merchant_reads(
        self, ref: int, spelling: Spelling, listed: str, spelled: bool
    ) -> None:
        """An application of another merchant finds one of the history's transactions and lists
        its ref or customer number, as the document writes them or spelled otherwise: each
        merchant sees only its own, whatever the spelling. Left to ``find``'s and
        ``list_events``' own draws, the other merchant meets the ref in the other spelling by a
        coincidence of three choices (most configured applications are one merchant's)."""

        def go(driver: Driver) -> None:
            chosen = _pick(driver.refs, ref)
            txn = driver.state.txn(chosen) if chosen is not None else None
            strangers = [a for a in driver.apps.values() if txn and a.merchant != txn.merchant]
            if chosen is None or txn is None or not strangers:
                return
            reader = sorted(strangers, key=lambda a: a.privilege not in ("read-write", "read"))[0]
            driver.find(reader, chosen, spelling)
            if listed == "ref":
                filters, other = {"ref": chosen}, {"ref": chosen.upper()}
                how: Spelling = "upper"
            else:
                filters, other = {"client": txn.number}, {"client": "25" + txn.number}
                how = "country-code"
            if spelled:
                driver.list_events(reader, filters, spelling=how, sent={**filters, **other})
            else:
                driver.list_events(reader, filters)

        self._go(go)

    @rule(ref=INDEX, outcome=st.sampled_from(["confirm", "cancel"]))
    def customer_answers(self, ref: int, outcome: str) -> None:
        def go(driver: Driver) -> None:
            chosen = _pick(driver.refs, ref)
            if chosen is not None:
                driver.act(chosen, outcome)

        self._go(go)

    @rule(
        ref=INDEX,
        first=st.sampled_from(["confirm", "cancel"]),
        second=st.sampled_from(["confirm", "cancel"]),
    )
    def customer_answers_a_settled_transaction(self, ref: int, first: str, second: str) -> None:
        """The customer answers, the transaction settles (read by find), the customer answers
        again: a processed transaction never changes."""

        def go(driver: Driver) -> None:
            chosen = _pick(driver.refs, ref)
            txn = driver.state.txn(chosen) if chosen is not None else None
            if chosen is None or txn is None or not txn.pending:
                return
            driver.act(chosen, first)
            driver.await_customers(min(self.session.customer_wait_s(), 3.0), only=chosen)
            # once the driver's whole time-out passed, pending is no answer any more
            driver.find(
                driver.reader_of(txn.merchant), chosen, expect_processed=chosen in driver.acted_due
            )
            driver.act(chosen, second)
            driver.find(driver.reader_of(txn.merchant), chosen)

        self._go(go)

    @rule(app=INDEX, path=st.sampled_from(REFRESH_PATHS))
    def refresh(self, app: int, path: str) -> None:
        self._go(lambda driver: driver.refresh(self._app(driver, app), path))

    @rule(seconds=WAITS)
    def wait(self, seconds: float) -> None:
        """Time passes (a remembered key, a settled status, a pending time-out): at most
        ``WAIT_PER_HISTORY_S`` in one history, so the budget buys histories, not sleep."""

        def go(driver: Driver) -> None:
            if driver.waited + seconds <= WAIT_PER_HISTORY_S:
                driver.waited += seconds
                self.session.sleep(seconds)

        self._go(go)

    @rule(app=INDEX)
    def an_expired_token(self, app: int) -> None:
        """A short-lived pair used after its lifetime (only when the target issues one that
        expires within a few seconds)."""

        def go(driver: Driver) -> None:
            ttl = self.session.short_ttl_s
            if ttl is None or not driver.refs or self.session.expiry_tried:
                return
            self.session.expiry_tried = True
            chosen = self._app(driver, app)
            label = driver.authorize(chosen, ttl)
            self.session.sleep(ttl + 2 * driver.world.skew_s + 0.2)
            driver.find_with(chosen, driver.refs[0], label)

        self._go(go)

    def teardown(self) -> None:
        """The full re-read: every ref found, every list walked, once late events had time."""

        def go(driver: Driver) -> None:
            if not driver.steps:
                return
            self.session.sleep(driver.world.settle_s + 0.1)
            driver.await_customers(self.session.customer_wait_s())
            for ref in list(driver.refs):
                driver.find(
                    self._reader(driver, ref), ref, expect_processed=ref in driver.acted_due
                )
            for merchant in sorted({t.merchant for t in driver.state.txns}):
                reader = driver.reader_of(merchant)
                for i, number in enumerate(list(driver.numbers)):
                    driver.walk(reader, {"client": number})
                    # and its events of each status it reached, then its pending ones of one
                    # kind: by now most of its transactions settled (the customer, a time-out),
                    # so each filter has events to leave out (and an event keeps its identity
                    # whatever else is listed with it), and two filters at once must both count
                    words = {t.word for t in driver.state.txns if t.number == number and t.word}
                    for word in sorted(words | {"pending"}):
                        driver.walk(reader, {"client": number, "status": word})
                    pending = {"client": number, "status": "pending"}
                    driver.walk(reader, {**pending, "kind": ("CASHIN", "CASHOUT")[i % 2]})
                # and each transaction's own events: an event is one event under every filter
                for txn in [t for t in driver.state.txns if t.merchant == merchant]:
                    driver.walk(reader, {"ref": txn.ref})
            self.session.finished(driver)

        self._go(go)
        if self.driver is not None:
            self.session.release(self.driver)
