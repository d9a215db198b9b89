"""Unit tests of the pieces: SLO model, mix, numbers, token expiry, percentiles, report, ledger,
the load plan and its one serialised form.

Nothing here may import locust: it monkey-patches the whole test process with gevent.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from load.finalize import percentile
from load.plan import LoadPlan, UsageError, build_plan, read_plan, write_plan
from load.reconcile import ledger_anomalies, server_duplicates, storm_targets
from load.report import COLOURS, Chart, Series, plot, read_history, render_html
from load.shape_catalog import SHAPES, Pacing, ShapeOverrides, get_shape, parse_mix
from load.slo import (
    OperationStats,
    SLOError,
    SLORules,
    Verdict,
    evaluate,
    load_slo_file,
    percentile_of,
    resolve_slo,
)
from paysuite_core.report_engine import render
from paysuite_core.request_data import AmountSource, NumberSource, sample_from_regex
from paysuite_core.target_config import RWANDA_MOBILE_PATTERN, parse_target_config
from paysuite_core.tokens import parse_expires

APPS = [{"client_id": "a", "client_secret": "b", "privilege": "read-write"}]


def config(**extra: object):
    return parse_target_config(
        {"base_url": "http://127.0.0.1:1/api", "applications": APPS, **extra}
    )


def stats(requests: int, failures: int = 0, p95: float = 10, rps: float = 5) -> OperationStats:
    return OperationStats(requests, failures, rps, p95 / 2, p95, p95 * 2)


# -- SLO model ---------------------------------------------------------------------------------
def test_wildcard_applies_to_each_operation_and_specific_wins() -> None:
    slo = {"*": {"p95_ms": 100, "error_ratio": 0.01}, "cashin": {"p95_ms": 5}}
    verdicts = evaluate(
        slo, {"cashin": stats(10), "find": stats(10), "authorize": stats(1, p95=900)}, stats(21)
    )
    by_key = {(v.operation, v.metric): v for v in verdicts}
    assert by_key[("cashin", "p95_ms")].threshold == 5 and not by_key[("cashin", "p95_ms")].passed
    assert by_key[("find", "p95_ms")].passed
    assert ("authorize", "p95_ms") not in by_key  # token latency only when named
    assert by_key[("authorize", "error_ratio")].passed  # but its failures always count
    assert by_key[("cashin", "error_ratio")].passed


def test_error_ratio_and_min_rps_breaches() -> None:
    verdicts = evaluate(
        {"*": {"error_ratio": 0.0}, "total": {"min_rps": 50}},
        {"find": stats(10, failures=1)},
        stats(10),
    )
    failed = {(v.operation, v.metric) for v in verdicts if not v.passed}
    assert failed == {("find", "error_ratio"), ("total", "min_rps")}


def test_named_operation_without_requests_fails_every_threshold() -> None:
    """Nothing measured is not a pass (a row, failed, never a missing one)."""
    verdicts = evaluate({"cashout": {"p95_ms": 1, "min_rps": 1}}, {}, stats(0))
    by_metric = {v.metric: v for v in verdicts}
    assert not by_metric["p95_ms"].passed and by_metric["p95_ms"].note == "no request was made"
    assert not by_metric["min_rps"].passed


def test_auth_failures_count_and_an_all_failed_operation_is_a_failed_row() -> None:
    """Authorize and refresh failures count toward the error ratio; an operation
    whose every request failed is a failed ``successes`` row; the total ratio gates the run."""
    slo = {"*": {"p95_ms": 100, "error_ratio": 0.01}, "total": {"error_ratio": 0.01}}
    ops = {
        "authorize": stats(20, failures=20, p95=900),
        "refresh": stats(10, failures=1),
        "find": stats(40, failures=40),
        "cashin": stats(10),
    }
    verdicts = evaluate(slo, ops, stats(80, failures=61))
    failed = {(v.operation, v.metric) for v in verdicts if not v.passed}
    assert failed == {
        ("authorize", "error_ratio"),
        ("authorize", "successes"),
        ("refresh", "error_ratio"),
        ("find", "error_ratio"),
        ("find", "successes"),
        ("total", "error_ratio"),
    }
    assert not any(v.operation == "authorize" and v.metric == "p95_ms" for v in verdicts)


def test_operations_started_but_never_completed_fail_the_run() -> None:
    from load.finalize import judge

    shape = get_shape("smoke")
    ops = {"authorize": stats(4)}
    counters = {"started:cashin": 3, "started:find": 0, "auth_errors": 1}
    verdicts = judge(shape, resolve_slo(shape), ops, stats(4), {"count": 0}, {}, counters)
    failed = [(v.operation, v.metric, v.note) for v in verdicts if not v.passed]
    assert ("cashin", "successes", "no request completed (3 started)") in failed
    assert not any(op == "find" for op, _, _ in failed)


@pytest.mark.parametrize("key", ["shapes"])
def test_slo_file_overrides_defaults_then_shape(tmp_path: Path, key: str) -> None:
    path = tmp_path / "slo.yaml"
    path.write_text(
        f"defaults:\n  '*': {{p95_ms: 400}}\n{key}:\n  smoke:\n    cashin: {{p99_ms: 900}}\n"
    )
    merged = resolve_slo(get_shape("smoke"), load_slo_file(path))
    assert merged["*"]["p95_ms"] == 400 and merged["*"]["error_ratio"] == 0.0
    assert merged["cashin"] == {"p99_ms": 900}
    steady = resolve_slo(get_shape("steady"), load_slo_file(path))
    assert "cashin" not in steady and steady["*"]["p95_ms"] == 400


def test_slo_file_with_the_old_profiles_key_is_refused_naming_shapes(tmp_path: Path) -> None:
    path = tmp_path / "slo.yaml"
    path.write_text("profiles: {}\n")
    with pytest.raises(SLOError, match="'profiles' was renamed 'shapes'"):
        load_slo_file(path)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("cashin: {p95: 1}", "unknown metric"),
        ("cashin: {p95_ms: -1}", "expected a number >= 0"),
        ("cashin: 5", "expected a mapping of metric"),
        ("- a", "expected a mapping"),
        ("a: [", "not valid YAML"),
    ],
)
def test_bad_slo_files(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "slo.yaml"
    path.write_text(text)
    with pytest.raises(SLOError, match=re.escape(needle)):
        load_slo_file(path)


def test_every_shape_is_bounded() -> None:
    for shape in SHAPES.values():
        assert 0 < shape.duration_s <= 900 and 0 < shape.max_requests <= 1_000_000
        assert shape.mix and all(w >= 0 for w in shape.mix.values())


def test_duration_override_scales_the_ramp_step_down_to_its_minimum() -> None:
    ramp = ShapeOverrides(duration_s=60).apply(get_shape("ramp"))
    assert ramp.duration_s == 60 and ramp.step_s == 5.0 and ramp.steps == 12
    short = ShapeOverrides(duration_s=30).apply(get_shape("ramp"))  # was 2.5 s steps, silently
    assert short.step_s == 5.0 and short.steps == 6
    assert short.outline() == "6 steps of 5 s, 4 to 24 users (+4 per step)"
    with pytest.raises(ValueError, match="holds 2 step"):
        ShapeOverrides(duration_s=10).apply(get_shape("ramp")).check()
    with pytest.raises(ValueError, match="too short"):
        ShapeOverrides(step_s=2).apply(get_shape("ramp")).check()


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("20", 20),
        ("20s", 20),
        ("1m30s", 90),
        ("1h", 3600),
        ("2m", 120),
        ("2.5", 2.5),
        (7, 7),
        ("1d", 86_400),
        ("1d2h", 93_600),  # days: the stub's secret overlap
    ],
)
def test_durations_in_locusts_format(text: str, seconds: float) -> None:
    from paysuite_core.durations import parse_duration

    assert parse_duration(text) == seconds


def test_durations_mean_what_locusts_own_parser_says_without_importing_locust() -> None:
    """Every form Locust's ``parse_timespan`` takes gives the same seconds; read from its file,
    because importing the ``locust`` package monkey-patches the process with gevent."""
    import subprocess
    import sys

    code = (
        "import importlib.util, pathlib, sys\n"
        "from paysuite_core.durations import parse_duration\n"
        "spec = importlib.util.find_spec('locust')\n"
        "path = pathlib.Path(list(spec.submodule_search_locations)[0]) / 'util' / 'timespan.py'\n"
        "file_spec = importlib.util.spec_from_file_location('_timespan', path)\n"
        "module = importlib.util.module_from_spec(file_spec)\n"
        "file_spec.loader.exec_module(module)\n"
        "forms = ['20', '20s', '3m', '2h', '1h20m', '3h30m10s', '1m30s']\n"
        "print(all(parse_duration(f) == module.parse_timespan(f) for f in forms), "
        "'locust' in sys.modules, 'gevent' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"duration": "20x"}, "--duration: '20x' is not a duration"),
        ({"duration": "0s"}, "--duration must be greater than 0"),
        ({"shape": "ramp", "duration": "10s"}, "give --duration 15s or more"),
        ({"shape": "ramp", "step_duration": "1s"}, "too short to judge"),
        ({"reconcile_timeout": "soon"}, "--reconcile-timeout"),
    ],
)
def test_bad_durations_are_usage_errors(kwargs: dict, needle: str) -> None:
    with pytest.raises(UsageError, match=re.escape(needle)):
        build_plan(**kwargs)


def test_duration_options_of_paysuite_load(tmp_path: Path) -> None:
    from load.plan import plan_from_args
    from paysuite.cli import build_parser

    args = build_parser().parse_args(
        ["load", "--shape", "ramp", "--duration", "1m30s", "--reconcile-timeout", "2m",
         "--read-timeout", "3s", "--abort-on-fail"]
    )  # fmt: skip
    plan = plan_from_args(args)
    assert plan.shape.duration_s == 90 and plan.reconcile_timeout_s == 120
    assert plan.limits.read_s == 3 and plan.abort_on_fail is True


def test_parse_mix() -> None:
    assert parse_mix("cashin=3, find=1,events?filter") == {
        "cashin": 3,
        "find": 1,
        "events?filter": 1,
    }
    with pytest.raises(ValueError, match="unknown operation"):
        parse_mix("pay=1")
    with pytest.raises(ValueError, match="positive weight"):
        parse_mix("cashin=0")


# -- numbers and amounts -------------------------------------------------------------------------
def test_default_numbers_match_the_rwandan_pattern() -> None:
    source = NumberSource.for_target(config(), seed=1)
    numbers = {source.number() for _ in range(200)}
    assert len(numbers) > 150
    assert all(re.fullmatch(RWANDA_MOBILE_PATTERN, n) for n in numbers)


def test_numbers_list_is_used_verbatim() -> None:
    source = NumberSource.for_target(config(numbers=["0780000001", "0780000002"]), seed=1)
    assert {source.number() for _ in range(50)} == {"0780000001", "0780000002"}


def test_arbitrary_pattern_goes_through_from_regex() -> None:
    pattern = r"^\+2507[2389]\d{7}$"
    source = NumberSource.for_target(config(number_pattern=pattern), seed=1)
    numbers = {source.number() for _ in range(100)}
    assert len(numbers) > 10
    assert all(re.fullmatch(pattern, n) and n.isascii() for n in numbers)
    assert all(re.fullmatch(r"[A-Z]{2}-\d{3}", s) for s in sample_from_regex(r"[A-Z]{2}-\d{3}", 20))


def test_amounts_stay_within_bounds() -> None:
    source = AmountSource.for_target(config(amount={"min": 150.5, "max": 180}), seed=3)
    values = [source.amount() for _ in range(200)]
    assert all(151 <= v <= 180 and float(v).is_integer() for v in values)
    narrow = AmountSource.for_target(config(amount={"min": 100.2, "max": 100.7}))
    assert narrow.amount() == 100.2


# -- token expiry --------------------------------------------------------------------------------
def test_parse_expires_shapes() -> None:
    now = 1_800_000_000.0
    assert parse_expires(now + 900, "x", now, 60) == now + 900  # integer unix seconds (RC-8)
    assert parse_expires(str(int(now) + 900), "x", now, 60) == now + 900
    assert parse_expires(300, "x", now, 60) == now + 300  # a lifetime
    iso = parse_expires("2027-01-15T08:00:00Z", "x", now, 60)
    assert iso == 1_800_000_000.0 + (iso - 1_800_000_000.0)  # parsed, a float
    assert parse_expires(None, "opaque", now, 60) == now + 60  # the configured TTL


def test_parse_expires_falls_back_to_the_jwt_exp() -> None:
    import jwt

    token = jwt.encode({"exp": 1_900_000_000}, "k" * 32, algorithm="HS256")
    assert parse_expires(None, token, 1_800_000_000.0, 60) == 1_900_000_000


# -- percentiles ---------------------------------------------------------------------------------
def test_percentiles() -> None:
    assert percentile_of({}, 0.95) is None
    assert percentile_of({1: 94, 100: 6}, 0.95) == 100
    assert percentile_of({1: 96, 100: 4}, 0.95) == 1
    assert percentile([], 0.5) is None
    assert percentile([float(i) for i in range(1, 101)], 0.95) == 95


# -- ledger anomalies ----------------------------------------------------------------------------
def test_ledger_anomalies_catch_duplicate_keys_and_reused_refs() -> None:
    records = [
        {"ref": "r1", "key": "k1", "merchant": "A"},
        {"ref": "r1", "key": "k1", "merchant": "A"},  # a replayed 200: the same ref, fine
        {"ref": "r2", "key": "k2", "merchant": "A"},
        {"ref": "r3", "key": "k2", "merchant": "A"},  # one key, two transactions
        {"ref": "r4", "key": "k2", "merchant": "B"},  # another merchant's key space
        {"ref": "r5", "key": "k5", "merchant": "A"},
        {"ref": "r5", "key": "k6", "merchant": "A"},  # one ref for two keys
    ]
    unique, anomalies = ledger_anomalies(records)
    assert sorted(r["ref"] for r in unique) == ["r1", "r2", "r3", "r4", "r5"]
    assert anomalies["duplicate_keys"] == 1
    assert anomalies["duplicate_key_samples"][0]["refs"] == ["r2", "r3"]
    assert anomalies["reused_refs"] == 1


# -- report --------------------------------------------------------------------------------------
HEADER = (
    "Timestamp,User Count,Type,Name,Requests/s,Failures/s,50%,66%,75%,80%,90%,95%,98%,99%,"
    "99.9%,99.99%,100%,Total Request Count,Total Failure Count\n"
)
HISTORY = (
    HEADER
    + """100,1,GET,find,1,0,2,2,2,2,2,2,2,2,2,2,2,1,0
100,1,,Aggregated,0.000000,0.000000,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,N/A,0,0
101,2,,Aggregated,10.5,0.5,2,2,3,3,4,5,6,7,8,8,8,10,1
102,2,,Aggregated,12.0,0,2,2,3,3,4,6,6,9,9,9,9,22,1
"""
)


def test_history_and_chart(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text(HISTORY)
    rows = read_history(path)
    assert [r["t"] for r in rows] == [100, 101, 102]
    assert rows[0]["p95"] is None and rows[2]["p99"] == 9
    # throughput from the cumulative counts, not Locust's lagging Requests/s column
    assert [r["req/s"] for r in rows] == [0.0, 10.0, 12.0]
    assert [r["fail/s"] for r in rows] == [0.0, 1.0, 0.0]
    svg = _svg_chart(rows, ["p50", "p95", "p99"], "Latency", "ms")
    assert svg.startswith("<svg") and svg.count("<polyline") == 3
    assert "no data" in _svg_chart([], ["req/s"], "Throughput", "req/s")


def _svg_chart(rows: list, series: list[str], title: str, unit: str) -> str:
    """A chart of ``series`` alone, as load.html's template draws each."""
    chart = Chart(title, unit, [Series(s, s, COLOURS[s]) for s in series])
    return render("chart.svg", p=plot(rows, chart), users=COLOURS["users"])


def test_render_html_shows_verdicts_and_loss(tmp_path: Path) -> None:
    (tmp_path / "locust_stats_history.csv").write_text(HISTORY)
    summary = {
        "profile": "smoke",
        "exit_code": 1,
        "slo_passed": True,
        "target": "http://127.0.0.1:1/api",
        "operations": {
            "find": {
                "requests": 3,
                "failures": 0,
                "rps": 1.0,
                "p50_ms": 1.0,
                "p95_ms": 2.0,
                "p99_ms": 2.0,
            }
        },
        "slo": {
            "verdicts": [
                {
                    "operation": "find",
                    "metric": "p95_ms",
                    "threshold": 5.0,
                    "observed": 2.0,
                    "passed": True,
                    "note": "",
                }
            ]
        },
        "reconciliation": {
            "acknowledged": 5,
            "lost": 2,
            "passed": False,
            "samples": [{"ref": "r<1>", "key": "k", "outcome": "missing"}],
        },
        "files": {"history_csv": "locust_stats_history.csv", "locust_html": "locust.html"},
    }
    page = render_html(summary, tmp_path).read_text()
    assert "FAIL" in page and "reconciliation FAILED" in page
    assert "r&lt;1&gt;" in page and "r<1>" not in page  # escaped
    assert 'href="locust.html"' in page and page.count("<svg") == 2


def test_these_modules_do_not_import_locust() -> None:
    import subprocess
    import sys

    code = (
        "import sys, load, load.cli, load.runner, load.finalize, load.report, load.slo, "
        "load.reconcile, load.ledger, load.context, load.plan, load.shape_catalog, "
        "paysuite.demo; from load import build_plan, run; "
        "print('locust' in sys.modules, 'gevent' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_pacing_parser() -> None:
    from load.shape_catalog import Pacing, parse_pacing

    assert parse_pacing("between:0.1:0.5") == Pacing("between", 0.1, 0.5)
    assert parse_pacing("constant:0") == Pacing("constant", 0.0, 0.0)
    assert parse_pacing("throughput:50") == Pacing("throughput", rps=50.0)
    for bad in ("between:1", "throughput:0", "fast", "between:2:1", "constant:x"):
        with pytest.raises(ValueError, match="pacing"):
            parse_pacing(bad)


def _steps(rps: list[float], p95: list[float], errors: list[float] | None = None) -> list[dict]:
    errors = errors or [0.0] * len(rps)
    return [
        {"step": i, "users": 4 + 4 * i, "rps": r, "p95_ms": p, "error_ratio": e, "breached": []}
        for i, (r, p, e) in enumerate(zip(rps, p95, errors, strict=True))
    ]


def test_ramp_knee_is_where_throughput_stopped_growing_while_latency_rose() -> None:
    from load.slo import ramp_knee

    # a recorded run: a dip at step 5 (301 req/s) is no knee, later steps reached 472 req/s
    steps = _steps(
        [60, 120, 180, 240, 300, 301, 360, 420, 472, 470, 465],
        [5, 5, 6, 6, 7, 7, 8, 9, 12, 40, 90],
    )
    knee = ramp_knee(steps)
    assert knee is not None and knee["kind"] == "knee"
    assert knee["step"] == 8 and knee["rps"] == 472  # the best step, after which none grew
    assert "p95 rose from 12 to 90 ms" in knee["why"]
    # throughput still growing at the last step: no knee
    assert ramp_knee(_steps([10, 20, 30], [1, 1, 1])) is None
    # errors rising count as well
    errors = ramp_knee(_steps([10, 20, 20, 19], [1, 1, 1, 1], [0, 0, 0, 0.2]))
    assert errors is not None and errors["kind"] == "knee" and errors["step"] == 1
    # flat throughput with flat latency: a plateau (the load generator may be the limit)
    flat = ramp_knee(_steps([10, 20, 20, 20], [1, 1, 1, 1]))
    assert flat is not None and flat["kind"] == "plateau" and flat["step"] == 1


def test_wildcard_does_not_judge_derived_measures() -> None:
    """The lifecycle shape: ``*``'s p99 <= 1000 ms is for requests, not for time-to-processed."""
    slo = resolve_slo(get_shape("lifecycle"), SLORules())
    ttp = OperationStats(50, 0, 0.0, 900.0, 2000.0, 2075.6)
    verdicts = evaluate(slo, {"cashin": stats(50), "time-to-processed": ttp}, stats(50))
    judged = [(v.operation, v.metric) for v in verdicts if v.operation == "time-to-processed"]
    assert judged == [("time-to-processed", "p95_ms")]
    assert all(v.passed for v in verdicts)


def test_thresholds_decided_early_for_abort_on_fail() -> None:
    from load.slo import decided_early

    slo = {"*": {"p95_ms": 100, "error_ratio": 0.05}, "find": {"error_ratio": 0.0}}
    slow = OperationStats(300, 0, 10.0, 50.0, 400.0, 500.0)
    assert [v.describe() for v in decided_early(slo, {"cashin": slow}, slow)] == [
        "cashin p95_ms 400 (SLO <= 100)"
    ]
    few = OperationStats(20, 0, 10.0, 50.0, 400.0, 500.0)  # too few requests to decide
    assert decided_early(slo, {"cashin": few}, few) == []
    one_failure = OperationStats(5, 1, 1.0, 1.0, 1.0, 1.0)  # a ceiling of 0 is decided at once
    decided = decided_early(slo, {"find": one_failure}, one_failure)
    assert [(v.operation, v.metric) for v in decided] == [("find", "error_ratio")]
    low_rate = {"total": {"min_rps": 1000}}  # a floor waits for the end of the run
    assert decided_early(low_rate, {"find": slow}, slow) == []


def test_exit_status_and_the_reasons_of_a_failed_reconciliation() -> None:
    from load.finalize import exit_status, threshold_line, verdict_table
    from load.reconcile import failure_reasons

    assert (exit_status(True, True), exit_status(False, True)) == (0, 1)
    assert exit_status(False, False) == exit_status(True, False) == 3
    after_ctrl_c = {"acknowledged": 36, "checked": 36, "found": 0, "errors": 36,
                    "error_kinds": {"ConnectionRefusedError": 36}}  # fmt: skip
    assert failure_reasons(after_ctrl_c) == ["36 could not be checked (36 connection refused)"]
    lost = {"lost": 3, "missing": 2, "missing_created_event": 1, "mismatched": 1, "unchecked": 4}
    assert failure_reasons(lost) == [
        "3 lost (2 not findable by ref, 1 without a transaction:created event)",
        "1 mismatched (the target holds other fields)",
        "4 could not be checked (the --reconcile-timeout budget ran out)",
    ]
    recon = {**after_ctrl_c, "passed": False, "reasons": failure_reasons(after_ctrl_c)}
    slow = Verdict("cashin", "p95_ms", 500, 812.0, False)
    text = verdict_table([slow, Verdict("total", "min_rps", 2, 20.5, True)], recon, "smoke", 3)
    assert "-> ✗ FAIL: 36 could not be checked (36 connection refused)" in text
    # one line per reason: a breach of many thresholds wraps instead of one long line
    assert "result: FAIL (exit 3: reconciliation failed):\n  - threshold cashin p95_ms 812" in text
    assert "\n  - reconciliation: 36 could not be checked" in text
    assert threshold_line(slow).startswith("  ✗ cashin p95_ms<=500ms ....")
    assert threshold_line(slow).endswith(" p95=812ms")
    assert threshold_line(Verdict("total", "min_rps", 2, 20.5, True)).endswith("rps=20.5/s")


class _FakeTarget:
    """Answers the events list for ``client=``: created events, one per ref it holds."""

    def __init__(self, refs_by_number: dict[str, list[str]]) -> None:
        self.refs_by_number = refs_by_number

    def header(self, session: object, merchant: str) -> dict[str, str]:
        return {"Authorization": "Bearer t"}

    def get(self, path: str, headers: dict, **params: object) -> object:
        events = [
            {"event_kind": kind, "data": {"ref": ref}}
            for ref in self.refs_by_number.get(str(params["client"]), [])
            for kind in ("transaction:created", "transaction:processed")
        ]

        class Response:
            status = 200

            def json(self) -> dict:
                return {"transactions": events}

        return Response()


def test_storm_keys_are_counted_on_the_target_itself() -> None:
    """A target answering 409 but executing the retry anyway holds two transactions for a key."""
    records = [
        {"ref": "r1", "key": "k1", "number": "0781111111", "merchant": "A", "storm": True},
        {"ref": "r2", "key": "k2", "number": "0782222222", "merchant": "A", "storm": True},
        {"ref": "r3", "key": "k3", "number": "0782222222", "merchant": "A", "storm": True},
        {"ref": "r4", "key": "k4", "number": "0783333333", "merchant": "A"},  # not a storm key
    ]
    targets = storm_targets(records)
    assert targets == {("A", "0781111111"): {"k1"}, ("A", "0782222222"): {"k2", "k3"}}
    honest = _FakeTarget({"0781111111": ["r1"], "0782222222": ["r2", "r3"]})
    result = server_duplicates(honest, honest, targets)  # type: ignore[arg-type]
    assert result["storm_keys_checked"] == 3 and result["server_duplicate_keys"] == 0
    silent_duplicate = _FakeTarget({"0781111111": ["r1", "r1-again"], "0782222222": ["r2", "r3"]})
    result = server_duplicates(
        silent_duplicate,
        silent_duplicate,
        targets,  # type: ignore[arg-type]
    )
    assert result["server_duplicate_keys"] == 1
    assert result["server_duplicate_samples"][0]["refs"] == ["r1", "r1-again"]


# -- the load plan -------------------------------------------------------------------------------
def _credentials(tmp_path: Path) -> Path:
    import yaml

    path = tmp_path / "target.yaml"
    path.write_text(
        yaml.safe_dump(
            {"base_url": "http://127.0.0.1:1/api", "applications": APPS, "numbers": ["0780000001"]}
        )
    )
    return path


def test_build_plan_reads_once_and_applies_the_overrides(tmp_path: Path) -> None:
    slo = tmp_path / "slo.yaml"
    slo.write_text("shapes:\n  ramp:\n    '*': {p95_ms: 7}\n")
    plan = build_plan(
        shape="ramp",
        config=_credentials(tmp_path),
        users=6,
        duration="30s",
        mix="cashin=1,find=2",
        pacing="constant:0.5",
        slo=slo,
        report_dir=tmp_path / "out",
    )
    assert isinstance(plan, LoadPlan) and plan.target.numbers == ("0780000001",)
    assert plan.shape.name == "ramp" and plan.shape.users == 6 and plan.shape.step_s == 5.0
    assert plan.shape.mix == {"cashin": 1, "find": 2} and plan.shape.pacing == Pacing(
        "constant", 0.5, 0.5
    )
    assert plan.thresholds["*"]["p95_ms"] == 7
    slo.unlink()  # read once, into the plan: the file is not needed any more
    assert plan.thresholds["*"]["p95_ms"] == 7
    steady = plan.with_shape("steady")  # the class picker: another shape, the same overrides
    assert steady.shape.name == "steady" and steady.shape.users == 6
    assert "p95_ms" in steady.thresholds["*"] and steady.thresholds["*"]["p95_ms"] != 7


def test_the_serialised_plan_reads_back_the_same(tmp_path: Path) -> None:
    from dataclasses import replace

    from paysuite_core.bounded_http import LOAD_LIMITS

    plan = build_plan(
        shape="lifecycle",
        config=_credentials(tmp_path),
        users=3,
        pacing="between:0.1:0.2",
        slo=SLORules(defaults={"*": {"p95_ms": 50.0}}),
        limits=replace(LOAD_LIMITS, read_s=2.0, max_body_bytes=1000),
        lifecycle_resolve="driver",
        workers=2,
        report_dir=tmp_path,
    )
    again = read_plan(write_plan(plan))
    assert again == plan
    assert again.shape == plan.shape and again.thresholds == plan.thresholds
    assert again.lifecycle_mode == "driver" and again.limits.max_body_bytes == 1000
    with pytest.raises(UsageError, match="not a paysuite load plan"):
        read_plan('{"schema": "something else"}')


def test_bundled_stub_plan_and_its_lifecycle_mode(tmp_path: Path) -> None:
    plan = build_plan(report_dir=tmp_path)
    assert plan.config is None and plan.shape.name == "smoke"
    with pytest.raises(UsageError, match="--target needs --config"):
        build_plan(target="http://127.0.0.1:1/api")
    target = plan.for_target(config(), lifecycle_resolve="auto")
    assert target.lifecycle_mode == "auto" and target.run_id == plan.run_id
    driven = config(
        customer={
            "driver": "magic-numbers",
            "confirm_number": "0780000009",
            "cancel_number": "0780000008",
        }
    )
    assert build_plan(config=driven).lifecycle_mode == "driver"


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"shape": "marathon"}, "unknown shape 'marathon'"),
        ({"users": 0}, "--users must be greater than 0"),
        ({"mix": "teleport=1"}, "unknown operation"),
        ({"pacing": "fast"}, "pacing"),
        ({"workers": -1}, "--workers must be 0 or more"),
    ],
)
def test_build_plan_refuses_bad_input(kwargs: dict, needle: str) -> None:
    with pytest.raises(UsageError, match=re.escape(needle)):
        build_plan(**kwargs)


def test_shape_on_the_command_line_and_no_profile(capsys: pytest.CaptureFixture[str]) -> None:
    from load.plan import plan_from_args
    from paysuite.cli import build_parser

    parser = build_parser()
    assert plan_from_args(parser.parse_args(["load", "--shape", "ramp"])).shape_name == "ramp"
    assert capsys.readouterr().err == ""
    assert plan_from_args(parser.parse_args(["load"])).shape_name == "smoke"
    # --profile is not an option of paysuite load (a profile is conformance's): one line, exit 2
    for argv in (["load", "--profile", "spike"], ["load", "--shape", "ramp", "--profile=x"]):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("paysuite load: ") and "--profile" in err, err
        assert err.count("\n") == 1 and "usage" not in err, err
    with pytest.raises(SystemExit):
        parser.parse_args(["load", "--help"])
    assert "--profile" not in capsys.readouterr().out  # not offered any more


def test_one_user_class_per_behaviour_with_locust_task_weights() -> None:
    """Each shape names user classes the locustfile has; MerchantUser's Locust task weights are
    the default mix; a run-time mix keeps its proportions; pacing is Locust's wait function."""
    import json
    import subprocess
    import sys

    code = """
import json
from load.shape_catalog import DEFAULT_MIX, SHAPES, Pacing
from load.users import USER_CLASSES, MerchantUser, weighted, wait_function
names = {t.__name__: sum(1 for u in MerchantUser.tasks if u is t) for t in set(MerchantUser.tasks)}
a, b = object(), object()
drawn = weighted({a: 0.5, b: 1.5, print: 0})
waits = [
    wait_function(Pacing("constant", 0.5, 0.5), 4)(MerchantUser),
    wait_function(Pacing("between", 0.1, 0.2), 4)(MerchantUser),
]
print(json.dumps({
    "weights": names,
    "mix": DEFAULT_MIX,
    "shapes": {n: list(s.user_classes) for n, s in SHAPES.items()},
    "known": sorted(USER_CLASSES),
    "drawn": [drawn.count(a), drawn.count(b), drawn.count(print)],
    "waits": waits,
}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    got = json.loads(out.stdout.splitlines()[-1])
    task_of = {"events_filtered": "events?filter"}
    assert {task_of.get(k, k): v for k, v in got["weights"].items()} == got["mix"], out.stderr
    assert got["known"] == ["LifecycleUser", "MerchantUser", "StormUser"]
    assert got["shapes"]["idempotency-storm"] == ["StormUser"]
    assert got["shapes"]["lifecycle"] == ["LifecycleUser"]
    assert all(got["shapes"][n] == ["MerchantUser"] for n in ("smoke", "steady", "ramp", "soak"))
    assert got["drawn"] == [1, 3, 0]
    assert got["waits"][0] == 0.5 and 0.1 <= got["waits"][1] <= 0.2
