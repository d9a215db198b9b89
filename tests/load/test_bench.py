"""``paysuite bench``: the shape of its output, run very briefly (speed itself is the bench's to
measure, never a test's), and the pieces it is built from."""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import pytest

from load import bench
from load.bench import BARE_GET, BARE_POST
from stub_server.store import Store


def test_steady_rate_leaves_out_the_start(tmp_path: Path) -> None:
    history = tmp_path / "h_stats_history.csv"
    rows = ["Timestamp,User Count,Type,Name,Requests/s,Total Request Count"]
    for second, count in enumerate((0, 10, 100, 1100, 2100, 3100)):
        rows.append(f"{1000 + second},16,,Aggregated,0,{count}")
        rows.append(f"{1000 + second},16,GET,find,0,{count}")
    history.write_text("\n".join(rows) + "\n")
    assert bench.steady_rate(history, skip_s=3) == 1000.0
    assert bench.steady_rate(tmp_path / "missing.csv") is None


def test_seeded_events_are_the_stores_own(tmp_path: Path) -> None:
    """Seeding writes straight into a store; the store's migration (the stub's next start)
    rebuilds its indexes and running totals, which then agree with a scan."""
    db = tmp_path / "stub.db"
    Store(str(db)).close()
    sample = bench.seed_events(db, 3000)
    Store(str(db)).close()  # what the stub's next start does: indexes, running totals
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
    finally:
        conn.close()
    queries = bench.events_queries(sample)
    assert {"first page", "offset=10000", "client", "ref"} <= set(queries)


def test_verdicts_mark_each_target() -> None:
    results = {
        "measurements": {
            "stub cashin": {"ratio": 0.45, "round_ratios": [0.45]},
            "stub find": {"ratio": 0.8, "round_ratios": [0.8]},
            "paysuite Locust user (find)": {"ratio": 0.95, "round_ratios": [0.95]},
        },
        "events_list": {
            "stored": 1000,
            "queries": {"first page": {"p50_ms": 1.0}, "from": {"p50_ms": 7.5}},
        },
    }
    rows = bench.verdicts(results)
    assert [row["met"] for row in rows] == [False, True, True, False]
    text = bench.format_verdicts(rows)
    assert text.count("✓ pass") == 2 and text.count("✗ FAIL") == 2
    assert "worst: from" in text and "target >= 0.50" in text and "<= 5 ms" in text


@pytest.mark.slow
def test_a_very_short_bench_prints_every_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = argparse.Namespace(
        seconds=1.0,
        rounds=1,
        connections=2,
        report_dir=str(tmp_path / "bench"),
        generator="python",
        profile_stub=True,
        events=2000,
    )
    assert bench.run_bench(args) == 0
    out = capsys.readouterr().out
    assert "paysuite bench: targets" in out
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
        if line.endswith(":") and line.startswith("paysuite bench: "):
            assert index + 1 < len(lines) and lines[index + 1].startswith("  "), line
    assert "where the stub's time goes under cashin load" in out
    assert "stub functions by cumulative time:" in out
    results = json.loads((tmp_path / "bench" / "bench.json").read_text())
    measured = results["measurements"]
    assert {"stub cashin", "stub find", BARE_GET, BARE_POST} <= set(measured)
    # each ratio against the bare handler answering the very same request
    assert measured["stub cashin"]["vs"] == BARE_POST and measured["stub find"]["vs"] == BARE_GET
    assert len(results["events_list"]["queries"]) == 10
    assert len(results["targets"]) == 4
