"""No false alarm: implementations that chose differently where the document is silent.

The stub's variants are conformant alternatives; ``live`` does everything the live service does
at once (docs/reference-choices.md), ``lenient`` is lenient wherever the document is silent.
Each must pass the seed profile with ``--strict`` (the history phase over the variants is
test_history_sweep.py's); the reference profile must name
each difference, and only those (``Variant.differs_on``, kept beside the variants).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conformkit import conform, fast_config

from paysuite_core.launcher import RunningStub
from stub_server.fault_catalog import VARIANTS

pytestmark = pytest.mark.slow

SIMPLE = tuple(name for name, variant in VARIANTS.items() if not variant.parts)
COMPOSITES = tuple(name for name, variant in VARIANTS.items() if variant.parts)


def test_every_variant_names_what_tells_it_apart() -> None:
    assert {"live", "lenient"} <= set(COMPOSITES)
    assert all(VARIANTS[name].differs_on or VARIANTS[name].noted_by for name in SIMPLE)


@pytest.mark.parametrize(
    "variants", [SIMPLE, ("live",), ("lenient",)], ids=["simple", "live", "lenient"]
)
def test_seed_strict_passes(
    variants: tuple[str, ...],
    make_stub: Callable[..., RunningStub],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    stub = make_stub(variants=variants, extra_args=("--access-ttl", "2"))
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "seed", config=config, strict=True)
    bad = [
        f"{c['id']}: {c['outcome']} {c['message'][:300]}"
        for c in outcome.report["checks"]
        if c["outcome"] in ("failed", "error")
    ]
    assert outcome.status == 0, "\n".join(bad)
    assert outcome.report["verdict"] == "pass" and outcome.report["coverage"]["ratio"] == 1.0


def test_reference_flags_every_simple_variant(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub(variants=SIMPLE)
    config = fast_config(stub, tmp_path)
    expected = frozenset().union(*(VARIANTS[name].differs_on for name in SIMPLE))
    only = ",".join(sorted(expected))
    outcome = conform(capsys, tmp_path / "ref", config=config, profile="reference", only=only)
    assert outcome.ids("failed") == set(expected)
    # They are SHOULD checks: the run passes without --strict and fails with it.
    assert outcome.status == 0
    strict = conform(
        capsys, tmp_path / "strict", config=config, profile="reference", only=only, strict=True
    )
    assert strict.status == 1


@pytest.mark.parametrize("name", COMPOSITES)
def test_reference_names_each_difference_of_a_composite(
    name: str,
    make_stub: Callable[..., RunningStub],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The whole reference profile against ``live`` / ``lenient``: exactly its differences fail."""
    stub = make_stub(variants=(name,), extra_args=("--access-ttl", "2"))
    config = fast_config(stub, tmp_path)
    outcome = conform(capsys, tmp_path / "ref", config=config, profile="reference")
    assert outcome.ids("failed") == set(VARIANTS[name].differs_on), outcome.report["checks"]
    assert not outcome.ids("error")
    auth006 = outcome.check("AUTH-006")
    assert "bare token" in auth006["note"] and "accepted" in auth006["note"]


def test_configured_number_list_on_a_persistent_target(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
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
