"""Before any check: the target is loaded, reachable and this API, or the bundled stub is started.

``prepare(options)`` is the one function that turns the run's ``Options`` into a ``Prepared``
target (the configuration, the base URL, a bundled stub to stop). ``conformance.runner.run``
calls it once, before pytest starts; under plain pytest the plugin calls it after collection.
Everything that can make a run impossible before any check starts raises ``SetupError`` with a
one-line reason (exit status 2).
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from conformance.options import Options, SetupError
from paysuite_core.driver.preflight import check_reachable, preflight
from paysuite_core.launcher import RunningStub
from paysuite_core.target_config import TargetConfig, TargetConfigError, load_target_config
from paysuite_core.throttle import Throttle
from paysuite_core.tls import TLSSettings, TLSSettingsError

#: Access-token lifetime given to the bundled stub: the stub's default, 15 minutes, as the
#: document's "typically". A short one (it was 2 s) expired the run's own tokens under it on a
#: busy machine (a request queued for a second or two arrived with a dead token: IDEM-005 and
#: IDEM-013 ended "refused (401)"). AUTH-008 watches the short-lived pairs the stub's sandbox
#: issues instead (the credentials file's ``short_lived_pair``).
BUNDLED_STUB_ACCESS_TTL_S = 900
#: Pending time-out given to the bundled stub (RC-18), declared in its credentials file, so that
#: LIFE-008 can watch a transaction nobody settles fail within the run, waiting for nothing: it
#: creates its transaction when the run starts, and the run lasts longer than this. Three
#: seconds leaves LIFE-007 its 1.5 s look at transactions left alone, with a margin.
BUNDLED_STUB_PENDING_TIMEOUT_S = 3
#: Refresh-token lifetime given to the bundled stub: 10 minutes, not the 5-day default. AUTH-012
#: tries a refresh token spent when the run began again at its end, to catch a target that
#: forgets its spent tokens; a clean-up that drops them some time before they expire (half an
#: hour early, say) shows only on a token that close to its expiry, which with 5 days no run's
#: token ever is. Nothing in a run keeps a refresh token that long: each check refreshes a pair
#: authorized just before, and AUTH-008, whose pairs are issued when the run starts, issues new
#: ones if those no longer refresh.
BUNDLED_STUB_REFRESH_TTL_S = 600


@dataclass
class Prepared:
    """What ``prepare`` produced: the configuration (if any), the base URL, and a stub to stop."""

    config: TargetConfig | None
    base_url: str
    #: The run's one throttle (``--max-throttle-wait``): the pre-flight's 429s count in it too.
    throttle: Throttle = field(default_factory=Throttle)
    #: The run's TLS settings, resolved once from the flags, the configuration's ``tls:`` and
    #: the environment (None: the environment's CAs or the defaults).
    tls: TLSSettings | None = None
    stub: RunningStub | None = None
    stub_dir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    def close(self) -> None:
        if self.stub is not None:
            from paysuite_core.launcher import stop_stub

            stop_stub(self.stub)
            self.stub = None
        if self.stub_dir is not None:
            self.stub_dir.cleanup()
            self.stub_dir = None


def load_config(options: Options) -> TargetConfig | None:
    """The target configuration, or ``None`` for a bare ``--target``."""
    if options.config is None:
        return None
    try:
        return load_target_config(options.config, base_url=options.target)
    except TargetConfigError as exc:
        raise SetupError(str(exc).replace("\n", " ")) from None


def resolve_tls(options: Options, config: TargetConfig | None) -> TLSSettings:
    """The run's TLS settings, resolved once: the flags over the configuration's ``tls:`` over
    ``SSL_CERT_FILE`` / ``REQUESTS_CA_BUNDLE``; a file that cannot be used is a ``SetupError``."""
    try:
        return TLSSettings.resolve(
            ca_bundle=options.ca_bundle,
            client_cert=options.client_cert,
            client_key=options.client_key,
            insecure=options.insecure,
            config=config.tls if config is not None else None,
        )
    except TLSSettingsError as exc:
        raise SetupError(str(exc)) from None


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


def check_target(
    options: Options, throttle: Throttle | None = None
) -> tuple[TargetConfig | None, TLSSettings]:
    """Everything about a given target that makes a run pointless, as ``SetupError``; and the
    run's TLS settings, resolved once for the pre-flight and every client after it.

    A ``None`` configuration means the bundled stub will be started (neither ``--target`` nor
    ``--config``).
    """
    if options.target is None and options.config is None:
        return None, resolve_tls(options, None)
    config = load_config(options)
    tls = resolve_tls(options, config)
    if config is None:
        check_reachable(target_url(options), tls=tls)
        raise SetupError(NO_APPLICATIONS)
    check_reachable(config.base_url, options.limits.connect_s, tls=tls)
    preflight(config, options.limits, throttle, tls=tls)
    return config, tls


def prepare(options: Options) -> Prepared:
    """Load the configuration or start the bundled stub, then run the pre-flight.

    The run's throttle is made here, so the pre-flight's waits count in the same budget; so
    are its TLS settings (``Prepared.tls``), which every client of the run then uses."""
    throttle = Throttle(options.max_throttle_wait_s)
    config, tls = check_target(options, throttle)
    if config is None:
        prepared = start_bundled_stub()
        prepared.throttle = throttle
        prepared.tls = tls
        assert prepared.config is not None
        try:
            preflight(prepared.config, options.limits, throttle, tls=tls)
        except BaseException:  # a refused pre-flight or Ctrl-C: the stub must not outlive it
            prepared.close()
            raise
        return prepared
    return Prepared(config=config, base_url=config.base_url, throttle=throttle, tls=tls)


def start_bundled_stub(extra_args: Sequence[str] = ()) -> Prepared:
    """A fresh stub in a temporary directory, with short token lifetimes and pending time-out,
    as the target. ``extra_args``: more ``paysuite stub`` flags (the benchmark's ``--latency``)."""
    from paysuite_core.launcher import StubStartError, start_stub

    workdir = tempfile.TemporaryDirectory(prefix="paysuite-conform-")
    try:
        stub = start_stub(
            Path(workdir.name),
            extra_args=(
                "--access-ttl", str(BUNDLED_STUB_ACCESS_TTL_S),
                "--pending-timeout", str(BUNDLED_STUB_PENDING_TIMEOUT_S),
                "--refresh-ttl", str(BUNDLED_STUB_REFRESH_TTL_S),
                *extra_args,
            ),
        )  # fmt: skip
    except StubStartError as exc:
        workdir.cleanup()
        first = str(exc).splitlines()[0]
        raise SetupError(f"the bundled stub did not start: {first}") from None
    try:
        config = stub.config()
    except TargetConfigError as exc:
        from paysuite_core.launcher import stop_stub

        stop_stub(stub)
        workdir.cleanup()
        raise SetupError(f"the bundled stub wrote an unusable credentials file: {exc}") from None
    return Prepared(config=config, base_url=config.base_url, stub=stub, stub_dir=workdir)


def write_setup_reports(options: Options, reason: str, *, stderr: TextIO | None = None) -> None:
    """junit.xml, conformance.json and report.html of a run the pre-flight stopped (ERROR).

    A CI's test-report step reads junit.xml whatever the exit status: without it the job would
    show nothing at all where it should show why nothing ran."""
    from paysuite_core.report_engine.reports import write_all
    from paysuite_core.results.verdict import Verdict

    target = options.target or ""
    if not target and options.config:
        try:
            target = load_target_config(options.config).base_url
        except (TargetConfigError, OSError):
            target = f"(the target of {options.config})"
    try:
        paths = write_all(
            [],
            verdict=Verdict.stopped(
                reason, before="any check", profile=options.profile, strict=options.strict
            ),
            report_dir=options.report_dir,
            target=target or "(the bundled stub)",
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            duration_s=0.0,
        )
    except OSError as exc:
        print(f"paysuite conform: could not write the reports: {exc}", file=stderr or sys.stderr)
        return
    print(f"reports: {', '.join(str(p) for p in paths)}", flush=True)
