"""WEBHOOK-007, -008 and -009 fail on a sender that numbers its attempts wrong, pings an
unchanged URL on a timer or retries sooner and sooner: the stub's app in this process,
delivering to paysuite's receiver, patched the way the mutation run's survivors broke it
(dispatcher.py's ``attempts + 1`` made ``+ 2`` or ``* 1``; ``pinged_url != url`` made ``is
not``, so that each re-read of the endpoints counts as a new URL; retry_policy.py's ``2.0 ** n``
made ``2.0 - n``, so that the waits shrink). Each fails its check alone; the conformant stub
passes all three (test_webhook_checks.py)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conformkit import conform
from webhookstub import FAST_RETRY, free_port

from stub_server.webhook_delivery import dispatcher, retry_policy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub, make_settings

pytestmark = pytest.mark.slow

CHECKS = ("WEBHOOK-007", "WEBHOOK-008", "WEBHOOK-009")


@pytest.fixture
def hooked_inproc(tmp_path: Path) -> Iterator[tuple[InProcessStub, Path]]:
    """The stub's app with a ``development`` endpoint at a free port, its dispatcher running,
    and its credentials file (with the ``webhooks`` section the WEBHOOK checks need)."""
    url = f"http://127.0.0.1:{free_port()}/hooks"
    settings = make_settings(webhooks={"development": url}, webhook_retry=dict(FAST_RETRY))
    instance = InProcessStub(settings, background=True)
    config = instance.write_credentials(tmp_path / "target.yaml")
    yield instance, config
    instance.close()


def _run(config: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    outcome = conform(
        capsys, tmp_path / "r", config=config, profile="reference", strict=True,
        only=",".join(CHECKS),
    )  # fmt: skip
    assert outcome.ids("error") == set(), outcome.report["checks"]
    return outcome


def _fails_alone(outcome: Any, check_id: str) -> None:
    outcomes = {c["id"]: c["outcome"] for c in outcome.report["checks"]}
    assert outcomes == {cid: "failed" if cid == check_id else "passed" for cid in CHECKS}, outcomes


@pytest.mark.parametrize("shift", [lambda n: n + 1, lambda n: n - 1], ids=["plus-2", "times-1"])
def test_a_sender_that_misnumbers_its_attempts_fails_webhook_007(
    shift: Callable[[int], int],
    hooked_inproc: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``attempts + 2`` numbers the first attempt 2; ``attempts * 1`` numbers it 0."""
    post = dispatcher.Dispatcher.post

    async def misnumbered(self, endpoint, body, event_id, attempt):  # type: ignore[no-untyped-def]
        return await post(self, endpoint, body, event_id, shift(attempt))

    monkeypatch.setattr(dispatcher.Dispatcher, "post", misnumbered)
    outcome = _run(hooked_inproc[1], tmp_path, capsys)
    _fails_alone(outcome, "WEBHOOK-007")
    message = outcome.check("WEBHOOK-007")["message"]
    assert "numbered" in message, message


def test_a_sender_that_pings_an_unchanged_url_every_poll_fails_webhook_008(
    hooked_inproc: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read = dispatcher.Dispatcher._read_endpoints

    def forgetful(self: dispatcher.Dispatcher) -> None:
        for lane in self.lanes.values():
            lane.pinged_url = None  # every re-read takes the URL for a new one
        read(self)

    monkeypatch.setattr(dispatcher.Dispatcher, "_read_endpoints", forgetful)
    outcome = _run(hooked_inproc[1], tmp_path, capsys)
    _fails_alone(outcome, "WEBHOOK-008")
    message = outcome.check("WEBHOOK-008")["message"]
    assert "HEADs in the" in message and "URL unchanged" in message, message


def test_a_sender_whose_retries_come_sooner_and_sooner_fails_webhook_009(
    hooked_inproc: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def shrinking(self: Any, failed_attempts: int) -> float:
        return float(max(0.0, self.base_s * (3 - failed_attempts)))  # 0.2, 0.1, 0 s

    monkeypatch.setattr(retry_policy.RetryPolicy, "delay_s", shrinking)
    outcome = _run(hooked_inproc[1], tmp_path, capsys)
    _fails_alone(outcome, "WEBHOOK-009")
    message = outcome.check("WEBHOOK-009")["message"]
    assert "the waits shrink" in message, message
