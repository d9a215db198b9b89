"""What ``paysuite load`` (and a plain ``locust -f load/locustfile.py``) leaves at the terminal
once the load is over: Locust's statistics table once, where the reports went, then the verdict
last.

Why: left to itself Locust prints its table every few seconds (``--only-summary`` stops that,
and ``paysuite load`` always passes it) and, after the run's verdict, three more tables (the
statistics again, the percentiles 175 columns wide, the failures): a 30 s run was 230 lines
with its verdict on line 203. Those end tables are INFO records of Locust's
``locust.stats_logger``; this module prints the statistics table itself, as narrow as the
operation names allow, then turns that logger off so the verdict stays the last word. Under
``--quiet`` (``--skip-log-setup``) Python's default logging prints no INFO record: no table.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported outside Locust too (load.finalize): locust only when printing
    from locust.stats import RequestStats

#: Locust's logger of its statistics tables (``locust.stats.console_logger``).
STATS_LOGGER = "locust.stats_logger"
#: The name column's width beyond the longest name: Locust draws it ``STATS_NAME_WIDTH - 4``
#: wide, and a space before the next column.
_NAME_MARGIN = 5


def say(line: str) -> None:
    """One of paysuite's own lines, ``paysuite: ...``, at once (Locust's output is buffered)."""
    print(f"paysuite: {line}", flush=True)


def print_table_once(stats: RequestStats) -> None:
    """Locust's statistics table (the whole run), its name column as wide as the longest
    name, then no more of Locust's end tables."""
    import locust.stats  # gevent's monkey-patching comes with it: only inside a Locust run

    names = [len(entry.name) for entry in stats.entries.values()]
    width = max([len("Aggregated"), *names]) + _NAME_MARGIN
    previous = locust.stats.STATS_NAME_WIDTH
    locust.stats.STATS_NAME_WIDTH = width
    try:
        locust.stats.print_stats(stats, current=False)
    finally:
        locust.stats.STATS_NAME_WIDTH = previous
    logging.getLogger(STATS_LOGGER).disabled = True
    logging.getLogger("locust.main").setLevel(logging.WARNING)  # its "Shutting down" line


def reports_line(report_dir: Path, files: dict[str, str | None]) -> str:
    """Where the run's reports are: load.json and load.html, and Locust's own when asked."""
    root = report_dir.resolve()
    others = [name for key, name in files.items() if name and key != "load_html"]
    return f"paysuite: reports: {root}/load.json, load.html" + "".join(
        f", {name}" for name in others
    )
