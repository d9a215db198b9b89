"""Issue 34: the product names ``Any`` at most once per 100 lines.

Counted by Python's tokenizer: the name ``Any`` in code (an import, an annotation, ``typing.Any``),
never the word in a comment or a string; lines are every line of the package's ``.py`` files.
"""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("paysuite_core", "paysuite", "stub_server", "conformance", "load", "proxy")
#: ``Any`` per 100 product lines, at most (httpx's is about 0.8).
LIMIT = 1.0


def any_names(source: bytes) -> int:
    """How many times ``source`` names ``Any`` as code."""
    tokens = tokenize.tokenize(io.BytesIO(source).readline)
    return sum(1 for t in tokens if t.type == tokenize.NAME and t.string == "Any")


def figures(root: Path = ROOT) -> dict[str, tuple[int, int]]:
    """(``Any`` names, lines) of each product package."""
    found = {}
    for package in PRODUCT:
        sources = [path.read_bytes() for path in sorted((root / package).rglob("*.py"))]
        found[package] = (
            sum(any_names(source) for source in sources),
            sum(len(source.splitlines()) for source in sources),
        )
    return found


def test_the_count_is_of_code_not_comments_or_strings(tmp_path: Path) -> None:
    source = (
        b'"""Any docstring saying Any."""\n'
        b"import typing\n"
        b"from typing import Any  # Any here is a comment\n"
        b'x: dict[str, Any] = {"Any": typing.Any}\n'
        b"AnyStr = 'Any'\n"
    )
    assert any_names(source) == 3
    for package in PRODUCT:
        (tmp_path / package / "sub").mkdir(parents=True)
    (tmp_path / "conformance" / "sub" / "m.py").write_bytes(source)
    (tmp_path / "load" / "n.py").write_bytes(b"y = 1\n")
    found = figures(tmp_path)
    assert found["conformance"] == (3, 5)
    assert found["load"] == (0, 1)
    assert found["proxy"] == (0, 0)


def test_every_product_package_is_counted() -> None:
    found = figures()
    assert all(lines > 0 for _, lines in found.values()), found
    assert sum(lines for _, lines in found.values()) > 20_000


def test_any_is_named_at_most_once_per_hundred_product_lines() -> None:
    found = figures()
    names = sum(count for count, _ in found.values())
    lines = sum(lines for _, lines in found.values())
    shown = ", ".join(
        f"{package} {count}/{size} ({100 * count / size:.2f})"
        for package, (count, size) in found.items()
    )
    assert 100 * names / lines <= LIMIT, (
        f"Any {names} times in {lines} product lines: {100 * names / lines:.2f} per 100, "
        f"over {LIMIT}; per package (Any/lines, per 100): {shown}"
    )
