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

    Installed, it is the package data of ``paysuite.spec`` (``pyproject.toml`` maps ``spec/``
    there). Run from a checkout, the source ``paysuite/`` package can shadow the installed one
    (``python -m paysuite`` puts the current folder first on ``sys.path``) and has no ``spec``
    subpackage: then the checkout's own ``spec/`` is the document.
    """
    try:
        return Path(str(resources.files("paysuite.spec") / SPEC_FILENAME))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[1] / "spec" / SPEC_FILENAME


@cache
def _load_spec_cached() -> dict[str, Any]:
    with spec_path().open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def load_spec() -> dict[str, Any]:
    """A fresh deep copy of the parsed document, so callers may patch it freely."""
    import copy

    return copy.deepcopy(_load_spec_cached())
