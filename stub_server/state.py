"""``StubApp``: what every handler reads, resolved once at start so that a request reads plain
attributes. Variants are resolved here; faults are not: ``RuleHooks`` holds the points where a
rule can be replaced, with the document's rule as each default, and ``fault_injection`` replaces
the ones the run's faults break, so no handler asks which fault is on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter

from stub_server import signing_key, timefmt
from stub_server.errors import InFlight
from stub_server.filters import DEFAULT_LIMIT
from stub_server.ratelimit import AuthorizeGuard
from stub_server.rules import lifecycle, privileges, request_body
from stub_server.rules.idempotency import GLOBAL_KEY_SCOPE, KeyRule, Persist, strict_insert
from stub_server.rules.rendering import Renderer
from stub_server.settings import StubSettings
from stub_server.store import AppRecord, Store, WebhookEndpoint, uuid4_text
from stub_server.token_issuer import TokenService
from stub_server.webhook_delivery.dispatcher import DeliveryHooks
from stub_server.webhook_delivery.endpoints import sync_configured

#: The ``page-size-10`` behaviour's default page size (variant ``lenient``).
LENIENT_DEFAULT_LIMIT = 10


def _as_given(status: str | None) -> str | None:
    return status


@dataclass
class RuleHooks:
    persist: Persist
    #: Token ``sub`` values a protected operation accepts (Authentication, 1).
    access_subs: tuple[str, ...] = ("access",)
    #: When set, an access token older than this is refused even before its ``exp``.
    access_max_age_s: float | None = None
    #: The exception for a body that is not JSON (Errors, rule 2).
    malformed_json: Callable[[], Exception] = request_body.malformed_json
    #: Whether a privilege may create a kind (Authentication, 5).
    may_create: privileges.MayCreate = privileges.may_create
    #: The kind a creation stores and answers, from the kind its endpoint names.
    stored_kind: Callable[[str], str] = str
    #: A new transaction's ref (Resources and their fields: unique).
    new_ref: Callable[[], str] = uuid4_text
    #: The merchant whose data a read may see (RC-6, ISO-*); None sees every merchant.
    visible_merchant: Callable[[AppRecord], str | None] = attrgetter("merchant")
    #: The events list's status filter as applied.
    status_filter: Callable[[str | None], str | None] = _as_given
    #: How a sandbox action settles a pending transaction, and the status of each action.
    sandbox_settle: lifecycle.Settle = lifecycle.settle
    #: Whether a sandbox action may settle a transaction in this status (only pending).
    may_settle: Callable[[str], bool] = lifecycle.is_pending
    sandbox_outcomes: Mapping[str, str] = field(
        default_factory=lambda: dict(lifecycle.SANDBOX_OUTCOMES)
    )
    #: Whether processing records its ``transaction:processed`` event.
    record_processed_event: bool = True
    #: Whether the simulated customer and the pending time-out run at all.
    resolve_in_background: bool = True


class StubApp:
    def __init__(self, settings: StubSettings, store: Store | None = None) -> None:
        self.settings = settings
        self.store = store or Store(settings.db)
        self.tokens = TokenService(
            signing_key.resolve(settings.jwt_key, settings.db),
            settings.access_ttl_s,
            settings.refresh_ttl_s,
            link_pairs=settings.variant("revoke-on-refresh"),
        )
        self.number_regex = settings.number_regex
        # Variants and their behaviours, resolved once so that handlers read plain attributes.
        variant = settings.variant
        self.render = Renderer(
            tz=settings.tz, success_text="successful" if variant("successful-status") else "success"
        )
        if variant("nanosecond-timestamps"):
            self.render.utc_text = timefmt.utc_text_ns
            self.render.offset_text = timefmt.offset_text_ns
        self.creation_status = 201 if variant("created-201") else 200
        self.rotate_refresh = not variant("no-rotation")
        #: A used refresh token revokes the access token of its pair (``link_pairs`` above).
        self.revoke_on_refresh = variant("revoke-on-refresh")
        self.expires_string = variant("expires-string")
        self.oldest_first = variant("events-oldest-first")
        #: ``Authorization: <token>`` without ``Bearer `` (paypack-js sends it so, RC-33).
        self.accept_bare_token = not settings.strict_auth or variant("bare-token")
        self.omit_empty_envelope = variant("envelope-omitempty")
        self.lenient_filters = variant("lenient-filters")
        self.any_media_type = variant("any-media-type")
        self.keys = KeyRule(empty_is_absent=variant("empty-key-absent"))
        self.default_limit = LENIENT_DEFAULT_LIMIT if variant("page-size-10") else DEFAULT_LIMIT
        self.global_key_scope = GLOBAL_KEY_SCOPE if variant("global-keys") else None
        self.hooks = RuleHooks(persist=strict_insert(self.store))
        #: The webhook dispatcher's rule hooks, which the ``webhook-*`` faults replace.
        self.webhook_hooks = DeliveryHooks(signature_formats=settings.webhook_signatures)
        #: Endpoints of the config file created by this start: their secrets, shown once.
        self.new_webhook_endpoints: list[WebhookEndpoint] = sync_configured(
            self.store, settings.webhooks, timefmt.now_us()
        )
        self._apps: dict[str, AppRecord] = {}
        self.verified_secrets: dict[str, bytes] = {}
        self.in_flight = InFlight()
        self.auth_guard = AuthorizeGuard(settings.authorize_limits)

    def app_record(self, client_id: str) -> AppRecord | None:
        """Cached: applications never change."""
        record = self._apps.get(client_id)
        if record is None:
            record = self.store.app(client_id)
            if record is not None:
                self._apps[client_id] = record
        return record


class Handlers:
    """A group of the stub's endpoints (``handlers/``): each method answers one route, over the
    one running stub."""

    def __init__(self, stub: StubApp) -> None:
        self.stub = stub
