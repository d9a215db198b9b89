"""The pytest plugin of the conformance suite (entry point ``paysuite_conformance``).

It collects the section modules of ``conformance/suite`` (their names do not look like tests)
and each function carrying a catalog entry as an item named ``"AUTH-001 title"`` and marked
``conformance_check(ID)``, runs them in the catalog's order, and turns their outcomes into the
progress lines, the scorecard, the reports and the exit status.

The entry point loads it in every pytest run of the environment, the project's self-tests
included, so it stays inert unless the run collects conformance checks. ``paysuite conform``
prepares the target before pytest starts and hands it over as a ``PreparedRun``; under plain
pytest the plugin reads its options (``conformance.options.FLAGS``) and prepares the target
after collection, through the same ``conformance.preflight.prepare``.

The check fixtures: ``target`` (when applications are configured), ``bare_target`` (with or
without them) and ``run_cache`` (the property run, computed once). A check that raises
``paysuite_core.results.outcome.NotApplicable`` is skipped with its reason.
"""

from __future__ import annotations

import concurrent.futures
import inspect
import threading
import time
from collections.abc import Generator, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import pytest

from conformance.checks import entry_of
from paysuite_core.driver.api import CASHIN, CASHOUT
from paysuite_core.results.evidence import (
    Evidence,
    Recorded,
    Reproduction,
    reproduction,
)
from paysuite_core.results.masking import Masker
from paysuite_core.results.outcome import (
    CheckFailed,
    CouldNotCheck,
    EngineError,
    NotApplicable,
    engine_error,
)
from paysuite_core.results.rule import Check
from paysuite_core.results.verdict import CheckResult

if TYPE_CHECKING:
    from conformance.checks import Plan
    from conformance.options import Options
    from conformance.preflight import Prepared
    from paysuite_core.driver.target import Target
    from paysuite_core.results.verdict import Verdict

MARKER = "conformance_check"
NO_APPLICATIONS = "no applications configured: pass --config with the target's applications"


@dataclass(eq=False)  # a plugin object: pluggy keeps it in sets
class PreparedRun:
    """A run whose options were parsed and whose target was prepared before pytest started.

    ``conformance.runner.run`` passes one to ``pytest.main(..., plugins=[...])``; the plugin
    then neither reads its own options nor prepares the target again. The caller keeps the
    ownership of ``prepared`` (it stops the bundled stub).
    """

    options: Options
    prepared: Prepared
    #: What the run decided, for the caller (``paysuite demo``): its verdict, counts by severity.
    verdict: Verdict | None = None
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class Ran:
    """A check run ahead of pytest's own protocol (``--concurrency``): what it raised in its
    set-up and in its body, its evidence, notes and time, which pytest then reports."""

    setup_error: BaseException | None = None
    call_error: BaseException | None = None
    evidence: Evidence = field(default_factory=Evidence)
    notes: list[str] = field(default_factory=list)
    duration_s: float = 0.0


@dataclass
class RunState:
    """Everything the plugin keeps for one session (on ``config.stash``, never module-global)."""

    options: Options
    #: The session's config: the threads that run checks ahead print through it.
    config: pytest.Config | None = None
    active: bool = False
    prepared: Prepared | None = None
    handed: PreparedRun | None = None
    #: Whether this plugin prepared the target itself (plain pytest) and so must close it.
    owns_prepared: bool = False
    target: Target | None = None
    results: dict[str, CheckResult] = field(default_factory=dict)
    #: Exceptions inside paysuite during a check or the property run: errors of the run.
    engine_errors: list[EngineError] = field(default_factory=list)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    selected: list[str] = field(default_factory=list)
    started_at: str = ""
    t0: float = 0.0
    setup_error: str | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    done: int = 0
    #: Problems of the run rather than of one check (the target stopped answering, ...).
    run_errors: list[str] = field(default_factory=list)
    #: Set once the target has stopped answering: the remaining checks are not attempted.
    unreachable: str | None = None
    #: The checks run ahead, concurrently, by check ID (``_run_ahead``).
    ran: dict[str, Ran] = field(default_factory=dict)
    #: How many checks are run ahead (the denominator of ``-v``'s lines as they end).
    ahead: int = 0
    #: A check run ahead met a target that stopped answering: the rest are not attempted.
    stopped_answering: str | None = None
    #: Ctrl-C came while checks ran ahead: pytest stops at the first check without a result.
    interrupted: bool = False

    def __post_init__(self) -> None:
        from conformance.suite.history import BUDGET_KEY

        # The MODEL checks read the phase's budget where they read its result: the run cache.
        self.cache.setdefault(BUDGET_KEY, self.options.history_budget_s)

    lock: threading.Lock = field(default_factory=threading.Lock)


STATE = pytest.StashKey[RunState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    from conformance.options import FLAGS

    group = parser.getgroup("paysuite-conformance", "paysuite conformance suite")
    for flag in FLAGS:
        if not flag.cli_only:
            flag.add_to(group.addoption, pytest_prefix="conformance_")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(id): the catalog entry a check implements")
    handed = _prepared_run(config)
    if handed is not None:
        config.stash[STATE] = RunState(
            handed.options, config, prepared=handed.prepared, handed=handed
        )
        return
    from conformance.options import Options, SetupError

    try:
        options = Options.from_pytest(config)
    except SetupError as exc:
        if _wants_conformance(config):
            pytest.exit(str(exc), returncode=2)
        options = Options()
    config.stash[STATE] = RunState(options, config)


def _prepared_run(config: pytest.Config) -> PreparedRun | None:
    """The ``PreparedRun`` that ``conformance.runner`` registered, if this is its session."""
    for plugin in config.pluginmanager.get_plugins():
        if isinstance(plugin, PreparedRun):
            return plugin
    return None


def _wants_conformance(config: pytest.Config) -> bool:
    return any(
        config.getoption(name, None)
        for name in ("conformance_target", "conformance_config", "conformance_only")
    )


def _out_of_profile(check_id: str, options: Options) -> bool:
    """A reference check in a run of the seed profile: skipped, and out of the coverage."""
    from conformance import catalog

    return catalog.get(check_id).profile == "reference" and options.profile != "reference"


def _check_id(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker(MARKER)
    return str(marker.args[0]) if marker else None


# --- collection ----------------------------------------------------------------------------


def _is_section_module(path: Path) -> bool:
    """A module of ``conformance/suite`` (a checkout's or the installed one)."""
    return (
        path.suffix == ".py"
        and not path.name.startswith("_")
        and path.parent.name == "suite"
        and path.parent.parent.name == "conformance"
        and (path.parent / "__init__.py").is_file()
        and (path.parent.parent / "catalog.py").is_file()
    )


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    """The section modules, whose names do not match ``python_files``, as modules."""
    if not _is_section_module(file_path) or parent.session.isinitpath(file_path):
        return None  # a section module named on the command line pytest collects itself
    return pytest.Module.from_parent(parent, path=file_path)


def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> pytest.Function | None:
    """A check function (it carries a catalog entry) as a test item named by its check ID."""
    entry = entry_of(obj)
    if entry is None or not isinstance(collector, pytest.Module):
        return None
    if getattr(obj, "__module__", None) != collector.obj.__name__:
        return None  # imported from elsewhere: collected where it is defined
    # The name is the node id's last part: "AUTH-001 authorize_returns_the_token_pair".
    item = pytest.Function.from_parent(collector, name=f"{entry.id} {name}", callobj=obj)
    item.add_marker(getattr(pytest.mark, MARKER)(entry.id))
    # What pytest's own --junitxml writes for each case under plain pytest.
    item.user_properties += [("paysuite.check_id", entry.id), ("paysuite.level", entry.level)]
    return item


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A check that does not apply to the target (``NotApplicable``) is skipped, with why."""
    try:
        return (yield)
    except NotApplicable as exc:
        # The check's own traceback, so that pytest shows where it stepped aside.
        raise _not_applicable_skip(str(exc)).with_traceback(exc.__traceback__) from None


def _not_applicable_skip(reason: str) -> BaseException:
    """pytest's skip, marked as "the configuration cannot meet this check's needs"."""
    skip = pytest.skip.Exception(reason)
    skip.paysuite_not_applicable = True  # type: ignore[attr-defined]
    return skip


def _is_not_applicable(call: pytest.CallInfo[None]) -> bool:
    value = call.excinfo.value if call.excinfo is not None else None
    return bool(getattr(value, "paysuite_not_applicable", False))


# --- fixtures of the checks ------------------------------------------------------------------


@pytest.fixture
def bare_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The implementation under test, with or without applications configured; every exchange
    of this check is recorded as evidence."""
    state = request.config.stash[STATE]
    if state.target is None:
        pytest.skip("no target (the run was not set up)")
    check_id = _check_id(request.node) or request.node.name
    ran = state.ran.get(check_id)
    if ran is None and state.interrupted:
        raise KeyboardInterrupt  # Ctrl-C came before this check ran ahead: pytest stops here
    if ran is not None:  # run ahead: this reports what it did
        if ran.setup_error is not None:
            raise ran.setup_error
        state.evidence[check_id] = ran.evidence
        state.target.current, state.target.notes = ran.evidence, ran.notes
        yield state.target
        state.target.current = None
        return
    _open_check(state, check_id)
    yield state.target
    _close_check(state.target)


def _open_check(state: RunState, check_id: str) -> Evidence:
    """Start ``check_id`` in this thread: its evidence, notes and time budget; or the
    ``CouldNotCheck`` that says why it is not attempted."""
    assert state.target is not None
    unreachable = state.unreachable or state.stopped_answering
    if unreachable is not None:
        # One unanswered request already made this run an error; waiting out every remaining
        # check's timeouts would only hide that line under many more.
        raise CouldNotCheck(f"not attempted: the target stopped answering ({unreachable})")
    options = state.options
    now = time.monotonic()
    run_deadline = state.t0 + options.max_duration_s
    if now > run_deadline:
        with state.lock:
            if not any("--max-duration" in error for error in state.run_errors):
                state.run_errors.append(
                    f"the run reached --max-duration ({options.max_duration_s:g} s): the "
                    "checks not judged by then were not attempted"
                )
        raise CouldNotCheck("not attempted: the run reached its --max-duration")
    state.target.client.check_deadline = min(now + options.check_timeout_s, run_deadline)
    evidence = Evidence()
    state.evidence[check_id] = evidence
    state.target.current = evidence
    state.target.notes = []
    return evidence


def _close_check(target: Target) -> None:
    target.current = None
    target.client.check_deadline = None


@pytest.fixture
def target(bare_target: Target) -> Target:
    """The implementation under test, when applications are configured (else the check skips):
    nearly every check needs an application to authorize with."""
    if bare_target.config is None:
        raise _not_applicable_skip(NO_APPLICATIONS)
    return bare_target


@pytest.fixture
def run_cache(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Per-run storage shared by checks (the property-test results, computed once)."""
    cache: dict[str, Any] = request.config.stash[STATE].cache
    return cache


# --- the run -------------------------------------------------------------------------------


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    state = config.stash.get(STATE, None)
    if state is None or not any(_check_id(item) for item in items):
        return
    from conformance import catalog

    state.active = True
    options = state.options
    keep, drop = [], []
    for item in items:
        check_id = _check_id(item)
        if check_id is None:
            keep.append(item)
        elif options.only is not None and check_id not in options.only:
            drop.append(item)
        else:
            keep.append(item)
            if _out_of_profile(check_id, options):
                item.add_marker(pytest.mark.skip(reason=REFERENCE_SKIP))
    if drop:
        config.hook.pytest_deselected(items=drop)
    # Checks set up early run last (their set-ups run below, when the run starts), so that
    # time passes for them while every other check runs, not in a wait of their own.
    from conformance.checks import late_order

    order = {cid: i for i, cid in enumerate(late_order([c.id for c in catalog.CATALOG]))}
    keep.sort(key=lambda item: order.get(_check_id(item) or "", len(order) + 1))
    items[:] = keep
    state.selected = [cid for cid in (_check_id(item) for item in keep) if cid]
    state.started_at = datetime.now(UTC).isoformat(timespec="seconds")
    state.t0 = time.monotonic()
    if not state.selected or config.option.collectonly:
        state.active = bool(state.selected) and not config.option.collectonly
        return
    from paysuite_core.driver.target import Target

    if state.prepared is None:  # plain pytest: no runner prepared the target before
        from conformance.options import SetupError
        from conformance.preflight import prepare

        try:
            state.prepared = prepare(options)
        except SetupError as exc:
            state.setup_error = str(exc)
            from conformance.preflight import write_setup_reports

            write_setup_reports(options, str(exc))
            pytest.exit(str(exc), returncode=2)
        state.owns_prepared = True
    state.target = Target(
        state.prepared.config,
        state.prepared.base_url,
        profile=options.profile,
        seed=options.seed,
        started_stub=state.prepared.stub is not None,
        limits=options.limits,
        throttle=state.prepared.throttle,
        tls=state.prepared.tls,
        concurrency=options.concurrency,
        # the run's secrets: its curls name each application's credentials
        masker=Masker.for_config(state.prepared.config, options.config),
    )
    in_profile = [cid for cid in state.selected if not _out_of_profile(cid, options)]
    _set_up_early(state.target, in_profile, options.max_duration_s)
    _write(
        config,
        f"paysuite conform: {len(state.selected)} checks, profile {options.profile}, "
        f"target {state.target.base_url}"
        + (" (bundled stub)" if state.prepared.stub is not None else ""),
    )


#: The early set-ups together take at most this long, and a quarter of the run's budget: they
#: are a few requests, and a target that answers slowly is the checks' to report, not theirs.
EARLY_BUDGET_S = 10.0


def _set_up_early(target: Target, selected: list[str], run_budget_s: float) -> None:
    """Run the early set-ups of the selected checks, within their budget. One that cannot be
    done (no application that may act, no answer in time) leaves its check to set up for
    itself and to say what stops it."""
    from conformance.checks import EARLY_SETUPS

    deadline = time.monotonic() + min(EARLY_BUDGET_S, run_budget_s / 4)

    def set_up(check_id: str) -> None:
        target.client.check_deadline = deadline
        try:
            EARLY_SETUPS[check_id](target)
        except Exception:  # the check itself reports what stops it
            target.early.pop(check_id, None)
        finally:
            target.client.check_deadline = None

    wanted = [check_id for check_id in selected if check_id in EARLY_SETUPS]
    if target.concurrency == 1:
        for check_id in wanted:
            set_up(check_id)
        return
    # Independent of one another (each its own transactions or pairs): at once, like the checks.
    with concurrent.futures.ThreadPoolExecutor(target.concurrency, "paysuite-setup") as pool:
        list(pool.map(set_up, wanted))


# --- checks run ahead, concurrently (--concurrency) ---------------------------------------


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Iterator[None]:
    """With ``--concurrency`` above 1, run the check bodies ahead in a thread pool; pytest's
    own loop then reports each stored outcome in the run's order, item by item, so that the
    terminal, the reports and junit.xml read as after a run one after another."""
    state = session.config.stash.get(STATE, None)
    if (
        state is not None
        and state.active
        and state.target is not None
        and state.options.concurrency > 1
        and not session.config.option.collectonly
        and not session.testsfailed  # a collection error: pytest's loop stops the run
    ):
        _run_ahead(state, session.items)
    return (yield)


#: The fixtures a check run ahead may ask for: the plugin's own.
_AHEAD_FIXTURES = frozenset({"target", "bare_target", "run_cache"})


def _run_ahead(state: RunState, items: list[pytest.Item]) -> None:
    """Every selected check that pytest would run, as ``concurrent_plan`` orders them
    (``--concurrency`` at a time)."""
    from conformance.ast_guard import serialized
    from conformance.checks import concurrent_plan

    ahead: dict[str, pytest.Function] = {}
    for item in items:
        check_id = _check_id(item)
        if (
            check_id is not None
            and isinstance(item, pytest.Function)
            and item.get_closest_marker("skip") is None
            and set(inspect.signature(item.obj).parameters) <= _AHEAD_FIXTURES
        ):
            ahead[check_id] = item
    assert state.target is not None
    if not state.target.numbers.unique:
        # The configured list's numbers are shared by the checks (the list cycles): counts on
        # a number see every check that holds it at the time. One after another, as pytest runs.
        return
    plan = concurrent_plan([cid for cid in state.selected if cid in ahead])
    state.ahead = len(ahead)
    pool = concurrent.futures.ThreadPoolExecutor(state.options.concurrency, "paysuite-check")
    try:
        with serialized():
            _run_plan(state, plan, ahead, pool)
    except KeyboardInterrupt:
        _stop_ahead(state, pool)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _run_plan(
    state: RunState,
    plan: Plan,
    ahead: dict[str, pytest.Function],
    pool: concurrent.futures.ThreadPoolExecutor,
) -> None:
    from conformance.checks import AFTER_OTHERS

    def at_once(batch: list[str]) -> list[concurrent.futures.Future[None]]:
        return [pool.submit(_ahead_one, state, cid, ahead[cid]) for cid in batch]

    for check_id in plan.first:
        at_once([check_id])[0].result()
    shared = [cid for cid in plan.together if "run_cache" in ahead[cid].fixturenames]
    rest = [cid for cid in plan.together if cid not in shared]
    # The first check that computes the run-wide result (the property run) as soon as a few
    # scripted checks have shown the target answers within the limits: it is the longest task,
    # and schemathesis's engine reads whole answers in its first requests, so a target that
    # answers endless bodies is known (and the property run not attempted) before it starts.
    # The checks that read the run-wide result once everything else is done, so that they wait
    # for it holding no thread another needs.
    scripted = at_once(rest)
    pending = set(scripted)
    while pending and len(scripted) - len(pending) < PROPERTY_RUN_AFTER:
        _done, pending = concurrent.futures.wait(
            pending, return_when=concurrent.futures.FIRST_COMPLETED
        )
    # A thread of its own, not a place in the pool's queue behind the scripted checks; not
    # waited for on the way out: an interruption stops it (``_stop_ahead``) and lets it end.
    own = concurrent.futures.ThreadPoolExecutor(1, "paysuite-property-run")
    try:
        property_run = [own.submit(_ahead_one, state, cid, ahead[cid]) for cid in shared[:1]]
        for future in scripted:
            future.result()
        for batch in plan.then:
            for future in at_once(batch):
                future.result()
        for future in property_run + at_once(shared[1:]):
            future.result()
    finally:
        own.shutdown(wait=False)
    # Once the property run, whose refs are noted too, is done; FMT-001 judges those refs.
    late = [cid for batch in plan.then for cid in batch if cid not in AFTER_OTHERS]
    _untangle_refs(state, rest + late)
    for check_id in plan.last:
        at_once([check_id])[0].result()


#: How many scripted checks of a concurrent run end before the property run starts.
PROPERTY_RUN_AFTER = 3


def _untangle_refs(state: RunState, batch: list[str]) -> None:
    """A check of ``batch`` failed on a transaction whose ref the target also answered another
    creation (FMT-001's finding): what it saw of "its" transaction may be the other's, so it
    could not judge its rule. One after another, ``Target.created`` tells the second of two such
    creations at once; at once, the second answer the target gave may be the first the suite
    reads, so the two are known only when the batch is done."""
    target = state.target
    assert target is not None
    # Every creation any check sent, whether through ``Target.create`` or its own request (a
    # race, a malformed-but-accepted body): a ref answered twice is shared, whichever check
    # drew it first, and so is one a generated creation of the property run drew too.
    answered: dict[str, list[Recorded]] = {}
    for done in list(state.ran.values()):
        for exchange in done.evidence.exchanges:
            ref = _created_ref(exchange)
            if ref is not None:
                answered.setdefault(ref, []).append(exchange)
    shared = {
        id(exchange): (ref, exchange)
        for ref, exchanges in answered.items()
        if len(exchanges) > 1 or ref in target.refs_reused_by_generated
        for exchange in exchanges
    }
    if not shared:
        return
    for check_id in batch:
        ran = state.ran.get(check_id)
        if ran is None or not isinstance(ran.call_error, CheckFailed):
            continue
        # Only a creation made for a check about something else (``Target.created``), as in a
        # run one after another: a check that judges creations judges a shared ref too.
        mine = [
            shared[id(e)]
            for e in ran.evidence.exchanges
            if id(e) in shared and id(e) in target.helper_creations
        ]
        if mine:
            ran.call_error = CouldNotCheck(
                f"a creation of this check was answered ref {mine[0][0]}, which the target "
                "answered another creation too (FMT-001): what the check saw of its "
                "transaction may be the other's",
                [exchange for _, exchange in mine[:4]],
            )


def _created_ref(exchange: Recorded) -> str | None:
    """The ref a successful cashin or cashout answered, if ``exchange`` is one."""
    wire = exchange.wire
    path = urlsplit(wire.url).path
    if wire.method != "POST" or not path.endswith((CASHIN, CASHOUT)):
        return None
    if not 200 <= wire.status < 300:
        return None
    body = wire.response_json()
    ref = body.get("ref") if isinstance(body, dict) else None
    return ref if isinstance(ref, str) else None


def _stop_ahead(state: RunState, pool: concurrent.futures.ThreadPoolExecutor) -> None:
    """Ctrl-C: the checks not started are not, the running ones stop at their next request
    and are reported as not run; pytest stops at the first check without a result."""
    with state.lock:
        state.interrupted = True
        finished = set(state.ran)
    assert state.target is not None
    state.target.client.stopped.set()  # the property run stops at its next request too
    pool.shutdown(wait=True, cancel_futures=True)
    with state.lock:
        for check_id in set(state.ran) - finished:
            del state.ran[check_id]


def _ahead_one(state: RunState, check_id: str, item: pytest.Function) -> None:
    """Run one check's set-up and body in this thread, keeping what they raised."""
    target = state.target
    assert target is not None
    if state.interrupted:
        return
    ran = Ran()
    started = time.monotonic()
    try:
        if "target" in item.fixturenames and target.config is None:
            raise _not_applicable_skip(NO_APPLICATIONS)
        ran.evidence = _open_check(state, check_id)
    except BaseException as exc:  # pytest reports it at the check's set-up
        ran.setup_error = exc
    else:
        ran.notes = target.notes
        values = {"target": target, "bare_target": target, "run_cache": state.cache}
        arguments = inspect.signature(item.obj).parameters
        try:
            item.obj(**{name: values[name] for name in arguments})
        except BaseException as exc:  # pytest reports it as the check's call
            ran.call_error = exc
            _note_unanswered(state, check_id, exc)
        finally:
            _close_check(target)
    ran.duration_s = time.monotonic() - started
    with state.lock:
        state.ran[check_id] = ran
        _progress_ahead(state, check_id, ran)


def _progress_ahead(state: RunState, check_id: str, ran: Ran) -> None:
    """With ``-v``, a line as each check run ahead ends (its verdict line comes in the run's
    order once all have ended): a long concurrent run shows it is moving. Under the state's
    lock, so the worker threads print one at a time."""
    config = state.config
    if config is None or not _shows_progress(config, state):
        return
    _write(config, f"  ran {len(state.ran)}/{state.ahead}: {check_id} ({ran.duration_s:.1f} s)")


def _note_unanswered(state: RunState, check_id: str, exc: BaseException) -> None:
    """What a check run ahead learnt of the target that stops the others: no answer at all,
    or answers over the size cap (which the property run then does not meet: its engine's own
    first requests read whole answers)."""
    from paysuite_core.driver.http import TargetUnreachable, oversized

    with state.lock:
        if isinstance(exc, TargetUnreachable):
            state.stopped_answering = state.stopped_answering or f"{check_id}: {exc}"
        if oversized(exc):
            state.cache.setdefault("oversized", str(exc))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A check run ahead is not called again: its body's outcome is raised, or it passed."""
    check_id = _check_id(pyfuncitem)
    state = pyfuncitem.config.stash.get(STATE, None)
    ran = state.ran.get(check_id) if state is not None and check_id is not None else None
    if ran is None:
        return None
    if ran.call_error is not None:
        raise ran.call_error
    return True


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    check_id = _check_id(item)
    state = item.config.stash.get(STATE, None)
    if check_id is not None and state is not None and state.active:
        _record(state, check_id, call, report)
        if report.when == "teardown" and _shows_progress(item.config, state):
            _progress(item.config, state, check_id)  # once the check has run, its line
    return report


def _shows_progress(config: pytest.Config, state: RunState) -> bool:
    """Whether the progress lines are ours to print: ``paysuite conform -v``; under plain
    pytest its own reporter shows progress."""
    return state.options.verbose and config.pluginmanager.get_plugin("terminalreporter") is None


def _record(
    state: RunState, check_id: str, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """The check's ``CheckResult`` from the report of one of its phases."""
    from conformance import catalog

    check = catalog.get(check_id)
    previous = state.results.get(check_id)
    result: CheckResult | None = None
    if report.skipped and report.when in ("setup", "call"):
        result = CheckResult(check, "skipped", _skip_reason(report))
        result.not_applicable = _is_not_applicable(call)
    elif report.when in ("setup", "teardown") and report.failed:
        if previous is None or previous.outcome == "passed":
            result = _error_result(state, check, check_id, call)
    elif report.when == "call":
        if report.passed:
            result = CheckResult(check, "passed")
        elif call.excinfo is not None and isinstance(call.excinfo.value, CheckFailed):
            # Only the suite's own failure fails a check: a stray ``assert`` (or any other
            # exception) in a check is a defect of the suite, reported as an error.
            exc = call.excinfo.value
            result = CheckResult(check, "failed", _failure_message(call))
            result.evidence = _proof(state, check_id, exc)
            result.reproduction = _reproduction(state, check_id, exc)
            result.expected = str(getattr(exc, "expected", "") or check.title)
            result.actual = str(getattr(exc, "actual", "") or result.message.splitlines()[0])
        else:
            result = _error_result(state, check, check_id, call)
    if result is not None:
        if report.when == "call" and state.target is not None and state.target.notes:
            result.note = "; ".join(state.target.notes)
        result.gating = _gates(check, state.options)
        ran = state.ran.get(check_id)
        duration = ran.duration_s if ran is not None else getattr(report, "duration", 0.0)
        result.duration_s = round(duration, 3)
        state.results[check_id] = result


def _gates(check: Check, options: Options) -> bool:
    """Whether a failure of ``check`` fails the run.

    Every MUST does, and with --strict every SHOULD too. In the reference profile the property
    checks judge against the full spec, the stub's choices included, so there they gate only
    with --strict: the seed profile's property run is the one that judges the document.
    """
    if options.strict:
        return True
    if options.profile == "reference" and check.group == "PROP":
        return False
    return check.level == "MUST"


def _error_result(
    state: RunState, check: Check, check_id: str, call: pytest.CallInfo[None]
) -> CheckResult:
    """An ``error``: the check could not judge its rule (a precondition, or no answer at all)."""
    from paysuite_core.driver.http import TargetUnreachable, oversized

    exc = call.excinfo.value if call.excinfo is not None else None
    if isinstance(exc, CouldNotCheck):
        message = f"could not check: {str(exc).strip()}"
        result = CheckResult(check, "error", message)
        result.evidence = [exchange.to_dict() for exchange in exc.proof]
        result.reproduction = _reproduction(state, check_id, exc)
    elif exc is not None and _is_engine_error(exc):
        error = engine_error(check_id, exc)
        if all(e.message != error.message for e in state.engine_errors):
            state.engine_errors.append(error)
        result = CheckResult(
            check, "error", f"paysuite's own error, not the target's: {error.message}"
        )
    else:
        result = CheckResult(check, "error", _error_message(call))
        result.evidence = _proof(state, check_id, None)
    if exc is not None and oversized(exc):
        state.cache.setdefault("oversized", str(exc))
    if isinstance(exc, TargetUnreachable) and state.unreachable is None:
        state.unreachable = str(exc)
        state.run_errors.append(f"the target stopped answering during {check_id}: {exc}")
    return result  # no Expected/Actual: the rule was not judged, the message says why


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason.removeprefix("Skipped: ")
    return str(longrepr or "")


def _failure_message(call: pytest.CallInfo[None]) -> str:
    assert call.excinfo is not None
    text = str(call.excinfo.value).strip()
    # pytest's assertion rewriting appends the introspection after a newline; keep it short.
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[:12]) if lines else "assertion failed"


def _error_message(call: pytest.CallInfo[None]) -> str:
    if call.excinfo is None:
        return "error"
    return f"{call.excinfo.typename}: {str(call.excinfo.value).strip()[:500]}"


def _is_engine_error(exc: BaseException) -> bool:
    """Whether ``exc`` is paysuite's own (a defect of a check, a hook, the engine) rather than
    what a target's answers, or their absence, made a check stop with."""
    from conformance.schemathesis_adapter import PropertyBudgetExceeded
    from paysuite_core.bounded_http import ResponseTooLarge, TotalTimeout
    from paysuite_core.driver.customer import DriverUnavailable
    from paysuite_core.driver.http import TargetUnreachable
    from paysuite_core.throttle import ThrottleExhausted

    known = (
        CouldNotCheck, CheckFailed, NotApplicable, TargetUnreachable, DriverUnavailable,
        PropertyBudgetExceeded, ResponseTooLarge, TotalTimeout, ThrottleExhausted, TimeoutError,
        OSError, KeyboardInterrupt, SystemExit,
    )  # fmt: skip
    if isinstance(exc, known) or type(exc).__module__.startswith("_pytest"):
        return False
    cause = exc.__cause__
    return cause is None or not isinstance(cause, known)


def _reproduction(state: RunState, check_id: str, exc: BaseException | None) -> Reproduction | None:
    """The shell lines that show the check's defect (a tool's own, as schemathesis's), from the
    exchanges that prove it and every exchange the check sent."""
    for item in getattr(exc, "extra_evidence", None) or []:
        made = getattr(item, "reproduction", None)
        if isinstance(made, Reproduction):
            return made
    evidence = state.evidence.get(check_id)
    sent = list(evidence.exchanges) if evidence is not None else []
    shown = list(getattr(exc, "proof", None) or sent[-8:])
    return reproduction(shown, sent)


def _proof(state: RunState, check_id: str, exc: BaseException | None) -> list[dict[str, Any]]:
    evidence = state.evidence.get(check_id)
    items: list[dict[str, Any]] = []
    proof = getattr(exc, "proof", None)
    extra = getattr(exc, "extra_evidence", None)
    if extra:
        items.extend(extra)
    if proof:
        items.extend(exchange.to_dict() for exchange in proof)
    elif evidence is not None and not extra:
        items.extend(evidence.to_list(only_last=8))
    return items


def _progress(config: pytest.Config, state: RunState, check_id: str) -> None:
    result = state.results.get(check_id)
    if result is None:
        return
    state.done += 1
    total = len(state.selected)
    width = len(str(total))
    from paysuite_core.report_engine.reports import word

    shown = word(result)  # the scorecard's word: n/a where the configuration cannot meet it
    line = (
        f"[{state.done:>{width}}/{total}] {check_id:<9} {result.check.level:<6} "
        f"{shown:<7} {result.check.title}"
    )
    if result.outcome in ("failed", "error", "skipped") and result.message:
        from paysuite_core.report_engine.reports import clip

        line += f"\n{'':>{2 * width + 4}}  -> {clip(result.message, 160)}"
    _write(config, line)


def _write(config: pytest.Config, text: str) -> None:
    """Print outside pytest's capture, through the terminal reporter when there is one."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(text)
        return
    capture = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
        print(text, flush=True)


REFERENCE_SKIP = "reference choice: checked in the reference profile"
NEVER_RAN = "not run: the run ended before it"


def decide(state: RunState) -> Verdict:
    """The run's verdict (a ``Verdict``): one meaning for the exit status and every report.

    In this order: fail (exit 1) when a gating check failed (every MUST; every SHOULD too with
    --strict); error (exit 2) when a gating check could not be judged or the run itself broke
    (the target stopped answering): what was not judged says nothing either way; fail (exit 1)
    when fewer of the profile's checks ran than --min-coverage asks (they were skipped); pass.
    """
    from conformance.report import early_expiry
    from paysuite_core.results.verdict import Coverage, Verdict, shown_tls

    ordered = [state.results[cid] for cid in state.selected if cid in state.results]
    engine = _engine_errors(state)
    in_profile = [
        r for r in ordered if not (r.outcome == "skipped" and r.message == REFERENCE_SKIP)
    ]
    # The checks the run meant to run and never reached (an interruption, a pytest.exit) still
    # count in the total: otherwise an interrupted run would read "coverage 44/45".
    never_ran = [
        cid
        for cid in state.selected
        if cid not in state.results and not _out_of_profile(cid, state.options)
    ]
    ran = [r for r in in_profile if r.outcome in ("passed", "failed")]
    coverage = Coverage(
        run=len(ran),
        total=len(in_profile) + len(never_ran),
        skipped=tuple((r.check.id, r.message) for r in in_profile if r.outcome == "skipped")
        + tuple((cid, NEVER_RAN) for cid in never_ran),
        minimum=state.options.min_coverage,
        not_applicable=tuple(
            (r.check.id, r.message)
            for r in in_profile
            if r.outcome == "skipped" and r.not_applicable
        ),
    )
    failed = [r.check.id for r in ordered if r.outcome == "failed" and r.gating]
    errors = [r.check.id for r in ordered if r.outcome == "error" and r.gating]
    options = state.options

    throttle = getattr(state.target, "throttle", None)

    def make(verdict: str, exit_code: int, reason: str) -> Verdict:
        return Verdict(
            verdict=verdict,
            exit_code=exit_code,
            profile=options.profile,
            strict=options.strict,
            coverage=coverage,
            run_errors=tuple(state.run_errors) + tuple(e.line() for e in engine),
            reason=reason,
            engine_errors=tuple(engine),
            findings=early_expiry(ordered),
            throttling=throttle.stats() if throttle is not None else None,
            tls=shown_tls(state.target.base_url, state.target.tls) if state.target else None,
        )

    if failed:
        levels = "MUST or SHOULD" if options.strict else "MUST"
        return make("fail", 1, f"{len(failed)} {levels} check(s) failed: {', '.join(failed)}")
    if coverage.total == 0 and not state.run_errors:
        return make("error", 2, "no check of the profile was selected: nothing was judged")
    if coverage.applicable == 0 and not state.run_errors:
        return make(
            "error", 2, "no selected check applies to this configuration: nothing was judged"
        )
    if state.run_errors or errors or engine:  # what was not judged says nothing either way
        parts = (list(state.run_errors) + [e.line() for e in engine])[:1]
        if errors:
            parts.append(f"{len(errors)} check(s) could not be judged: {', '.join(errors)}")
        return make("error", 2, "; ".join(parts))
    if coverage.ratio < options.min_coverage:
        return make(
            "fail",
            1,
            f"only {coverage.run} of {coverage.applicable} applicable checks ran "
            f"({coverage.ratio:.0%}), below --min-coverage {options.min_coverage:.0%}: see why "
            "each was skipped",
        )
    return make("pass", 0, f"{coverage.run} of {coverage.applicable} checks ran, no gating failure")


def _engine_errors(state: RunState) -> list[EngineError]:
    """The run's engine errors: the checks' own, then the property run's (once each)."""
    run = state.cache.get("properties")
    found = list(state.engine_errors) + list(getattr(run, "engine_errors", None) or [])
    return list({(e.where, e.message): e for e in found}.values())


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(STATE, None)
    if state is None or not state.active:
        return
    try:
        if state.setup_error is not None or state.target is None:
            if state.setup_error is not None:
                session.exitstatus = 2
            return
        if int(exitstatus) in (
            int(pytest.ExitCode.INTERNAL_ERROR),
            int(pytest.ExitCode.USAGE_ERROR),
        ):
            return
        if int(exitstatus) == int(pytest.ExitCode.INTERRUPTED):
            state.run_errors.append("the run was interrupted: the checks not shown did not run")
        from conformance import report
        from paysuite_core.report_engine import reports

        duration = round(time.monotonic() - state.t0, 2)
        ordered = [state.results[cid] for cid in state.selected if cid in state.results]
        outcome = decide(state)
        if state.options.verbose:
            _write(config, reports.scorecard(ordered, outcome, with_verdict=False))
        else:  # quiet: what went wrong (in full), then the counts
            found = report.problems(
                ordered,
                target=state.target.base_url,
                reveal_secrets=state.options.reveal_secrets,
                report_dir=state.options.report_dir,
            )
            if found:
                _write(config, found)
            for finding in outcome.findings:
                _write(config, f"  ! {finding}")
            _write(config, reports.totals_line(ordered))
            for error in outcome.run_errors:
                _write(config, f"  ! {error}")
        paths = reports.write_all(
            ordered,
            verdict=outcome,
            report_dir=state.options.report_dir,
            target=state.target.base_url,
            started_at=state.started_at,
            duration_s=duration,
            reveal_secrets=state.options.reveal_secrets,
        )
        _write(config, f"reports: {', '.join(str(p) for p in paths)} ({duration:.1f} s)")
        _write(config, reports.verdict_line(outcome, ordered))
        session.exitstatus = outcome.exit_code
        if state.handed is not None:
            state.handed.verdict, state.handed.counts = outcome, reports.summary(ordered)
    finally:
        if state.target is not None:
            state.target.close()
        if state.prepared is not None and state.owns_prepared:
            state.prepared.close()
