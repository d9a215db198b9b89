"""The credentials file: the stub's applications in the target-configuration format.

The secrets exist in clear only when the applications are created (on a database without any),
so on later starts an existing file is kept and only its addresses and declared limits are
rewritten; if it is missing or names none of the database's applications, a fresh set is
created so the file always works. With webhook endpoints, the file also gets a ``webhooks``
section (RC-40): the stub signs with the secret, so it can always write it.
"""

from __future__ import annotations

import contextlib
import tempfile
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

from paysuite_core.target_config import (
    AmountRange,
    Application,
    CustomerDriver,
    HttpAction,
    Privilege,
    ShortLivedPair,
    TargetConfig,
    TargetConfigError,
    WebhookTarget,
    load_target_config,
    write_target_config,
)
from stub_server import timefmt
from stub_server.settings import CREDENTIALS_NAME, StubSettings
from stub_server.store import DEFAULT_MODE, Store, WebhookEndpoint
from stub_server.store.private_files import on_disk
from stub_server.token_issuer import SHORT_LIVED_ACCESS_TTL_S, SHORT_LIVED_PATH

DEFAULT_MERCHANT = "DEMO01"
SECOND_MERCHANT = "DEMO02"
BOOTSTRAP_APPS: tuple[tuple[str, Privilege], ...] = (
    (DEFAULT_MERCHANT, "read"),
    (DEFAULT_MERCHANT, "read-write"),
    (DEFAULT_MERCHANT, "cashin"),
    (DEFAULT_MERCHANT, "cashout"),
    (SECOND_MERCHANT, "read-write"),
)
HEADER = (
    "paysuite stub credentials: a target configuration for `paysuite conform --config` and\n"
    "`paysuite load --config`. The client secrets exist nowhere else (the stub keeps hashes)."
)


def credentials_path(settings: StubSettings) -> Path:
    """Where the file goes: --credentials, else beside the database, else a temp dir."""
    if settings.credentials:
        return Path(settings.credentials).resolve()
    if not on_disk(settings.db):
        return Path(tempfile.mkdtemp(prefix="paysuite-stub-")) / CREDENTIALS_NAME
    return Path(settings.db).resolve().parent / CREDENTIALS_NAME


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def write_credentials(store: Store, settings: StubSettings, root_url: str, path: Path) -> Path:
    """Create or update the credentials file for a stub serving at ``root_url``."""
    applications: tuple[Application, ...] = ()
    if path.exists():
        with contextlib.suppress(TargetConfigError):  # an unreadable file is written afresh
            existing = load_target_config(path, env={}).applications
            applications = tuple(app for app in existing if store.app(app.client_id) is not None)
    if not applications:
        created = []
        for merchant, privilege in BOOTSTRAP_APPS:
            client_id, secret = store.create_app(merchant, privilege, timefmt.now_us())
            created.append(Application(client_id, secret, privilege, merchant))
        applications = tuple(created)
    customer = CustomerDriver(driver="none", timeout_s=30)
    short_lived = None
    if settings.sandbox:
        customer = CustomerDriver(
            driver="sandbox",
            confirm=HttpAction("POST", f"{root_url}/_sandbox/transactions/{{ref}}/confirm"),
            cancel=HttpAction("POST", f"{root_url}/_sandbox/transactions/{{ref}}/cancel"),
            timeout_s=30,
        )
        # AUTH-008 watches the sandbox's short-lived pairs expire: the configured lifetime (15
        # minutes by default) is too long to wait out, and a short one would expire under a run.
        action = HttpAction("POST", f"{root_url}{SHORT_LIVED_PATH}")
        short_lived = ShortLivedPair(action, SHORT_LIVED_ACCESS_TTL_S)
    config = TargetConfig(
        base_url=f"{root_url}/api",
        applications=applications,
        customer=customer,
        access_token_ttl_s=settings.access_ttl_s,
        max_wait_s=30,
        number_pattern=settings.number_pattern,
        amount=AmountRange(min=settings.amount_min, max=settings.amount_max),
        refresh_rotation=not settings.variant("no-rotation"),  # RC-10: a refresh token works once
        fee_rate=settings.fee_rate,  # RC-15
        pending_timeout_s=settings.pending_timeout_s,  # RC-18: LIFE-008 waits for it when short
        webhooks=webhook_target(store.webhook_endpoints(), settings.webhook_retry_base_s),
        short_lived_pair=short_lived,
    )
    return write_target_config(replace(config), path, header=HEADER)


def webhook_target(
    endpoints: list[WebhookEndpoint], retry_base_s: float | None = None
) -> WebhookTarget | None:
    """For the endpoint of mode ``development``, else the first; with the first retry wait
    the settings chose, where they chose one (RC-40's 1 s otherwise, which goes undeclared)."""
    if not endpoints:
        return None
    chosen = next((e for e in endpoints if e.mode == DEFAULT_MODE), endpoints[0])
    parts = urlsplit(chosen.url)
    return WebhookTarget(
        listen_host=parts.hostname or "127.0.0.1",
        listen_port=parts.port or (443 if parts.scheme == "https" else 80),
        url=chosen.url,
        secret=chosen.secret,
        mode=chosen.mode,
        retry_base_s=retry_base_s,
    )
