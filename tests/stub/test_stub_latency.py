"""``paysuite stub --latency``: every answer comes back at least that late, errors and the
sandbox included, and the duration is written as every other paysuite duration is."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
from stubkit import InProcessStub

from paysuite.cli import build_parser
from paysuite_core.durations import parse_duration
from stub_server.cli import settings_from_args

LATENCY_S = 0.2


def _elapsed(send: Callable[[], httpx.Response]) -> tuple[float, httpx.Response]:
    started = time.monotonic()
    response = send()
    return time.monotonic() - started, response


def test_every_answer_is_held_back_by_the_latency(
    inproc: Callable[..., InProcessStub],
) -> None:
    stub = inproc(latency_s=LATENCY_S)
    api = stub.api
    with httpx.Client(timeout=10) as client:
        calls: dict[str, Callable[[], httpx.Response]] = {
            "authorize": lambda: api.authorize(api.app()),
            "cashin": lambda: api.create("cashin"),
            "an unknown route (404)": lambda: client.get(f"{stub.root_url}/api/nowhere"),
            "healthz": lambda: client.get(f"{stub.root_url}/healthz"),
        }
        for what, send in calls.items():
            elapsed, response = _elapsed(send)
            assert response.status_code < 500, (what, response.text)
            assert elapsed >= LATENCY_S, f"{what} answered after {elapsed:.3f} s"


def test_without_latency_nothing_is_held_back(inproc: Callable[..., InProcessStub]) -> None:
    """The middleware is not installed at all: the fast path stays as fast as before."""
    stub = inproc()
    names = [getattr(m, "__name__", "") for m in stub.runner.app.middlewares]
    assert "latency_middleware" not in names
    assert "latency_middleware" in [
        getattr(m, "__name__", "") for m in inproc(latency_s=0.01).runner.app.middlewares
    ]


@pytest.mark.parametrize(
    ("text", "seconds"), [("80ms", 0.08), ("0.2s", 0.2), ("1s500ms", 1.5), ("2", 2.0)]
)
def test_the_flag_takes_a_duration(text: str, seconds: float) -> None:
    args = build_parser().parse_args(["stub", "--latency", text])
    assert settings_from_args(args).latency_s == pytest.approx(seconds)
    assert parse_duration(text) == pytest.approx(seconds)


def test_a_bad_latency_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["stub", "--latency", "soon"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "--latency" in err and "'soon' is not a duration" in err
    assert "Traceback" not in err


def test_a_negative_latency_in_the_config_file_is_refused() -> None:
    from stub_server.settings import SettingsError, settings_from_mapping

    with pytest.raises(SettingsError, match="latency_s"):
        settings_from_mapping({"latency_s": -1})
