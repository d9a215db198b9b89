"""Durations in Locust's format: ``20``, ``20s``, ``1m30s``, ``1h`` (and a plain ``2.5``).

The parser is Locust's own public one, ``locust.util.timespan.parse_timespan`` (what Locust's
``-t/--run-time`` uses), so a duration means the same in ``paysuite load --duration``, in the
locustfile's ``--paysuite-*`` options and in Locust. Importing the ``locust`` package
monkey-patches the process with gevent, which ``paysuite load`` (it starts the stub, then Locust
as a subprocess) must not do: outside a Locust process the module file is loaded on its own,
without the package's ``__init__``. A plain decimal number of seconds (``2.5``) is accepted too,
as before (Locust's parser takes whole seconds only).
"""

from __future__ import annotations

import importlib.util
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

FORMATS = "20, 20s, 1m30s, 1h, 2.5"
_DECIMAL = re.compile(r"^\d+(\.\d+)?$")


@cache
def locust_parse_timespan() -> Callable[[str], int]:
    """``locust.util.timespan.parse_timespan``, without importing (monkey-patching) ``locust``."""
    loaded = sys.modules.get("locust.util.timespan")
    if loaded is not None:
        return loaded.parse_timespan  # type: ignore[no-any-return]
    spec = importlib.util.find_spec("locust")  # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("paysuite: Locust is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "util" / "timespan.py"
    file_spec = importlib.util.spec_from_file_location("load._locust_timespan", path)
    assert file_spec is not None and file_spec.loader is not None
    module = importlib.util.module_from_spec(file_spec)
    file_spec.loader.exec_module(module)
    return module.parse_timespan  # type: ignore[no-any-return]


def parse_duration(value: str | float | int) -> float:
    """Seconds of a duration; ``ValueError`` naming the accepted formats otherwise."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    text = str(value).strip()
    if _DECIMAL.match(text):
        return float(text)
    try:
        return float(locust_parse_timespan()(text))
    except ValueError:
        raise ValueError(f"{value!r} is not a duration (examples: {FORMATS})") from None


def duration_argument(text: str) -> float:
    """``type=`` of an argparse option that takes a duration (``20``, ``20s``, ``1m30s``)."""
    import argparse

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def format_duration(seconds: float) -> str:
    """``90`` -> ``1m30s``; ``2.5`` -> ``2.5s`` (``parse_duration``'s inverse, for messages)."""
    if seconds != int(seconds) or seconds < 60:
        return f"{seconds:g}s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if n)
