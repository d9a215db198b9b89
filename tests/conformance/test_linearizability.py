"""The linearizability checker on toy models: a compare-and-set register and a bank account.

Known histories (hand-made ones and Knossos' classic register histories) pin the verdicts, the
witness order and the frontier a failure names; hypothesis compares the checker with a brute
force over every order on small random histories, and checks that histories produced by running
the model itself (sequential or overlapping) are always explained. Nothing here asserts time.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.model.linearizability import Call, Step, Verdict, check

# --- toy models -------------------------------------------------------------------------------


def register(state: int | None, call: Call) -> list[int | None]:
    """A compare-and-set register: ("write", v) -> "ok", ("read", _) -> value,
    ("cas", (old, new)) -> True when it swapped, False when the value was not ``old``."""
    op, arg = call.request
    if call.completed is None:  # no answer: what the request does if it took effect
        if op == "write":
            return [arg]
        if op == "cas":
            return [arg[1] if state == arg[0] else state]
        return [state]
    if op == "write":
        return [arg] if call.answer == "ok" else []
    if op == "read":
        return [state] if call.answer == state else []
    if op == "cas":
        old, new = arg
        if call.answer is True:
            return [new] if state == old else []
        return [state] if state != old else []
    raise AssertionError(op)


def bank(state: int, call: Call) -> list[int]:
    """An account: ("deposit", n) -> "ok", ("withdraw", n) -> True/False (refused when short),
    ("balance", _) -> the balance, ("add", n) -> the balance after adding (fetch-and-add)."""
    op, amount = call.request
    if call.completed is None:
        if op in ("deposit", "add"):
            return [state + amount]
        if op == "withdraw":
            return [state - amount] if state >= amount else [state]
        return [state]
    if op == "deposit":
        return [state + amount]
    if op == "add":
        return [state + amount] if call.answer == state + amount else []
    if op == "withdraw":
        if call.answer is True:
            return [state - amount] if state >= amount else []
        return [state] if state < amount else []
    if op == "balance":
        return [state] if call.answer == state else []
    raise AssertionError(op)


def c(
    index: int, thread: int, invoked: float, completed: float | None, request: Any, answer: Any
) -> Call:
    return Call(index, thread, invoked, completed, request, answer)


def from_events(events: Sequence[tuple[int, str, str, Any]]) -> list[Call]:
    """Calls from a Knossos-style list of (process, invoke|ok|info|fail, f, value) events.

    Times are positions in the list; a call is numbered in the order it was invoked. A ``fail``
    did not take place and is dropped (as Knossos does); an ``info`` or a missing completion is
    a call without an answer. A read's answer is the ok's value, a cas's answer is True.
    """
    open_calls: dict[int, tuple[int, float, str, Any]] = {}
    calls: list[Call] = []
    number = 0
    for time, (process, kind, f, value) in enumerate(events):
        if kind == "invoke":
            open_calls[process] = (number, float(time), f, value)
            number += 1
            continue
        index, invoked, f, invoke_value = open_calls.pop(process)
        if kind == "fail":
            continue
        request = (f, value if f != "read" else None)
        if kind == "info":
            calls.append(c(index, process, invoked, None, request, None))
        else:
            answer = {"read": value, "write": "ok", "cas": True}[f]
            calls.append(c(index, process, invoked, float(time), request, answer))
    for process, (index, invoked, f, value) in open_calls.items():
        calls.append(c(index, process, invoked, None, (f, value), None))
    return sorted(calls, key=lambda call: call.index)


def replay(
    step: Step[Any], initial: Iterable[Any], calls: Sequence[Call], order: Sequence[int]
) -> set[Any]:
    """The states the model can be in after ``order`` (call indexes), from ``initial``."""
    by_index = {call.index: call for call in calls}
    states = set(initial)
    for index in order:
        states = {after for state in states for after in step(state, by_index[index])}
    return states


def respects_real_time(calls: Sequence[Call], order: Sequence[int]) -> bool:
    by_index = {call.index: call for call in calls}
    for earlier_pos, earlier in enumerate(order):
        for later in order[earlier_pos + 1 :]:
            done = by_index[later].completed
            if done is not None and done < by_index[earlier].invoked:
                return False
    # an answered call left out of the order precedes nothing: it must not be left out at all
    return all(call.index in order for call in calls if call.completed is not None)


def assert_witness(step: Step[Any], initial: list[Any], calls: list[Call], v: Verdict) -> None:
    """An ok verdict's order places every answered call, respects real time and replays."""
    assert v.ok and not v.budget_exhausted and v.order is not None
    assert len(set(v.order)) == len(v.order)
    assert respects_real_time(calls, v.order)
    assert replay(step, initial, calls, v.order)


def assert_frontier(step: Step[Any], initial: list[Any], calls: list[Call], v: Verdict) -> None:
    """A failure's prefix replays, and every frontier call is refused in every state after it."""
    assert not v.ok and v.order is None and not v.budget_exhausted
    assert v.unexplained
    states = replay(step, initial, calls, v.explained)
    assert states
    by_index = {call.index: call for call in calls}
    for index in v.unexplained:
        assert by_index[index].completed is not None
        assert index not in v.explained
        assert all(not list(step(state, by_index[index])) for state in states)


def brute_force(step: Step[Any], initial: list[Any], calls: list[Call]) -> bool:
    """Every subset of the unanswered calls, every order of the rest: the checker's oracle."""
    answered = [call for call in calls if call.completed is not None]
    pending = [call for call in calls if call.completed is None]
    for size in range(len(pending) + 1):
        for chosen in itertools.combinations(pending, size):
            for order in itertools.permutations(answered + list(chosen)):
                indexes = [call.index for call in order]
                if respects_real_time(calls, indexes) and replay(step, initial, calls, indexes):
                    return True
    return False


# --- registers: hand-made histories ---------------------------------------------------------


def test_an_empty_history_and_a_sequential_one_are_explained() -> None:
    assert check([0], [], register) == Verdict(True, (), searched=1)
    calls = [
        c(0, 0, 0, 1, ("write", 1), "ok"),
        c(1, 0, 2, 3, ("read", None), 1),
        c(2, 0, 4, 5, ("cas", (1, 2)), True),
        c(3, 0, 6, 7, ("cas", (1, 3)), False),
        c(4, 0, 8, 9, ("read", None), 2),
    ]
    verdict = check([0], calls, register)
    assert verdict.ok and verdict.order == (0, 1, 2, 3, 4)


def test_reading_the_wrong_initial_value_fails_at_once() -> None:
    calls = [c(0, 0, 0, 1, ("read", None), 1)]
    verdict = check([0], calls, register)
    assert (verdict.ok, verdict.explained, verdict.unexplained) == (False, (), (0,))
    assert verdict.summary() == "no order explains 0 from the initial state"


def test_a_read_of_a_value_never_written_after_a_write() -> None:
    """Knossos' preserves-indices test: write 1 then read 2."""
    calls = [c(5, 0, 0, 1, ("write", 1), "ok"), c(99, 0, 2, 3, ("read", None), 2)]
    verdict = check([0], calls, register)
    assert (verdict.explained, verdict.unexplained) == ((5,), (99,))
    assert verdict.summary() == "after 5 no order explains 99"


def test_concurrent_reads_may_see_a_write_before_it_completed() -> None:
    calls = [
        c(0, 0, 0, 10, ("write", 1), "ok"),
        c(1, 1, 1, 2, ("read", None), 0),
        c(2, 2, 3, 4, ("read", None), 1),
        c(3, 1, 5, 6, ("read", None), 1),
    ]
    verdict = check([0], calls, register)
    assert_witness(register, [0], calls, verdict)
    assert verdict.order == (1, 0, 2, 3)


def test_a_read_may_not_go_back_to_the_old_value_once_another_saw_the_new() -> None:
    """New then old, both during the write: no order has the write between them twice."""
    calls = [
        c(0, 0, 0, 10, ("write", 1), "ok"),
        c(1, 1, 1, 2, ("read", None), 1),
        c(2, 2, 3, 4, ("read", None), 0),
    ]
    verdict = check([0], calls, register)
    assert_frontier(register, [0], calls, verdict)
    assert (verdict.explained, verdict.unexplained) == ((0, 1), (2,))


def test_real_time_order_a_read_done_before_a_write_was_sent_cannot_see_it() -> None:
    early = [c(0, 0, 0, 1, ("read", None), 1), c(1, 1, 2, 3, ("write", 1), "ok")]
    verdict = check([0], early, register)
    assert not verdict.ok and verdict.unexplained == (0,)
    # the same read overlapping the write, or merely touching it, is explained
    overlapping = [c(0, 0, 0, 2.5, ("read", None), 1), c(1, 1, 2, 3, ("write", 1), "ok")]
    touching = [c(0, 0, 0, 2, ("read", None), 1), c(1, 1, 2, 3, ("write", 1), "ok")]
    assert check([0], overlapping, register).order == (1, 0)
    assert check([0], touching, register).order == (1, 0)


def test_a_cas_race_only_one_of_two_swaps_from_the_same_value_wins() -> None:
    one_wins = [
        c(0, 0, 0, 2, ("cas", (0, 1)), True),
        c(1, 1, 0.5, 2, ("cas", (0, 2)), False),
        c(2, 0, 3, 4, ("read", None), 1),
    ]
    assert check([0], one_wins, register).order == (0, 1, 2)
    both_win = [
        c(0, 0, 0, 2, ("cas", (0, 1)), True),
        c(1, 1, 0.5, 2, ("cas", (0, 2)), True),
    ]
    verdict = check([0], both_win, register)
    assert_frontier(register, [0], both_win, verdict)
    assert verdict.summary() in ("after 0 no order explains 1", "after 1 no order explains 0")


# --- Knossos' classic register histories ----------------------------------------------------


def test_knossos_readme_a_crashed_write_explains_a_read_of_its_value() -> None:
    calls = from_events(
        [(0, "invoke", "read", None), (1, "invoke", "write", 3), (1, "info", "write", 3)]
        + [(0, "ok", "read", 3)]
    )
    verdict = check([None], calls, register)
    assert verdict.ok and verdict.order == (1, 0)


def test_knossos_crash_test_a_lone_crashed_write() -> None:
    calls = from_events([(0, "invoke", "write", 1), (0, "info", "write", 1)])
    verdict = check([0], calls, register)
    assert verdict.ok and verdict.order == ()
    assert verdict.summary().startswith("explained with no call placed")


def test_knossos_rethink_fail_minimal() -> None:
    """A read of 3, a value no one wrote, concurrent with a write of 4 (RethinkDB's failure)."""
    calls = from_events(
        [
            (0, "invoke", "write", 0),
            (0, "ok", "write", 0),
            (1, "invoke", "read", None),
            (2, "invoke", "write", 4),
            (1, "ok", "read", 3),
            (2, "ok", "write", 4),
            (3, "invoke", "read", None),
            (3, "ok", "read", 4),
        ]
    )
    verdict = check([None], calls, register)
    assert_frontier(register, [None], calls, verdict)
    # calls: 0 write 0, 1 read 3 (process 1), 2 write 4, 3 read 4 (waits for the read of 3)
    assert (verdict.explained, verdict.unexplained) == ((0, 2), (1,))
    assert verdict.summary() == "after 0, 2 no order explains 1"


def test_knossos_immediate_failure_a_failed_write_is_not_seen() -> None:
    calls = from_events(
        [(1, "invoke", "read", None), (101, "invoke", "write", 3), (101, "fail", "write", 3)]
        + [(1, "ok", "read", 3)]
    )
    verdict = check([0], calls, register)
    assert (verdict.ok, verdict.explained, verdict.unexplained) == (False, (), (0,))


BAD_ANALYSIS = [
    (4, "invoke", "write", 2),
    (4, "ok", "write", 2),
    (6, "invoke", "read", None),  # never answered
    (1, "invoke", "write", 4),
    (1, "ok", "write", 4),
    (14, "invoke", "read", None),
    (14, "ok", "read", 4),
    (9, "invoke", "write", 0),
    (9, "ok", "write", 0),
    (19, "invoke", "read", None),
    (20, "invoke", "write", 1),  # never answered
    (19, "ok", "read", 0),
    (22, "invoke", "read", None),
    (21, "invoke", "read", None),
    (21, "ok", "read", 2),
    (22, "ok", "read", 3),
]


def test_knossos_bad_analysis_two_spurious_reads_after_a_pending_write() -> None:
    """Knossos' bad-analysis history: the value is 0 (or 1 if the crashed write landed), and
    two concurrent reads answer 3 and 2: both are the frontier after everything else."""
    calls = from_events(BAD_ANALYSIS)
    verdict = check([0], calls, register)
    assert_frontier(register, [0], calls, verdict)
    assert verdict.unexplained == (7, 8)  # process 22's read of 3, process 21's read of 2
    assert {0, 2, 3, 4, 5} <= set(verdict.explained)  # every answered call before them
    # the same history without the two spurious reads is explained
    fine = [call for call in calls if call.index not in (7, 8)]
    assert_witness(register, [0], fine, check([0], fine, register))


# --- a bank account: lost, doubled and maybe-happened effects -------------------------------


def test_a_lost_update_two_concurrent_fetch_and_adds_both_answer_one() -> None:
    calls = [c(0, 0, 0, 2, ("add", 1), 1), c(1, 1, 1, 3, ("add", 1), 1)]
    verdict = check([0], calls, bank)
    assert_frontier(bank, [0], calls, verdict)
    assert (verdict.explained, verdict.unexplained) == ((0,), (1,))
    assert check([0], [calls[0], c(1, 1, 1, 3, ("add", 1), 2)], bank).order == (0, 1)


def test_a_lost_deposit_two_concurrent_deposits_and_a_balance_of_one() -> None:
    calls = [
        c(0, 0, 0, 2, ("deposit", 10), "ok"),
        c(1, 1, 1, 3, ("deposit", 10), "ok"),
        c(2, 0, 4, 5, ("balance", None), 10),
    ]
    verdict = check([0], calls, bank)
    assert_frontier(bank, [0], calls, verdict)
    assert verdict.unexplained == (2,) and set(verdict.explained) == {0, 1}


def test_a_doubled_effect_one_deposit_counted_twice() -> None:
    calls = [c(0, 0, 0, 1, ("deposit", 10), "ok"), c(1, 1, 2, 3, ("balance", None), 20)]
    verdict = check([0], calls, bank)
    assert (verdict.ok, verdict.explained, verdict.unexplained) == (False, (0,), (1,))


def test_an_overdraft_two_concurrent_withdrawals_of_the_whole_balance() -> None:
    both = [c(0, 0, 0, 2, ("withdraw", 10), True), c(1, 1, 1, 3, ("withdraw", 10), True)]
    assert not check([10], both, bank).ok
    one = [c(0, 0, 0, 2, ("withdraw", 10), True), c(1, 1, 1, 3, ("withdraw", 10), False)]
    assert check([10], one, bank).order == (0, 1)


@pytest.mark.parametrize(("balance", "order"), [(0, (1,)), (10, (0, 1))])
def test_a_timed_out_deposit_may_or_may_not_have_happened(
    balance: int, order: tuple[int, ...]
) -> None:
    calls = [c(0, 0, 0, None, ("deposit", 10), None), c(1, 1, 5, 6, ("balance", None), balance)]
    verdict = check([0], calls, bank)
    assert verdict.ok and verdict.order == order


def test_a_timed_out_deposit_cannot_have_happened_twice() -> None:
    calls = [c(0, 0, 0, None, ("deposit", 10), None), c(1, 1, 5, 6, ("balance", None), 20)]
    verdict = check([0], calls, bank)
    assert not verdict.ok and verdict.unexplained == (1,)  # the time-out is never "unexplained"


def test_a_timed_out_call_may_land_after_its_thread_moved_on() -> None:
    """The thread gave up on its deposit and read twice: the deposit landed between the reads."""
    calls = [
        c(0, 0, 0, None, ("deposit", 10), None),
        c(1, 0, 5, 6, ("balance", None), 0),
        c(2, 0, 7, 8, ("balance", None), 10),
    ]
    assert check([0], calls, bank).order == (1, 0, 2)
    # but it lands once: a third read back at 0 has no order
    back = [*calls, c(3, 0, 9, 10, ("balance", None), 0)]
    verdict = check([0], back, bank)
    assert (verdict.explained, verdict.unexplained) == ((1, 0, 2), (3,))


# --- models with choices --------------------------------------------------------------------


def rounding(state: int, call: Call) -> Iterable[int]:
    """("put", n) may store n rounded down or up to a multiple of 10 (the 'document' leaves the
    choice open); ("get", _) answers the stored value. Returns a set on purpose."""
    op, arg = call.request
    if op == "put":
        return {arg // 10 * 10, -(-arg // 10) * 10}
    return {state} if call.answer == state else set()


@pytest.mark.parametrize("stored", [10, 20])
def test_every_state_a_step_allows_is_tried(stored: int) -> None:
    calls = [c(0, 0, 0, 1, ("put", 15), "ok"), c(1, 0, 2, 3, ("get", None), stored)]
    assert check([0], calls, rounding).order == (0, 1)
    wrong = [calls[0], c(1, 0, 2, 3, ("get", None), 15)]
    assert not check([0], wrong, rounding).ok


def gate(state: tuple[bool, int], call: Call) -> list[tuple[bool, int]]:
    """(open, entrants): an unanswered ("enter", _) counts one more entrant, and only while the
    gate is open; ("close", _) -> "ok" closes it; ("count", _) answers the entrants."""
    is_open, entrants = state
    op = call.request[0]
    if op == "enter":
        return [(True, entrants + 1)] if is_open else []
    if op == "close":
        return [(False, entrants)]
    return [state] if call.answer == entrants else []


def test_the_prefix_a_failure_names_is_the_one_that_explains_the_most_answers() -> None:
    """Four unanswered entries placed first make the longest order (5 calls, 1 answer), but the
    prefix worth reporting is the one that explains both answers (close, count 0)."""
    calls = [c(i, i, 0, None, ("enter", None), None) for i in range(4)]
    calls += [
        c(4, 4, 0.5, 1, ("close", None), "ok"),
        c(5, 4, 2, 3, ("count", None), 0),
        c(6, 4, 4, 5, ("count", None), 9),
    ]
    verdict = check([(True, 0)], calls, gate)
    assert_frontier(gate, [(True, 0)], calls, verdict)
    assert (verdict.explained, verdict.unexplained) == ((4, 5), (6,))


def test_every_initial_state_is_tried() -> None:
    calls = [c(0, 0, 0, 1, ("read", None), 5)]
    assert check([0, None, 5], calls, register).ok
    assert not check([0, None], calls, register).ok


def test_the_same_input_gives_the_same_verdict() -> None:
    calls = [c(i, i, 0, 10, ("put", 15 + i), "ok") for i in range(4)]
    calls.append(c(4, 0, 11, 12, ("get", None), 20))
    first = check([0], calls, rounding)
    assert first.ok and first.order is not None and first.order[-1] == 4
    assert all(check([0], list(reversed(calls)), rounding) == first for _ in range(3))


# --- bounds, memo and input errors ----------------------------------------------------------


def concurrent_reads(count: int, last_answer: int) -> list[Call]:
    """``count`` reads of 0 all at once, then a read answering ``last_answer``."""
    calls = [c(i, i, 0, 10, ("read", None), 0) for i in range(count)]
    return [*calls, c(count, 0, 11, 12, ("read", None), last_answer)]


def test_configurations_are_memoized_not_orders() -> None:
    """12 concurrent reads have 12! orders but 2**12 sets of placed reads: a failing search
    visits each set once (one state each) instead of every order."""
    verdict = check([0], concurrent_reads(12, 1), register)
    assert not verdict.ok and verdict.unexplained == (12,)
    assert verdict.explained == tuple(range(12))
    assert verdict.searched == 2**12


def test_a_tiny_budget_is_undecided_never_a_failure() -> None:
    failing = concurrent_reads(12, 1)
    verdict = check([0], failing, register, max_configurations=50)
    assert verdict == Verdict(True, None, searched=50, budget_exhausted=True)
    assert verdict.summary() == "could not decide: the search stopped after 50 configurations"
    # a deadline already past stops it too
    late = check([0], failing, register, deadline=0.0)
    assert late.ok and late.budget_exhausted and late.order is None


def test_a_large_history_within_budget_and_beyond() -> None:
    """Six threads of writes and reads overlapping in waves of six: explained with the default
    bound, undecided with a tiny one."""
    calls = []
    for wave in range(8):
        for thread in range(6):
            index = wave * 6 + thread
            start, end = wave * 10 + thread, wave * 10 + 9
            if thread == 0:
                calls.append(c(index, thread, start, end, ("write", wave), "ok"))
            else:
                calls.append(c(index, thread, start, end, ("read", None), wave))
    assert_witness(register, [None], calls, check([None], calls, register))
    bounded = check([None], calls, register, max_configurations=5)
    assert (bounded.ok, bounded.budget_exhausted, bounded.searched) == (True, True, 5)


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ([c(0, 0, 0, 1, ("read", None), 0)] * 2, "two calls have the index 0"),
        ([c(0, 0, 2, 1, ("read", None), 0)], "completed 1 is not at or after invoked 2"),
        ([c(0, 0, float("nan"), 1, ("read", None), 0)], "invoked is nan"),
    ],
)
def test_malformed_calls_are_refused(calls: list[Call], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check([0], calls, register)


def test_no_initial_state_or_no_budget_is_refused() -> None:
    with pytest.raises(ValueError, match="no initial state"):
        check([], [], register)
    with pytest.raises(ValueError, match="at least 1"):
        check([0], [], register, max_configurations=0)


def test_summary_of_a_witness_and_of_a_frontier_of_two() -> None:
    assert Verdict(True, (1, 3, 2)).summary() == "explained by the order 1, 3, 2"
    failure = Verdict(False, None, explained=(1, 3, 2), unexplained=(4, 5))
    assert failure.summary() == "after 1, 3, 2 no order explains 4 and 5"


# --- properties -----------------------------------------------------------------------------

OPERATIONS = st.one_of(
    st.tuples(st.just("write"), st.integers(0, 2)),
    st.tuples(st.just("read"), st.none()),
    st.tuples(st.just("cas"), st.tuples(st.integers(0, 2), st.integers(0, 2))),
)


def run_register(requests: Sequence[Any], state: int) -> tuple[list[Any], int]:
    """The answers a correct register gives to ``requests`` in this order, and its end state."""
    answers: list[Any] = []
    for op, arg in requests:
        if op == "write":
            answers.append("ok")
            state = arg
        elif op == "read":
            answers.append(state)
        else:
            answers.append(state == arg[0])
            state = arg[1] if state == arg[0] else state
    return answers, state


@st.composite
def overlapping_histories(draw: st.DrawFn, max_calls: int = 7) -> list[Call]:
    """Calls with random overlapping intervals whose answers a correct register gave: each call
    took effect at a point inside its interval (an unanswered one, maybe never)."""
    count = draw(st.integers(1, max_calls))
    requests = draw(st.lists(OPERATIONS, min_size=count, max_size=count))
    starts = draw(st.lists(st.integers(0, 20), min_size=count, max_size=count))
    lengths = draw(st.lists(st.integers(0, 10), min_size=count, max_size=count))
    # the point of effect: a fraction of the interval; ties broken by the call's number
    fractions = draw(st.lists(st.integers(0, 4), min_size=count, max_size=count))
    unanswered = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    landed = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    points = [starts[i] + lengths[i] * fractions[i] / 4 for i in range(count)]
    effective = [i for i in range(count) if not (unanswered[i] and not landed[i])]
    effective.sort(key=lambda i: (points[i], i))
    answers, _ = run_register([requests[i] for i in effective], 0)
    answer_of = dict(zip(effective, answers, strict=True))
    calls = []
    for i in range(count):
        if unanswered[i]:
            calls.append(c(i, i, starts[i], None, requests[i], None))
        else:
            calls.append(c(i, i, starts[i], starts[i] + lengths[i], requests[i], answer_of[i]))
    return calls


@settings(max_examples=150, deadline=None)
@given(requests=st.lists(OPERATIONS, max_size=25), initial=st.integers(0, 2))
def test_sequential_histories_run_on_the_model_are_explained(
    requests: list[Any], initial: int
) -> None:
    answers, _ = run_register(requests, initial)
    calls = [
        c(i, i % 3, 2 * i, 2 * i + 1, request, answer)
        for i, (request, answer) in enumerate(zip(requests, answers, strict=True))
    ]
    verdict = check([initial], calls, register)
    assert verdict.ok and verdict.order == tuple(range(len(calls)))


@settings(max_examples=150, deadline=None)
@given(calls=overlapping_histories(max_calls=12))
def test_overlapping_histories_run_on_the_model_are_explained(calls: list[Call]) -> None:
    assert_witness(register, [0], calls, check([0], calls, register))


@settings(max_examples=200, deadline=None)
@given(calls=overlapping_histories(), data=st.data())
def test_shuffled_answers_are_caught_exactly_when_no_order_explains(
    calls: list[Call], data: st.DataObject
) -> None:
    """The register's answers dealt to the wrong calls: the checker agrees with a brute force
    over every order, and its witness or its frontier is a true one."""
    answered = [i for i, call in enumerate(calls) if call.completed is not None]
    dealt = data.draw(st.permutations([calls[i].answer for i in answered]))
    shuffled = list(calls)
    for position, answer in zip(answered, dealt, strict=True):
        call = calls[position]
        shuffled[position] = c(
            call.index, call.thread, call.invoked, call.completed, call.request, answer
        )
    verdict = check([0], shuffled, register)
    assert verdict.ok == brute_force(register, [0], shuffled)
    if verdict.ok:
        assert_witness(register, [0], shuffled, verdict)
    else:
        assert_frontier(register, [0], shuffled, verdict)
