"""Locate and load ``spec/openapi.yaml``, whether paysuite runs from a checkout or an install."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

SPEC_FILENAME = "openapi.yaml"


def spec_path() -> Path:
    """Path of the OpenAPI document.

    Installed, it is the package data of ``paysuite_core.spec`` (``pyproject.toml`` maps ``spec/``
    there). Run from a checkout, the source ``paysuite_core/`` package can shadow the installed
    one (``python -m paysuite`` puts the current folder first on ``sys.path``) and has no ``spec``
    subpackage: then the checkout's own ``spec/`` is the document.
    """
    try:
        return Path(str(resources.files("paysuite_core.spec") / SPEC_FILENAME))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[1] / "spec" / SPEC_FILENAME


@cache
def _load_spec_cached() -> dict[str, Any]:
    with spec_path().open(encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    if not isinstance(document, dict):
        raise ValueError(f"{spec_path()} is not an OpenAPI document (not a mapping)")
    return document


def load_spec(*, extensions: bool = False) -> dict[str, Any]:
    """A fresh deep copy of the parsed document, so callers may patch it freely.

    Paths marked ``x-extension: true`` (routes the published SDKs call that the interface
    document does not have) are left out unless ``extensions`` is true: whatever consumes the
    spec by default (the conformance suite's property phase) then never demands them.
    """
    import copy

    spec = copy.deepcopy(_load_spec_cached())
    if not extensions:
        paths = spec.get("paths") or {}
        for path in [p for p, item in paths.items() if _is_extension(item)]:
            del paths[path]
    return spec


def _is_extension(item: object) -> bool:
    """A path item whose every operation is an extension."""
    if not isinstance(item, dict):
        return False
    operations = [op for op in item.values() if isinstance(op, dict) and "responses" in op]
    return bool(operations) and all(op.get("x-extension") is True for op in operations)
