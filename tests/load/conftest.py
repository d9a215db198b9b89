"""Fixtures: a stub started through the stub's launcher, shared by a module's load runs.

Every run here is loopback-only and bounded (a few seconds of load, a hard subprocess timeout).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loadkit import AUTO_RESOLVE

from paysuite_core.launcher import RunningStub, running_stub


@pytest.fixture(scope="module")
def load_stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    with running_stub(tmp_path_factory.mktemp("load-stub"), stub_config=AUTO_RESOLVE) as stub:
        yield stub
