"""How paysuite trusts a target over HTTPS: one setting for every command and client stack.

A staging deployment answers over HTTPS with a certificate from the company's own CA, sometimes
behind a gateway that demands a client certificate. Every command (conform, load, proxy, replay,
clients, webhooks) and every stack under it (httpx, requests for schemathesis and paypack-py,
aiohttp, geventhttpclient, node for paypack-js) must trust the same CAs and present the same
client certificate, or one command passes where another fails for a reason nobody sees. So the
settings are resolved once, here, in this order:

1. ``--ca-bundle`` / ``--client-cert`` / ``--client-key`` / ``--insecure`` on the command line;
2. the ``tls:`` section of the target configuration (paths relative to that file);
3. ``SSL_CERT_FILE``, then ``REQUESTS_CA_BUNDLE``, for the CA bundle (the usual variables, each
   honoured by every stack, not only by the one that reads it natively);
4. otherwise the certifi bundle every Python HTTP library here uses by default.

Verification is on unless ``--insecure`` says otherwise, and an insecure run says so in its
verdict line and reports (``TLSSettings.describe``). A failed handshake is one line naming the
host, the cause and the option that fixes it (``explain``).
"""

from __future__ import annotations

import argparse
import functools
import os
import ssl
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from paysuite_core.usage import UsageError

#: The environment variables read for a CA bundle when none is given, in this order.
CA_BUNDLE_VARIABLES = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE")
#: What a node process (paypack-js's driver) reads for each setting.
_NODE_VARIABLES = {
    "ca_bundle": "PAYSUITE_CA_BUNDLE",
    "client_cert": "PAYSUITE_CLIENT_CERT",
    "client_key": "PAYSUITE_CLIENT_KEY",
    "insecure": "PAYSUITE_INSECURE",
}


class TLSSettingsError(UsageError, ValueError):
    """A TLS option cannot be used (a missing or unreadable file); the message is one line."""


@dataclass(frozen=True)
class TLSSettings:
    """What to trust and what to present; ``ca_bundle`` is already resolved (flag, config or
    environment), so every stack built from one instance trusts exactly the same CAs."""

    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    insecure: bool = False

    # --- building ------------------------------------------------------------------------
    @classmethod
    def resolve(
        cls,
        *,
        ca_bundle: str | None = None,
        client_cert: str | None = None,
        client_key: str | None = None,
        insecure: bool = False,
        config: Mapping[str, Any] | TLSSettings | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> TLSSettings:
        """The run's settings: command-line values over the configuration's ``tls:`` section
        over the environment. Raises ``TLSSettingsError`` for a file that cannot be read."""
        section: Mapping[str, Any] = (
            asdict(config) if isinstance(config, TLSSettings) else (config or {})
        )
        env = os.environ if environ is None else environ
        bundle = ca_bundle or section.get("ca_bundle") or _from_environment(env)
        settings = cls(
            ca_bundle=bundle or None,
            client_cert=client_cert or section.get("client_cert") or None,
            client_key=client_key or section.get("client_key") or None,
            insecure=bool(insecure or section.get("insecure", False)),
        )
        settings.check_files()
        return settings

    @classmethod
    def from_args(cls, args: argparse.Namespace, config: object = None) -> TLSSettings:
        """From the flags ``cli_flags.TLS`` declared (and a target configuration's ``tls``)."""
        return cls.resolve(
            ca_bundle=getattr(args, "ca_bundle", None),
            client_cert=getattr(args, "client_cert", None),
            client_key=getattr(args, "client_key", None),
            insecure=bool(getattr(args, "insecure", False)),
            config=getattr(config, "tls", None) if config is not None else None,
        )

    def check_files(self) -> None:
        if self.client_key and not self.client_cert:
            raise TLSSettingsError("--client-key needs --client-cert (the certificate it signs)")
        for flag, path in (
            ("--ca-bundle", self.ca_bundle),
            ("--client-cert", self.client_cert),
            ("--client-key", self.client_key),
        ):
            if path is not None and not Path(path).is_file():
                raise TLSSettingsError(f"{flag}: no such file: {path}")
        try:
            self.ssl_context()
        except (ssl.SSLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or str(exc)
            raise TLSSettingsError(f"the TLS files cannot be loaded: {reason}") from None

    def to_dict(self) -> dict[str, object]:
        """A plain form (Locust's workers receive it in the load plan)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TLSSettings:
        return cls(**dict(data or {}))

    # --- one context, every stack --------------------------------------------------------
    def ssl_context(self) -> ssl.SSLContext:
        """The client context every asyncio, httpx and aiohttp client uses (built once)."""
        return _context(self)

    def requests_verify(self) -> bool | str:
        """requests' ``verify`` (schemathesis, paypack-py): False, or the bundle's path."""
        if self.insecure:
            return False
        return self.ca_bundle or _certifi_bundle()

    def requests_cert(self) -> tuple[str, str] | str | None:
        """requests' ``cert``: the client certificate (and key), or None."""
        if self.client_cert is None:
            return None
        return (self.client_cert, self.client_key) if self.client_key else self.client_cert

    def node_environment(self) -> dict[str, str]:
        """The variables a node process (paypack-js's driver) reads for the same settings."""
        given = ((name, getattr(self, key)) for key, name in _NODE_VARIABLES.items())
        return {name: "1" if value is True else value for name, value in given if value}

    def describe(self) -> str:
        """How certificates are judged, for a report's header and an insecure verdict line."""
        if self.insecure:
            return "INSECURE: TLS certificates not verified (--insecure)"
        trust = f"CA bundle {self.ca_bundle}" if self.ca_bundle else "the default CAs"
        client = f", client certificate {self.client_cert}" if self.client_cert else ""
        return f"TLS verified against {trust}{client}"


def _from_environment(env: Mapping[str, str]) -> str | None:
    return next((env[name] for name in CA_BUNDLE_VARIABLES if env.get(name)), None)


def _certifi_bundle() -> str:
    import certifi

    return str(certifi.where())


def client_context(
    settings: TLSSettings, create: Callable[..., ssl.SSLContext] = ssl.create_default_context
) -> ssl.SSLContext:
    """The context the settings describe, made by ``create`` (gevent's for its own sockets)."""
    context = create(cafile=settings.ca_bundle or _certifi_bundle())
    if settings.client_cert:
        context.load_cert_chain(settings.client_cert, settings.client_key)
    if settings.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


_context = functools.cache(client_context)


# --- what went wrong, in one line ----------------------------------------------------------
_VERIFY_CAUSES = {
    2: "its certificate's issuer is unknown",
    9: "its certificate is not yet valid",
    10: "its certificate has expired",
    18: "its certificate is self-signed",
    19: "its certificate comes from a CA that is not trusted (a private CA?)",
    20: "its certificate comes from a CA that is not trusted (a private CA?)",
    21: "its certificate comes from a CA that is not trusted (a private CA?)",
    62: "its certificate is not for this host name",
    64: "its certificate is not for this IP address",
}
_NAME_CODES = (62, 64)
_FIX_TRUST = "give the CA that signed it with --ca-bundle PEM (or tls.ca_bundle)"
_FIX_NAME = "reach it by a name its certificate lists, or --insecure"
_FIX_DATE = "renew the certificate, or --insecure"


def explain(exc: BaseException, url: str) -> str | None:
    """One line for a TLS failure anywhere in ``exc``'s chain (None: not a TLS failure):
    the host, the cause, the option that fixes it."""
    host = urlsplit(url).netloc or url
    for error in _chain(exc):
        if isinstance(error, ssl.SSLCertVerificationError):
            code = getattr(error, "verify_code", 0)
            refused = f"its certificate was refused ({error.verify_message})"
            cause = _VERIFY_CAUSES.get(code, refused)
            fix = _FIX_NAME if code in _NAME_CODES else _FIX_DATE if code in (9, 10) else _FIX_TRUST
            return f"TLS: {host}: {cause}: {fix}"
        if isinstance(error, ssl.SSLError) or "SSL" in type(error).__name__:
            return _ssl_error_line(host, error)
    text = " ".join(str(exc).split())
    return _text_line(host, text)


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < 16:
        seen.append(current)
        for arg in getattr(current, "args", ()):
            if isinstance(arg, BaseException) and arg not in seen:
                seen.append(arg)
        current = current.__cause__ or current.__context__
    return seen


def _ssl_error_line(host: str, error: BaseException) -> str | None:
    reason = str(getattr(error, "reason", "") or error)
    return _text_line(host, reason) or f"TLS: {host}: the handshake failed: {reason}"


def _text_line(host: str, text: str) -> str | None:
    upper = text.upper()
    if "CERTIFICATE_REQUIRED" in upper or "CERTIFICATE REQUIRED" in upper:
        return (
            f"TLS: {host}: the server requires a client certificate: "
            "give it with --client-cert PEM (and --client-key PEM)"
        )
    if "UNKNOWN_CA" in upper or "BAD_CERTIFICATE" in upper:
        return (
            f"TLS: {host}: the server refused the client certificate: "
            "give one its CA signed with --client-cert PEM (and --client-key PEM)"
        )
    if "CERTIFICATE_VERIFY_FAILED" in upper or "CERTIFICATE VERIFY FAILED" in upper:
        if "HOSTNAME MISMATCH" in upper or "IP ADDRESS MISMATCH" in upper:
            return f"TLS: {host}: its certificate is not for this host name: {_FIX_NAME}"
        if "EXPIRED" in upper:
            return f"TLS: {host}: its certificate has expired: {_FIX_DATE}"
        if "NOT YET VALID" in upper:
            return f"TLS: {host}: its certificate is not yet valid: {_FIX_DATE}"
        return (
            f"TLS: {host}: its certificate comes from a CA that is not trusted (a private CA?): "
            f"{_FIX_TRUST}"
        )
    if "EOF OCCURRED IN VIOLATION" in upper or "UNEXPECTED_EOF" in upper:
        return (
            f"TLS: {host}: the server closed the connection during the TLS handshake, as a "
            "gateway that requires a client certificate does: give it with --client-cert PEM "
            "(and --client-key PEM)"
        )
    if "WRONG_VERSION_NUMBER" in upper or "RECORD_LAYER_FAILURE" in upper:
        return f"TLS: {host}: it does not answer TLS on this port: use http:// or the TLS port"
    return None
