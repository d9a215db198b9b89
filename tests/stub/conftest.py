"""Fixtures: one subprocess stub for the session (through the launcher others use), and a
factory of in-process stubs for settings, faults and variants."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from stubkit import Api, InProcessStub, make_settings

from paysuite_core.launcher import RunningStub, running_stub

#: Numbers ending in these resolve by themselves on the session stub.
SESSION_STUB_CONFIG = {
    "auto_resolve": {
        "default": {"outcome": "none", "delay_s": 0},
        "rules": [
            {"number_suffix": "0000", "outcome": "failed", "delay_s": 0.2},
            {"number_regex": "1111$", "outcome": "success", "delay_s": 0.2},
        ],
    }
}


@pytest.fixture(scope="session")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    with running_stub(
        tmp_path_factory.mktemp("session-stub"), stub_config=SESSION_STUB_CONFIG
    ) as running:
        yield running


@pytest.fixture(scope="session")
def api(stub: RunningStub) -> Iterator[Api]:
    client = Api(stub.base_url, stub.root_url, stub.config().applications)
    yield client
    client.close()


@pytest.fixture
def inproc() -> Iterator[Callable[..., InProcessStub]]:
    """``inproc(faults=[...], apps=[...], **config)``: an in-process stub, closed afterwards."""
    made: list[InProcessStub] = []

    def make(apps: Any = None, background: bool = True, **config: Any) -> InProcessStub:
        kwargs: dict[str, Any] = {"background": background}
        if apps is not None:
            kwargs["apps"] = apps
        instance = InProcessStub(make_settings(**config), **kwargs)
        made.append(instance)
        return instance

    yield make
    for instance in made:
        instance.close()


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path
