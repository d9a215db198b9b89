"""An install carries every package and the spec, not only a checkout.

``pyproject.toml`` lists packages explicitly (``spec/`` is mapped to
``paysuite_core.spec``), so a new subpackage that is not listed would work from the checkout
and be missing from an install.
"""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_ROOTS = ("paysuite_core", "paysuite", "stub_server", "conformance", "load", "proxy")


def listed_packages() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(pyproject["tool"]["setuptools"]["packages"])


def source_packages() -> set[str]:
    found = {"paysuite_core.spec"}
    for root in PACKAGE_ROOTS:
        for init in (ROOT / root).rglob("__init__.py"):
            found.add(".".join(init.parent.relative_to(ROOT).parts))
    return found


def test_every_source_package_is_listed() -> None:
    assert source_packages() == listed_packages()


def test_the_benchmarks_stay_in_the_checkout() -> None:
    """benchmarks/ measures paysuite itself: it is no package an install carries."""
    assert (ROOT / "benchmarks" / "__main__.py").is_file()
    assert not {p for p in listed_packages() if p.split(".")[0] == "benchmarks"}


@pytest.mark.slow
def test_the_wheel_carries_the_suite_the_locustfile_and_the_spec(tmp_path: Path) -> None:
    import shutil
    import subprocess
    import sys

    # a clean copy: setuptools reuses a checkout's build/ folder, whose stale files would hide
    # a package missing from the list
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "reports", ".tox", "__pycache__", ".*_cache"
        ),
    )
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    (wheel,) = tmp_path.glob("paysuite-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "paysuite_core/spec/openapi.yaml",
        "paysuite_core/schemas/target.schema.json",  # package data: editors and validation read it
        "conformance/suite/idempotency.py",
        "conformance/plugin.py",
        "load/locustfile.py",
        "paysuite_core/launcher.py",
        "paysuite/clients/paypack_js_driver.js",  # package data: `paysuite clients` runs it
        "paysuite/clients/paypack_py_driver.py",
        # package data: every HTML report is one of these templates
        *(
            f"paysuite_core/report_engine/templates/{name}"
            for name in "base.html conform.html exchange.html proxy.html load.html chart.svg "
            "demo.html report.css".split()
        ),
    ):
        assert required in names, f"{required} is missing from the wheel"
    assert not [name for name in names if name.startswith("benchmarks/")]
