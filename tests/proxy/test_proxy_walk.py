"""The fixed paypack-py walk (``paypack_walk.py``: authorize, cashin, cashout, find, events,
confirm and cancel, find again, each ref's events, refresh, a list filtered by status, a reused
key) through ``paysuite proxy``: clean against the stub, and against each fault its traffic
reveals, a failure of exactly the rule that names it. docs/proxy.md's table of all the faults is
made by ``walk_faults.py`` from the same walk."""

from __future__ import annotations

from pathlib import Path

import pytest
from proxykit import config_file, paypack_walk, start_proxy

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sdk-clients")]


@pytest.mark.parametrize(
    ("fault", "rules"),
    [
        ("", set()),
        ("wrong-kind", {"TXN-002", "FIND-001", "LIFE-001"}),
        ("refs-reused", {"FMT-001"}),
        ("filter-ignored", {"EVT-006"}),
        ("processed-event-missing", {"LIFE-002", "LIFE-003"}),
        ("cancel-reads-success", {"LIFE-003"}),
        ("find-status-disagrees", {"LIFE-002", "LIFE-003"}),
    ],
)
def test_the_paypack_walk_fails_exactly_the_faults_rule(
    make_stub, tmp_path: Path, fault: str, rules: set[str]
) -> None:
    stub = make_stub(faults=(fault,) if fault else ())
    run = start_proxy(stub.root_url, tmp_path / "reports", config=config_file(stub, tmp_path))
    steps = paypack_walk(run, stub)
    assert "error" not in steps["reused key"], steps
    assert run.stop() == (1 if rules else 0), run.output
    assert run.failed() == rules, run.output
    report = run.report
    judged = {c["id"] for c in report["checks"] if c["outcome"] in ("passed", "failed")}
    # on the correct stub the walk gives each rule of the traffic something to judge: none is
    # left "skipped" (a fault may leave one nothing: refs answered twice describe nobody)
    traffic_rules = {"TXN-001", "TXN-002", "FMT-001", "FIND-001", "LIFE-001", "LIFE-002",
                     "LIFE-003", "EVT-003", "EVT-004", "EVT-006", "EVT-007",
                     "IDEM-001"}  # fmt: skip
    assert fault or traffic_rules <= judged
    for rule in rules:
        assert f"× {rule}" in run.output  # the live line names it
        assert run.check(rule)["evidence"], rule  # with the exchanges that prove it


@pytest.mark.parametrize("variant", ["live", "lenient"])
def test_the_paypack_walk_raises_no_false_alarm_on_a_conformant_variant(
    make_stub, tmp_path: Path, variant: str
) -> None:
    """The live service's choices (successful, 201, omitempty envelopes, nanoseconds, Go error
    bodies) and the lenient ones (page size 10, global keys...) follow the document: no rule of
    the traffic may fail on them."""
    stub = make_stub(variants=(variant,))
    run = start_proxy(stub.root_url, tmp_path / "reports", config=config_file(stub, tmp_path))
    paypack_walk(run, stub)
    assert run.stop() == 0, run.output
    assert run.failed() == set()
