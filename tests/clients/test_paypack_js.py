"""paypack-js 0.2.x from npm, unchanged, through the ``paysuite clients`` driver: every public
method against the stub, compared with what the stub stored; then the refresh after expiry as
far as the SDK's own code allows.

npm installs the SDK into the paysuite cache folder on first use; the test skips (with npm's
reason) only when node or npm is missing or the registry is unreachable.
"""

from __future__ import annotations

import pytest
from clientkit import EXPIRY_WAIT_S, assert_matches_the_stub, fresh_number, job_for

from paysuite.clients import cache, matrix

#: One worker runs the SDK tests: they share the SDK cache (an npm install) and one stub.
pytestmark = pytest.mark.xdist_group("sdk-clients")


@pytest.fixture(scope="module")
def js_installed(cache_dir) -> None:
    installed = cache.paypack_js(cache_dir)
    if installed.skip:
        pytest.skip(f"paypack-js unavailable: {installed.skip}")


def test_every_public_method_matches_the_stub(js_installed, short_stub, direct, cache_dir) -> None:
    number = fresh_number("079")
    job = job_for(short_stub, number, expiry_wait_s=EXPIRY_WAIT_S)
    column = matrix.run_paypack_js(job, cache_dir)
    assert column.version.startswith("0.2.")
    assert_matches_the_stub(column, direct, number, job["amount"])
    got = column.cells
    assert got["refresh"]["ok"] is None  # no public refresh method
    # After expiry: the SDK's 401 handler fires the refresh without awaiting it and retries with
    # the old token (build/http.js, refreshAccessToken: `axiosInstance.get(...)` not returned),
    # so this call fails, with the stub's 401 underneath the SDK's own error ...
    after = got["find after expiry"]
    assert after["ok"] is False and after["detail"].startswith("401 token_expired"), after
    # ... while the refresh itself went through: rotated, the old token spent, and the next
    # call works with the new pair.
    state = column.state
    assert state["refresh_before"] != state["refresh_after"]
    spent = direct.refresh(state["refresh_before"])
    assert spent is not None and spent.status == 401 and spent.json()["code"] == "invalid_token"
    later = got["find after refresh"]
    assert later["ok"] is True, later["detail"]
    assert later["data"] == direct.get(f"/transactions/find/{got['cashin']['data']['ref']}")
