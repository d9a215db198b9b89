"""The spec is found installed and from a checkout whose source package shadows the install."""

from __future__ import annotations

from pathlib import Path

import pytest

from paysuite_core import specfile


def test_spec_path_points_at_the_document() -> None:
    assert specfile.spec_path().is_file()
    assert specfile.load_spec()["openapi"].startswith("3.1")


def test_checkout_spec_is_used_when_the_source_tree_shadows_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``python -m paysuite`` in a checkout imports its source tree: no ``paysuite_core.spec``."""

    def no_spec_package(name: str) -> None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    monkeypatch.setattr(specfile.resources, "files", no_spec_package)
    # beside the source package that was imported: the checkout's spec/ when run from one
    source_root = Path(specfile.__file__).resolve().parents[1]
    assert specfile.spec_path() == source_root / "spec" / "openapi.yaml"
