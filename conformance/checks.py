"""``@check("ID")``: ties a test to its catalog entry (and fails at import for an unknown ID)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

from conformance import catalog

F = TypeVar("F", bound=Callable[..., object])


def check(check_id: str) -> Callable[[F], F]:
    entry = catalog.get(check_id)

    def mark(func: F) -> F:
        func.__doc__ = f"{entry.id} [{entry.level}] {entry.title}"
        return pytest.mark.conformance_check(entry.id)(func)

    return mark
