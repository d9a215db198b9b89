"""Fixtures: a stub whose access tokens live a few seconds, a client reading it without any SDK,
and the SDK install cache (``~/.cache/paysuite`` unless ``PAYSUITE_CACHE_DIR`` says otherwise)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clientkit import ACCESS_TTL_S, Direct

from paysuite.clients import cache
from paysuite_core.launcher import RunningStub, running_stub


@pytest.fixture(scope="session")
def short_stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    workdir = tmp_path_factory.mktemp("clients-stub")
    with running_stub(workdir, extra_args=["--access-ttl", str(ACCESS_TTL_S)]) as running:
        yield running


@pytest.fixture(scope="session")
def direct(short_stub: RunningStub) -> Iterator[Direct]:
    client = Direct(short_stub)
    yield client
    client.http.close()


@pytest.fixture(scope="session")
def cache_dir() -> Path:
    return cache.default_cache_dir()
