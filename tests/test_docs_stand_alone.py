"""The repository stands alone: its docs, code comments and spec cite nothing outside it (the
facts they rely on about the live service are written in docs/reference-choices.md)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from paysuite_core.tokens import REFRESH_PATHS

ROOT = Path(__file__).resolve().parents[1]
#: Names of files that exist only where the project was started, never in a clone.
OUTSIDE = ("FIELD-NOTES", "shared/seed", "field notes")


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def test_no_file_cites_a_document_outside_the_repository() -> None:
    citing = []
    for path in tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if any(name.lower() in line.lower() for name in OUTSIDE):
                citing.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not [c for c in citing if not c.startswith("tests/test_docs_stand_alone.py")], citing


def test_the_live_service_s_facts_are_in_the_repository() -> None:
    text = (ROOT / "docs" / "reference-choices.md").read_text(encoding="utf-8")
    section = text.split("## What the live service does", 1)[1].split("\n## ", 1)[0]
    # the short refresh path, as REFRESH_PATHS names it with its parameter spelled out
    short_refresh = REFRESH_PATHS[1].replace("{token}", "{refresh_token}")
    for fact in ("X-Paypack-Signature", short_refresh, "900 s", "5 days"):
        assert fact in section, fact
