"""No false alarm: an implementation that chose differently where the document is silent.

The stub's variants are conformant alternatives (201 on creation, ``successful``, one refresh
path, ``expires`` as a string, a smaller error body, no rotation, oldest first). The seed profile
must pass against them all at once; the reference profile must notice each one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conformkit import conform, fast_config

from stub_server.faults import VARIANTS

pytestmark = pytest.mark.slow

#: variant -> the reference check that notices it
VARIANT_TABLE: dict[str, str] = {
    "created-201": "TXN-004",
    "successful-status": "LIFE-005",
    "short-refresh-only": "AUTH-011",
    "expires-string": "AUTH-013",
    "go-error-body": "ERR-002",
    "no-rotation": "AUTH-012",
    "events-oldest-first": "EVT-008",
}


def test_table_covers_every_variant() -> None:
    assert set(VARIANT_TABLE) == set(VARIANTS)


def test_seed_passes_with_every_variant(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub(variants=tuple(VARIANTS), extra_args=("--access-ttl", "2"))
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "seed", config=config, strict=True)
    bad = [
        f"{c['id']}: {c['outcome']} {c['message'][:300]}"
        for c in outcome.report["checks"]
        if c["outcome"] in ("failed", "error")
    ]
    assert outcome.status == 0, "\n".join(bad)
    assert not outcome.ids("error") and not outcome.ids("failed")


def test_reference_flags_every_variant(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub(variants=tuple(VARIANTS))
    config = fast_config(stub, tmp_path)
    only = ",".join(sorted(set(VARIANT_TABLE.values())))
    outcome = conform(capsys, tmp_path / "ref", config=config, profile="reference", only=only)
    assert outcome.ids("failed") == set(VARIANT_TABLE.values())
    # They are SHOULD checks: the run passes without --strict and fails with it.
    assert outcome.status == 0
    strict = conform(
        capsys, tmp_path / "strict", config=config, profile="reference", only=only, strict=True
    )
    assert strict.status == 1


def test_configured_number_list_on_a_persistent_target(
    make_stub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``numbers:`` instead of a pattern, counts exclude earlier transactions: two runs
    against the same database pass (the second sees the first one's transactions)."""
    import yaml

    stub = make_stub()
    config = fast_config(stub, tmp_path)
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data.pop("number_pattern", None)
    data["numbers"] = ["0781000001", "0791000002", "0721000003"]
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    for run in ("first", "second"):
        outcome = conform(
            capsys,
            tmp_path / run,
            config=config,
            profile="reference",
            strict=True,
            only="IDEM,TXN,EVT,PRIV,AUTH-004",
        )
        bad = [
            f"{c['id']}: {c['message'][:300]}"
            for c in outcome.report["checks"]
            if c["outcome"] in ("failed", "error")
        ]
        assert outcome.status == 0, (run, bad)
        assert outcome.report["summary"]["passed"] == len(outcome.report["checks"]) >= 20
