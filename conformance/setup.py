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

    @classmethod
    def from_pytest(cls, config: Any) -> Options:
        try:
            only = parse_only(config.getoption("conformance_only"))
        except UnknownCheckError as exc:
            raise SetupError(str(exc)) from None
        return cls(
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


#: Keys the target configuration knows, per level: a typo must not pass silently.
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


def prepare(options: Options) -> Prepared:
    """Load the configuration or start the bundled stub, then make sure the target answers."""
    if options.target is None and options.config is None:
        return start_bundled_stub()
    config = load_config(options)
    if config is not None:
        base_url = config.base_url
    else:
        assert options.target is not None
        parts = urlsplit(options.target)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SetupError(f"--target: expected an http(s) URL, got {options.target!r}")
        base_url = options.target.rstrip("/")
    check_reachable(base_url)
    return Prepared(config=config, base_url=base_url)


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
