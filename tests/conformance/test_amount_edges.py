"""TXN-005 at a 64-bit integer's edge: 2**63 and 2**63 + 1 are refused or answered as sent, and
the reference profile takes no 5xx for them (RC-4: never a 500 on client input).

The stub's app in this process with an amount maximum past 2**63, so that only the store's own
integer limit (``SQLITE_INT``) refuses them: it passes; with that limit moved past both, the
store overflows and answers 500, which the reference profile's TXN-005 names and the seed
profile's lets pass (there the document's rule is only "never another amount").
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformkit import conform

import stub_server.rules.fields as stub_fields

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub, make_settings

CHECK = "TXN-005"


@pytest.fixture
def wide_amounts(tmp_path: Path) -> Iterator[Path]:
    """The credentials file of an in-process stub accepting amounts up to 10**20."""
    instance = InProcessStub(make_settings(amount={"min": 100, "max": 10**20}), background=False)
    yield instance.write_credentials(tmp_path / "target.yaml")
    instance.close()


def test_txn_005_refuses_a_5xx_at_the_int64_edge_in_the_reference_profile(
    wide_amounts: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = conform(capsys, tmp_path / "ok", config=wide_amounts, profile="reference", only=CHECK)
    assert kept.ids("passed") == {CHECK}, kept.report["checks"]
    monkeypatch.setattr(stub_fields, "SQLITE_INT", 2**64)
    broken = conform(capsys, tmp_path / "bad", config=wide_amounts, profile="reference", only=CHECK)
    assert broken.ids("failed") == {CHECK}, broken.report["checks"]
    message = str(broken.check(CHECK)["message"])
    for what in ("2**63", "2**63+1"):
        assert f"cashin of amount {what} answered 500, expected a 4xx (RC-4" in message, message
    assert "10**401" not in message, message
    seed = conform(capsys, tmp_path / "seed", config=wide_amounts, only=CHECK)
    assert seed.ids("passed") == {CHECK}, seed.report["checks"]
