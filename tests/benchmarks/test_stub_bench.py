"""``python -m benchmarks stub``: the shape of its output, run very briefly (speed itself is the
bench's to measure, never a test's), and the pieces it is built from."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from benchmarks import events, locust_bench, stub_bench
from benchmarks.__main__ import main
from benchmarks.generators import parse_wrk
from benchmarks.stub_bench import BARE_GET, BARE_POST
from stub_server.store import Store


def test_steady_rate_leaves_out_the_start(tmp_path: Path) -> None:
    history = tmp_path / "h_stats_history.csv"
    rows = ["Timestamp,User Count,Type,Name,Requests/s,Total Request Count"]
    for second, count in enumerate((0, 10, 100, 1100, 2100, 3100)):
        rows.append(f"{1000 + second},16,,Aggregated,0,{count}")
        rows.append(f"{1000 + second},16,GET,find,0,{count}")
    history.write_text("\n".join(rows) + "\n")
    assert locust_bench.steady_rate(history, skip_s=3) == 1000.0
    assert locust_bench.steady_rate(tmp_path / "missing.csv") is None


WRK_OUTPUT = """Running 5s test @ http://127.0.0.1:1/api/transactions/find/x
  2 threads and 16 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.10ms    1.21ms  20.11ms   85.00%
  Latency Distribution
     50%    2.71ms
     75%    3.40ms
     90%    4.60ms
     99%  850.00us
  26566 requests in 5.00s, 9.12MB read
  Non-2xx or 3xx responses: 12
Requests/sec:   5308.91
Transfer/sec:      1.82MB
"""


def test_parse_wrk_output() -> None:
    parsed = parse_wrk(WRK_OUTPUT)
    assert parsed["rps"] == 5308.91 and parsed["requests"] == 26566
    assert parsed["non_2xx"] == 12
    assert parsed["p50_ms"] == 2.71 and parsed["p99_ms"] == 0.85
    with pytest.raises(RuntimeError, match="unexpected wrk output"):
        parse_wrk("wrk: connection refused")


def test_seeded_events_are_the_stores_own(tmp_path: Path) -> None:
    """Seeding goes through the store's own insert path: its indexes and triggers stay, and its
    running totals agree with a scan."""
    db = tmp_path / "stub.db"
    Store(str(db)).close()
    sample = events.seed_events(db, 3000)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 3000
        cells = conn.execute("SELECT SUM(n), SUM(amount) FROM event_totals").fetchone()
        hourly = conn.execute("SELECT SUM(n), SUM(amount) FROM event_totals_hourly").fetchone()
        scanned = conn.execute("SELECT COUNT(*), SUM(amount) FROM events").fetchone()
        assert cells == hourly == scanned
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert {"ev_merchant_time", "ev_ref", "ev_client_time", "ev_totals_insert"} <= names
        found = conn.execute("SELECT COUNT(*) FROM events WHERE ref = ?", (sample["ref"],))
        assert found.fetchone()[0] >= 1
        # each processed transaction has its processed event, as the handlers would record it
        processed = conn.execute("SELECT COUNT(*) FROM transactions WHERE status != 'pending'")
        kinds = dict(conn.execute("SELECT event_kind, COUNT(*) FROM events GROUP BY event_kind"))
        assert kinds["transaction:processed"] == processed.fetchone()[0] > 0
        assert (
            kinds["transaction:created"]
            == conn.execute("SELECT COUNT(*) FROM transactions").fetchone()[0]
        )
    finally:
        conn.close()
    queries = events.events_queries(sample)
    assert {"first page", "offset=10000", "client", "ref"} <= set(queries)


def test_verdicts_mark_each_target() -> None:
    results = {
        "measurements": {
            "stub cashin": {"ratio": 0.2, "round_ratios": [0.2]},
            "stub find": {"ratio": 0.8, "round_ratios": [0.8]},
            "paysuite Locust user (find)": {"ratio": 0.95, "round_ratios": [0.95]},
        },
        "events_list": {
            "stored": 1000,
            "queries": {"first page": {"p50_ms": 1.0}, "from": {"p50_ms": 7.5}},
        },
    }
    rows = stub_bench.verdicts(results)
    assert [row["met"] for row in rows] == [False, True, True, False]
    text = stub_bench.format_verdicts(rows)
    assert text.count("✓ pass") == 2 and text.count("✗ FAIL") == 2
    assert "worst: from" in text and "target >= 0.25" in text and "<= 5 ms" in text


@pytest.mark.slow
def test_a_very_short_bench_prints_every_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_dir = tmp_path / "bench"
    argv = ["stub", "--seconds", "1", "--rounds", "1", "--connections", "2", "--events", "2000"]
    assert (
        main([*argv, "--generator", "python", "--profile-stub", "--report-dir", str(report_dir)])
        == 0
    )
    out = capsys.readouterr().out
    assert "benchmarks stub: targets" in out
    for label in (
        "stub cashin / bare handler",
        "stub find / bare handler",
        "paysuite user / minimal Locust user",
        "events list p50, 2,000 events",
    ):
        line = next(line for line in out.splitlines() if label in line)
        assert "✓ pass" in line or "✗ FAIL" in line
    # the profile printed for every stub measurement, and no heading without lines under it
    lines = out.splitlines()
    for index, line in enumerate(lines):
        if line.endswith(":") and line.startswith("benchmarks stub: "):
            assert index + 1 < len(lines) and lines[index + 1].startswith("  "), line
    assert "where the stub's time goes under cashin load" in out
    assert "stub functions by cumulative time:" in out
    results = json.loads((report_dir / "bench.json").read_text())
    measured = results["measurements"]
    assert {"stub cashin", "stub find", BARE_GET, BARE_POST} <= set(measured)
    # each ratio against the bare handler answering the very same request
    assert measured["stub cashin"]["vs"] == BARE_POST and measured["stub find"]["vs"] == BARE_GET
    assert len(results["events_list"]["queries"]) == 10
    assert len(results["targets"]) == 4


@pytest.mark.parametrize("flag", ["--seconds", "--rounds", "--connections"])
def test_counts_must_be_positive(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stub", flag, "0"]) == 2
    assert "must be positive" in capsys.readouterr().err
