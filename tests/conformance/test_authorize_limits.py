"""AUTH-018 (reference, RC-38): authorize's attempt limit judged by its own unthrottled requests.

The check passes on the stub as it is, and fails on a stub that limits otherwise: one with no
limit to speak of, one whose ``Retry-After`` is longer than the documented limit needs (both
settings of the subprocess stub), one that counts a verified pair, one that counts a secret over
1024 characters (the stub's app in this process, with exactly that changed, as the mutation score
changes it). The seed profile, which judges foreign implementations, never runs it.

AUTH-019 (reference, RC-38) judges a 429's Retry-After whatever the limits: it passes on a limit
slower than the default and fails on one whose Retry-After is shorter than the wait, and on one
that answers the flood 500 (the stub's app in this process, its limiter swapped; the first
waits out two Retry-Afters, 4 s, in the slow tier).

Each run starts a stub and hashes a few dozen secrets (scrypt): 3 to 6 s, so all but the
quickest are in the slow tier; the full reference runs of the fast tier pass it on the stub.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conformkit import STUB_ACCESS_TTL, Outcome, conform, fast_config

from paysuite_core.launcher import RunningStub

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub

import stub_server.handlers.auth as stub_auth
import stub_server.ratelimit as stub_ratelimit
from stub_server.ratelimit import AuthorizeGuard, AuthorizeLimits, Bucket

CHECK = "AUTH-018"


def _judged(capsys: pytest.CaptureFixture[str], report_dir: Path, config: Path) -> Outcome:
    return conform(capsys, report_dir, config=config, profile="reference", only=CHECK)


def _message(outcome: Outcome) -> str:
    return str(outcome.check(CHECK)["message"])


def _stub_with_limits(
    make_stub: Callable[..., RunningStub], directory: Path, limits: dict[str, Any]
) -> RunningStub:
    directory.mkdir(parents=True, exist_ok=True)
    settings = directory / "stub-settings.yaml"
    settings.write_text(yaml.safe_dump({"authorize_limits": limits}), encoding="utf-8")
    return make_stub(extra_args=(*STUB_ACCESS_TTL, "--config", str(settings)))


@pytest.mark.slow
def test_auth_018_passes_on_the_stub_and_is_not_in_the_seed_profile(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub(extra_args=STUB_ACCESS_TTL)
    config = fast_config(stub, tmp_path)
    outcome = _judged(capsys, tmp_path / "r", config)
    assert outcome.status == 0 and outcome.ids("passed") == {CHECK}, outcome.report["checks"]
    seed = conform(capsys, tmp_path / "s", config=config, only=CHECK)
    assert CHECK not in seed.ids("passed") | seed.ids("failed"), seed.report["checks"]


@pytest.mark.slow
def test_a_stub_that_never_limits_fails_auth_018(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unlimited = {"burst": 10_000, "per_s": 100}
    stub = _stub_with_limits(
        make_stub, tmp_path / "s", {"per_client": unlimited, "per_peer": unlimited}
    )
    outcome = _judged(capsys, tmp_path / "r", fast_config(stub, tmp_path))
    assert outcome.ids("failed") == {CHECK}, outcome.report["checks"]
    assert "were never limited" in _message(outcome)


@pytest.mark.slow
def test_a_retry_after_past_the_documented_limit_fails_auth_018(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One attempt back every 10 s: the 429 asks for up to 10 s where RC-38's limit needs 1."""
    stub = _stub_with_limits(make_stub, tmp_path / "s", {"per_client": {"per_s": 0.1}})
    outcome = _judged(capsys, tmp_path / "r", fast_config(stub, tmp_path))
    assert outcome.ids("failed") == {CHECK}, outcome.report["checks"]
    asked = re.search(
        r"has Retry-After '(\d+)', expected whole seconds from 1 to 1", _message(outcome)
    )
    assert asked and int(asked.group(1)) > 1, _message(outcome)


class _Forgetful(dict[str, bytes]):
    """A record of verified pairs that keeps nothing: every authorize needs a secret check."""

    def __setitem__(self, key: str, value: bytes) -> None:
        pass


@pytest.mark.slow
def test_a_stub_that_counts_a_verified_pair_fails_auth_018(
    inproc_stub: tuple[InProcessStub, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    instance, config = inproc_stub
    instance.stub.verified_secrets = _Forgetful()
    outcome = _judged(capsys, tmp_path / "r", config)
    assert outcome.ids("failed") == {CHECK}, outcome.report["checks"]
    assert "a verified pair is never limited" in _message(outcome)


def test_a_stub_that_counts_an_over_long_secret_fails_auth_018(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A secret of 1025 characters hashed and counted like one of 1024."""
    monkeypatch.setattr(stub_auth, "MAX_SECRET_LENGTH", stub_auth.MAX_SECRET_LENGTH + 1)
    outcome = _judged(capsys, tmp_path / "r", inproc_stub[1])
    assert outcome.ids("failed") == {CHECK}, outcome.report["checks"]
    message = _message(outcome)
    assert "a client_secret of 1025 characters" in message and "answered 429" in message


# --- AUTH-019: a 429's Retry-After says when to retry, whatever the limits ----------------------
RETRY = "AUTH-019"
#: One attempt back every 2 s: Retry-After 2, not AUTH-018's default 1 (a slow limit AUTH-019
#: judges as fairly as the default one).
SLOW = Bucket(2, 0.5)


def _slow_guard(instance: InProcessStub) -> None:
    """A fresh guard with the ``SLOW`` limit and no pause before a 429: the 429 comes at once,
    so a retry after 1 s (not 2) finds the attempt still limited."""
    instance.stub.auth_guard.close()
    instance.stub.auth_guard = AuthorizeGuard(AuthorizeLimits(per_client=SLOW), tarpit_s=0)


def _retry_judged(capsys: pytest.CaptureFixture[str], report_dir: Path, config: Path) -> Outcome:
    return conform(capsys, report_dir, config=config, profile="reference", only=RETRY)


@pytest.mark.slow
def test_auth_019_passes_on_a_slow_limit_and_fails_where_retry_after_says_too_little(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A limit refilled at one attempt every 2 s passes (Retry-After 2 is waited out); the same
    limit saying ``Retry-After: 1`` fails: the attempt sent again after 1 s is still 429."""
    instance, config = inproc_stub
    _slow_guard(instance)
    passed = _retry_judged(capsys, tmp_path / "ok", config)
    assert passed.ids("passed") == {RETRY}, passed.report["checks"]
    _slow_guard(instance)  # a fresh allowance for the unknown client_id and the peer
    monkeypatch.setattr(stub_ratelimit, "_retry_after", lambda seconds: {"Retry-After": "1"})
    failed = _retry_judged(capsys, tmp_path / "short", config)
    assert failed.ids("failed") == {RETRY}, failed.report["checks"]
    assert "Retry-After: 1 had passed" in _message_of(failed, RETRY)
    assert "answered 429" in _message_of(failed, RETRY)


def test_a_flood_answered_500_fails_auth_019(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A limiter that cannot state its wait (``math.ceil`` of an infinite one) answers the
    attempt over the allowance 500, not 429: the flood never gets a 5xx (RC-4)."""
    instance, config = inproc_stub
    _slow_guard(instance)

    def unstated(seconds: float) -> dict[str, str]:
        return {"Retry-After": str(math.ceil(math.inf))}

    monkeypatch.setattr(stub_ratelimit, "_retry_after", unstated)
    outcome = _retry_judged(capsys, tmp_path / "r", config)
    assert outcome.ids("failed") == {RETRY}, outcome.report["checks"]
    assert "sent 3 times in a row, answered 500" in _message_of(outcome, RETRY)


def _message_of(outcome: Outcome, check_id: str) -> str:
    return str(outcome.check(check_id)["message"])
