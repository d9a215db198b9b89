"""AUTH-008 (access-token expiry) on a target whose ordinary lifetime is too long to wait out.

The stub runs with its default 15-minute lifetime, as the bundled stub does now (a 2 s one expired
the run's own tokens under it on a busy machine); its credentials file declares
``short_lived_pair``, the sandbox route issuing pairs whose access token lives 2 s, and AUTH-008
judges those. A target that declares nothing short enough is "not applicable", with the reason.

AUTH-020 (reference, RC-10): an access token revoked by its pair's refresh (the
``revoke-on-refresh`` variant) stays refused until it expires; it fails on a stub that forgets the
revocation with the spent refresh token, and touches nothing where the lifetimes are too long to
watch.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import yaml
from conformkit import conform, fast_config

import stub_server.handlers.auth as stub_auth
from paysuite_core.driver.http import Reply
from paysuite_core.launcher import RunningStub
from paysuite_core.results.evidence import Recorded
from paysuite_core.results.outcome import CouldNotCheck, precondition
from paysuite_core.target_config import load_target_config
from paysuite_core.tokens import AUTHORIZE_PATH
from stub_server.errors import ApiError
from stub_server.state import StubApp
from stub_server.token_issuer import Claims, TokenService

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "stub"))
from stubkit import InProcessStub, make_settings


def test_the_stub_declares_its_short_lived_pair_route(
    make_stub: Callable[..., RunningStub],
) -> None:
    """The route answers authorize's pair with an access token refused after its 2 s, while
    the ordinary authorize's token keeps the configured lifetime."""
    stub = make_stub()
    config = load_target_config(stub.credentials_path)
    assert config.access_token_ttl_s == 900
    short = config.short_lived_pair
    assert short is not None and short.access_token_ttl_s == 2
    assert config.expiry_ttl_s() == 2
    app = config.applications[0]
    body = {"client_id": app.client_id, "client_secret": app.client_secret}
    with httpx.Client() as client:
        pair = client.request(short.authorize.method, short.authorize.url_template, json=body)
        ordinary = client.post(f"{config.base_url}{AUTHORIZE_PATH}", json=body)
    assert pair.status_code == ordinary.status_code == 200
    lifetime = pair.json()["expires"] - ordinary.json()["expires"]
    assert -900 <= lifetime <= -897, (pair.json(), ordinary.json())
    wrong = {**body, "client_secret": "not-the-secret"}
    with httpx.Client() as client:
        refused = client.post(short.authorize.url_template, json=wrong)
    assert refused.status_code == 401


def test_auth_008_runs_on_the_stubs_own_credentials(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub()
    outcome = conform(capsys, tmp_path / "r", config=fast_config(stub, tmp_path), only="AUTH-008")
    assert outcome.check("AUTH-008")["outcome"] == "passed", outcome.stdout
    assert outcome.status == 0


def test_a_remembered_token_refused_400_on_expiry_fails_auth_008_reference(
    inproc_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RC-4: an expired token is 401 ``token_expired``. The stub's app in this process answers
    400 on the path of a token it verified before (its cache), 401 on a token never sent: the
    reference profile's AUTH-008 names the first, the seed profile's still passes (the document
    shows no error status, so there any 4xx refuses the token)."""
    verify = TokenService.verify

    def cached_expiry_is_400(
        self: TokenService, token: str, expected_sub: str | tuple[str, ...]
    ) -> Claims:
        cached = self._verified.get(token)
        if cached is not None and cached["exp"] <= time.time():
            raise ApiError(400, "token_expired", "the token has expired")
        return verify(self, token, expected_sub)

    monkeypatch.setattr(TokenService, "verify", cached_expiry_is_400)
    config = inproc_stub[1]
    outcome = conform(capsys, tmp_path / "r", config=config, profile="reference", only="AUTH-008")
    assert outcome.ids("failed") == {"AUTH-008"}, outcome.report["checks"]
    failed = outcome.check("AUTH-008")
    message = failed["message"]
    worked = "GET /events/transactions with an expired access token that worked fresh"
    assert f"{worked} answered 400 'token_expired', expected 401 (RC-4)" in message
    assert "never sent before" not in message, message
    assert failed["evidence"], failed
    seed = conform(capsys, tmp_path / "s", config=config, only="AUTH-008")
    assert seed.ids("passed") == {"AUTH-008"}, seed.report["checks"]


def test_auth_008_not_applicable_without_a_short_lifetime_says_why(
    make_stub: Callable[..., RunningStub], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = make_stub()
    config = fast_config(stub, tmp_path, short_lived_pair=None)
    assert yaml.safe_load(config.read_text(encoding="utf-8"))["short_lived_pair"] is None
    outcome = conform(capsys, tmp_path / "r", config=config, only="AUTH-008")
    check = outcome.check("AUTH-008")
    assert (check["outcome"], check["not_applicable"], check["severity"]) == (
        "skipped",
        True,
        "n/a",
    ), check
    reason = "access_token_ttl_s 900 exceeds max_wait_s 30 and no short_lived_pair is declared"
    assert reason in check["message"], check
    # named with its reason on the terminal without -v, in the word of every report
    (line,) = [line for line in outcome.stdout.splitlines() if "AUTH-008" in line]
    assert " n/a " in line and line.endswith(reason), outcome.stdout
    assert "0 passed, 0 failed, 0 skipped, 1 n/a" in outcome.stdout
    assert outcome.report["summary"]["not_applicable"] == 1


def _reply(status: int, body: str) -> Reply:
    exchange = Recorded.build("GET", "http://127.0.0.1:9/api/transactions/find/r1", {}, "")
    exchange.record_response(status, {"Content-Type": "application/json"}, body, 1.0)
    return Reply(
        status, httpx.Headers({"Content-Type": "application/json"}), body.encode(), exchange
    )


def test_an_unexpected_401_says_its_code() -> None:
    """A check that could not judge its rule because the target refused its token says why the
    target refused it: ``token_expired`` is a lifetime too short for the run, not a key rule."""
    expired = _reply(401, '{"status": 401, "code": "token_expired", "message": "expired"}')
    other = _reply(401, '{"status": 401, "code": "invalid_token", "message": "bad"}')
    with pytest.raises(CouldNotCheck) as caught:
        precondition(False, "every one was refused (401), twice", expired, expired, other)
    assert str(caught.value) == (
        "every one was refused (401), twice (401 code: token_expired, invalid_token)"
    )
    assert len(caught.value.proof) == 3
    # no code to say: the message is left as it was; other statuses are the check's to word
    plain = _reply(401, "{}")
    for proof in ((plain,), (_reply(403, '{"code": "forbidden"}'),), ()):
        with pytest.raises(CouldNotCheck) as caught:
            precondition(False, "refused", *proof)
        assert str(caught.value) == "refused"


# --- AUTH-020: a revoked access token stays refused until it expires ----------------------------
REVOKED = "AUTH-020"


@pytest.fixture
def revoking_stub(tmp_path: Path) -> Iterator[tuple[InProcessStub, Path]]:
    """The revoking variant with access tokens of 4 s and refresh tokens of 1 s, its background
    task on (it forgets spent refresh tokens once a second): AUTH-020 watches a revoked token
    past its refresh token's expiry until its own."""
    settings = make_settings(variants=["revoke-on-refresh"], access_ttl_s=4, refresh_ttl_s=1)
    instance = InProcessStub(settings, background=True)
    config = instance.write_credentials(tmp_path / "target.yaml")
    yield instance, config
    instance.close()


def _forgets_with_the_refresh_token(stub: StubApp, claims: Claims) -> None:
    """Rotation's record of a spent refresh token, kept only as long as that token lives: the
    revoked access token of its pair works again once the record is pruned."""
    stub.store.use_refresh(str(claims["jti"]), int(claims["exp"]))


@pytest.mark.slow
def test_auth_020_passes_on_the_revoking_stub_and_fails_when_the_revocation_is_forgotten(
    revoking_stub: tuple[InProcessStub, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = revoking_stub[1]
    kept = conform(capsys, tmp_path / "ok", config=config, profile="reference", only=REVOKED)
    assert kept.ids("passed") == {REVOKED}, kept.report["checks"]
    monkeypatch.setattr(stub_auth, "spend_refresh_token", _forgets_with_the_refresh_token)
    forgot = conform(capsys, tmp_path / "bad", config=config, profile="reference", only=REVOKED)
    assert forgot.ids("failed") == {REVOKED}, forgot.report["checks"]
    message = str(forgot.check(REVOKED)["message"])
    assert "(401 at once) was accepted" in message and "a revoked token works again" in message
    assert forgot.check(REVOKED)["evidence"]


def test_auth_020_is_not_applicable_where_revoked_tokens_outlive_the_wait(
    inproc_stub: tuple[InProcessStub, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default lifetimes (15 minutes, 5 days): nothing to watch, decided before any refresh
    (a target that revokes never has an old access token sent again)."""
    outcome = conform(
        capsys, tmp_path / "r", config=inproc_stub[1], profile="reference", only=REVOKED
    )
    check = outcome.check(REVOKED)
    assert check["not_applicable"], check
    assert "both past max_wait_s 30" in check["message"], check
    assert not [e for e in check["evidence"] if "/refresh/" in str(e)], check["evidence"]
