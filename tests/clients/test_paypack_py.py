"""paypack-py 1.0.5, unchanged, through the ``paysuite clients`` driver: every public method,
then the refresh the SDK makes by itself after its access token expired."""

from __future__ import annotations

import pytest
from clientkit import EXPIRY_WAIT_S, assert_matches_the_stub, fresh_number, job_for

from paysuite.clients import matrix

#: One worker runs the SDK tests: they share the SDK cache (an npm install) and one stub.
pytestmark = pytest.mark.xdist_group("sdk-clients")


def test_every_public_method_matches_the_stub(short_stub, direct, cache_dir) -> None:
    number = fresh_number()
    job = job_for(short_stub, number, expiry_wait_s=EXPIRY_WAIT_S)
    column = matrix.run_paypack_py(job, cache_dir)
    assert_matches_the_stub(column, direct, number, job["amount"])
    got = column.cells
    # refresh(): a new pair, and the stub rotated the old refresh token away
    assert got["refresh"]["ok"] is True
    pair = got["refresh"]["data"]
    assert set(pair) == {"access", "refresh", "expires"}
    authorized = got["authorize"]["data"]
    spent = direct.refresh(authorized["refresh"])
    assert spent is not None and spent.status == 401 and spent.json()["code"] == "invalid_token"
    # after expiry the SDK's 401 handler refreshes with its stored token and retries: it works
    assert got["find after expiry"]["ok"] is True, got["find after expiry"]["detail"]
    assert got["find after expiry"]["data"] == direct.get(
        f"/transactions/find/{got['cashin']['data']['ref']}"
    )
    state = column.state
    assert state["refresh_before"] == pair["refresh"] != state["refresh_after"]
    reused = direct.refresh(state["refresh_before"])
    assert reused is not None and reused.status == 401  # the SDK's refresh went through the stub
