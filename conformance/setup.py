"""Turning the run's options into a ``Target``: configuration, the bundled stub, reachability.

Everything that can make a run impossible before any check starts lives here and raises
``SetupError`` with a one-line reason, which ``paysuite conform`` and the pytest plugin both turn
into exit status 2.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from conformance.catalog import UnknownCheckError, parse_only
from paysuite.target_config import TargetConfig, TargetConfigError, load_target_config

DEFAULT_SEED = 20261121
#: Below this share of the profile's checks run to a verdict, the gate fails: a run that skips
#: most of the catalog (no customer driver, one application) must not read as a pass.
DEFAULT_MIN_COVERAGE = 0.5
#: Access-token lifetime given to the bundled stub so that AUTH-008 can watch a token expire.
BUNDLED_STUB_ACCESS_TTL_S = 4


class SetupError(RuntimeError):
    """The run cannot start; the message is one line and says why."""


@dataclass
class Options:
    target: str | None = None
    config: str | None = None
    profile: str = "seed"
    strict: bool = False
    report_dir: str = "reports"
    only: frozenset[str] | None = None
    seed: int = DEFAULT_SEED
    min_coverage: float = DEFAULT_MIN_COVERAGE
    reveal_secrets: bool = False

    @classmethod
    def from_pytest(cls, config: Any) -> Options:
        try:
            only = parse_only(config.getoption("conformance_only"))
        except UnknownCheckError as exc:
            raise SetupError(str(exc)) from None
        return cls(
            min_coverage=parse_share(config.getoption("conformance_min_coverage", None)),
            reveal_secrets=bool(config.getoption("conformance_reveal_secrets", False)),
            target=config.getoption("conformance_target"),
            config=config.getoption("conformance_config"),
            profile=config.getoption("conformance_profile"),
            strict=bool(config.getoption("conformance_strict")),
            report_dir=config.getoption("conformance_report_dir"),
            only=only,
            seed=int(config.getoption("conformance_seed")),
        )


@dataclass
class Prepared:
    """What setup produced: the configuration (if any), the base URL, and a stub to stop."""

    config: TargetConfig | None
    base_url: str
    stub: Any = None
    stub_dir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    def close(self) -> None:
        if self.stub is not None:
            from stub_server.launcher import stop_stub

            stop_stub(self.stub)
            self.stub = None
        if self.stub_dir is not None:
            self.stub_dir.cleanup()
            self.stub_dir = None


def parse_share(text: str | float | None) -> float:
    """``--min-coverage``: ``0.8``, ``80%`` or ``80`` all mean 80 %; ``None`` is the default."""
    if text is None:
        return DEFAULT_MIN_COVERAGE
    raw = str(text).strip()
    try:
        value = float(raw.removesuffix("%"))
    except ValueError:
        raise SetupError(
            f"--min-coverage: expected a share such as 0.8 or 80%, got {raw!r}"
        ) from None
    if raw.endswith("%") or value > 1:
        value /= 100
    if not 0 <= value <= 1:
        raise SetupError(f"--min-coverage: {raw!r} is not between 0 and 100%")
    return value


def load_config(options: Options) -> TargetConfig | None:
    """The target configuration, or ``None`` for a bare ``--target``."""
    if options.config is None:
        return None
    try:
        return load_target_config(options.config, base_url=options.target)
    except TargetConfigError as exc:
        raise SetupError(str(exc).replace("\n", " ")) from None


def check_reachable(base_url: str, timeout_s: float = 10.0) -> None:
    """Any HTTP answer at all will do; no answer is exit status 2."""
    try:
        httpx.get(base_url + "/events/transactions", timeout=timeout_s)
    except httpx.HTTPError as exc:
        reason = str(exc) or type(exc).__name__
        raise SetupError(f"cannot reach the target {base_url}: {reason}") from None


def _describe(response: httpx.Response) -> str:
    """``401 application/json {"message": ...}``: enough of an answer to say what went wrong."""
    media = response.headers.get("content-type", "no Content-Type").split(";")[0]
    text = " ".join(response.text.split())
    return f"{response.status_code} {media} {text[:160]!r}"


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        body = response.json()
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def preflight(config: TargetConfig, timeout_s: float = 30.0) -> None:
    """Before any check: the target answers JSON at the API's paths and takes every application.

    A run against a server that is not this API, or with credentials the target refuses, would
    otherwise end in dozens of failures that all say the same thing in the words of other rules.
    """
    base = config.base_url
    authorize = base + "/auth/agents/authorize"
    with httpx.Client(timeout=timeout_s, follow_redirects=False) as client:
        for app in config.applications:
            who = f"application {app.client_id} ({app.privilege}, merchant {app.merchant})"
            try:
                response = client.post(
                    authorize,
                    json={"client_id": app.client_id, "client_secret": app.client_secret},
                    headers={"Accept": "application/json"},
                )
            except httpx.HTTPError as exc:
                raise SetupError(
                    f"cannot reach the target {base}: {exc or type(exc).__name__}"
                ) from None
            body = _json_object(response)
            if body is None:
                raise SetupError(
                    f"the target at {base} does not answer like this API: POST "
                    f"/auth/agents/authorize answered {_describe(response)}, not a JSON object"
                )
            if not response.is_success:
                raise SetupError(
                    f"the target refused {who}: POST /auth/agents/authorize answered "
                    f"{_describe(response)}; check client_id and client_secret in the config"
                )
            access = body.get("access")
            if not isinstance(access, str) or not access:
                raise SetupError(
                    f"authorize of {who} answered {_describe(response)} without an access token"
                )
        try:
            listing = client.get(
                base + "/events/transactions",
                headers={"Accept": "application/json", "Authorization": f"Bearer {access}"},
            )
        except httpx.HTTPError as exc:
            raise SetupError(
                f"cannot reach the target {base}: {exc or type(exc).__name__}"
            ) from None
        if _json_object(listing) is None:
            raise SetupError(
                f"the target at {base} does not answer like this API: GET /events/transactions "
                f"answered {_describe(listing)}, not a JSON object"
            )


def target_url(options: Options) -> str:
    """The base URL of ``--target``, checked to be an http(s) URL."""
    assert options.target is not None
    parts = urlsplit(options.target)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SetupError(f"--target: expected an http(s) URL, got {options.target!r}")
    return options.target.rstrip("/")


NO_APPLICATIONS = (
    "no applications configured: --target alone cannot authorize, so almost no check could run; "
    "pass --config FILE with the target's applications (README: The target configuration)"
)


def check_target(options: Options) -> TargetConfig | None:
    """Everything about a given target that makes a run pointless, as ``SetupError``.

    ``None`` means the bundled stub will be started (neither ``--target`` nor ``--config``).
    """
    if options.target is None and options.config is None:
        return None
    config = load_config(options)
    if config is None:
        check_reachable(target_url(options))
        raise SetupError(NO_APPLICATIONS)
    check_reachable(config.base_url)
    preflight(config)
    return config


def prepare(options: Options) -> Prepared:
    """Load the configuration or start the bundled stub, then run the pre-flight."""
    config = check_target(options)
    if config is None:
        prepared = start_bundled_stub()
        assert prepared.config is not None
        try:
            preflight(prepared.config)
        except SetupError:
            prepared.close()
            raise
        return prepared
    return Prepared(config=config, base_url=config.base_url)


def start_bundled_stub() -> Prepared:
    """A fresh stub in a temporary directory, with a short token lifetime, as the target."""
    from stub_server.launcher import StubStartError, start_stub

    workdir = tempfile.TemporaryDirectory(prefix="paysuite-conform-")
    try:
        stub = start_stub(
            Path(workdir.name), extra_args=("--access-ttl", str(BUNDLED_STUB_ACCESS_TTL_S))
        )
    except StubStartError as exc:
        workdir.cleanup()
        first = str(exc).splitlines()[0]
        raise SetupError(f"the bundled stub did not start: {first}") from None
    try:
        config = stub.config()
    except TargetConfigError as exc:
        from stub_server.launcher import stop_stub

        stop_stub(stub)
        workdir.cleanup()
        raise SetupError(f"the bundled stub wrote an unusable credentials file: {exc}") from None
    return Prepared(config=config, base_url=config.base_url, stub=stub, stub_dir=workdir)
