"""Headless Chromium for the self-tests that open a report the way a person would.

One command line for every browser test (conformance, load, proxy and clients reports): the
flags that keep Chromium from reaching the network or a profile of its own, and the PNG size
check of a screenshot.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: Skips a test where Chromium is not installed (CI installs it: .ci/run).
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"
)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run headless Chromium with ``args`` (``--dump-dom URL``, ``--screenshot=PNG URL``...)."""
    return subprocess.run(
        [CHROMIUM or "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'profile'}",
         *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def png_size(path: Path) -> tuple[int, int]:
    """A PNG's width and height, from its IHDR chunk."""
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height
