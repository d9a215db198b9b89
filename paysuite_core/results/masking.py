"""Secrets masked before anything leaves the process: the reports and the HAR file.

Every client secret, access and refresh token becomes a *stable placeholder*
(``«masked:access:3»``): the same value gets the same placeholder within a session, so the
evidence of a stateful violation (one token used twice) survives masking and ``proxy.replay`` can
bind each placeholder again. Where secrets are found: docs/proxy.md, "Secrets in what is
written". The judge sees the exchanges in clear (it reads a token's ``exp``); masking applies to
what is written, one ``Masker`` a session.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Literal
from urllib.parse import unquote, unquote_plus

from paysuite_core.exchange import Exchange, Headers
from paysuite_core.target_config import TargetConfig
from paysuite_core.tokens import REFRESH_PATHS

Kind = Literal["secret", "access", "refresh"]
KINDS: tuple[Kind, ...] = ("secret", "access", "refresh")

#: A placeholder as written: ``«masked:access:3»``. The guillemets cannot occur in a token (JWTs,
#: refresh tokens and secrets are ASCII), so a placeholder is never mistaken for a value.
PLACEHOLDER = re.compile(r"«masked:(secret|access|refresh):(\d+)»")

#: A value shorter than this is masked where it was found but not searched for elsewhere: a
#: two-letter "secret" replaced everywhere would shred every body it occurs in.
MIN_SEARCHED_LENGTH = 8

_REFRESH_PATH = re.compile(
    "(" + "|".join(re.escape(path.split("{token}")[0]) for path in REFRESH_PATHS) + ")([^/?#]+)"
)
_JSON_KEYS: dict[str, Kind] = {"client_secret": "secret", "access": "access", "refresh": "refresh"}
#: A JSON string member named as above, matched in the raw text so that masking changes nothing
#: but the value (re-serialising the body would change its bytes, and the HAR must show them).
_JSON_MEMBER = re.compile(r'("(client_secret|access|refresh)"\s*:\s*")((?:[^"\\]|\\.)*)(")')
#: The same names as a query or form parameter (a client that sends its secret in a form or a
#: token in a query string), and the OAuth spellings of the tokens.
_FORM_MEMBER = re.compile(
    r"((?:^|[?&])(client_secret|access|refresh|access_token|refresh_token)=)([^&#\s]*)"
)
_FORM_KINDS: dict[str, Kind] = {
    **_JSON_KEYS, "access_token": "access", "refresh_token": "refresh",
}  # fmt: skip


def placeholder(kind: Kind, number: int) -> str:
    return f"«masked:{kind}:{number}»"


def placeholders_in(text: str) -> list[str]:
    """Every placeholder in ``text``, in order of appearance (repeats kept)."""
    return [match.group(0) for match in PLACEHOLDER.finditer(text)]


@dataclass
class Masker:
    """Value -> placeholder for one session: numbering per kind, in order of first sight."""

    _by_value: dict[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    _searched: list[str] | None = field(default=None, repr=False)  # longest first, when known

    @classmethod
    def for_config(cls, config: TargetConfig | None) -> Masker:
        """A masker that already knows the configuration's client secrets."""
        masker = cls()
        for app in config.applications if config is not None else ():
            masker.learn("secret", app.client_secret)
        return masker

    def learn(self, kind: Kind, value: str) -> str:
        """The placeholder of ``value``, allocated on first sight."""
        if not value or PLACEHOLDER.fullmatch(value):
            return value
        known = self._by_value.get(value)
        if known is None:
            self._counts[kind] += 1
            known = self._by_value[value] = placeholder(kind, self._counts[kind])
            self._searched = None
        return known

    def _searched_values(self) -> list[str]:
        """The values searched for everywhere, longest first: a value containing another must
        not be half-replaced."""
        if self._searched is None:
            self._searched = sorted(
                (v for v in self._by_value if len(v) >= MIN_SEARCHED_LENGTH), key=len, reverse=True
            )
        return self._searched

    def text(self, text: str) -> str:
        """``text`` with every known secret replaced."""
        if not text:
            return text
        for value in self._searched_values():
            if value in text:
                text = text.replace(value, self._by_value[value])
        return text

    def body(self, body: bytes) -> bytes:
        """A body with its secrets masked; bytes that are not UTF-8 are searched as bytes."""
        if not body:
            return body
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            for value in self._searched_values():
                body = body.replace(value.encode(), self._by_value[value].encode())
            return body
        text = _JSON_MEMBER.sub(self._masked_member, text)
        text = _FORM_MEMBER.sub(self._masked_parameter, text)
        return self.text(text).encode("utf-8")

    def _masked_member(self, match: re.Match[str]) -> str:
        raw = match.group(3)
        try:
            value = json.loads(f'"{raw}"')
        except ValueError:
            value = raw
        masked = self.learn(_JSON_KEYS[match.group(2)], value)
        return match.group(1) + (masked if masked != value else raw) + match.group(4)

    def authorization(self, value: str) -> str:
        """``Bearer <token>`` -> ``Bearer «masked:access:n»``; a bare token is masked whole."""
        scheme, sep, token = value.strip().partition(" ")
        if sep and token.strip():
            return f"{scheme} {self.learn('access', token.strip())}"
        if scheme.lower() in ("", "bearer", "basic"):
            return value  # a scheme without a credential: nothing to hide
        return self.learn("access", scheme)

    def url(self, url: str) -> str:
        """A URL with the token of a refresh path masked, and any other known secret."""
        url = _REFRESH_PATH.sub(lambda m: m.group(1) + self._encoded("refresh", m.group(2)), url)
        url = _FORM_MEMBER.sub(self._masked_parameter, url)
        return self.text(url)

    def _masked_parameter(self, match: re.Match[str]) -> str:
        if not match.group(3):
            return match.group(0)
        return match.group(1) + self._encoded(
            _FORM_KINDS[match.group(2)], match.group(3), form=True
        )

    def _encoded(self, kind: Kind, raw: str, *, form: bool = False) -> str:
        """A secret in a path segment, or a query or form parameter (``form``: "+" is a space):
        the same placeholder as the value in a JSON body, whether or not it was
        percent-encoded."""
        value = unquote_plus(raw) if form else unquote(raw)
        masked = self.learn(kind, value)
        if raw != value and masked != value:
            self._by_value.setdefault(raw, masked)
            self._searched = None
        return masked


def _headers(headers: Headers, masker: Masker) -> Headers:
    return tuple(
        (name, masker.authorization(value) if name.lower() == "authorization" else value)
        for name, value in headers
    )


def mask_exchange(exchange: Exchange, masker: Masker) -> Exchange:
    """The exchange as it may be written: every secret replaced by its placeholder.

    Secrets are learnt from every place first (headers, refresh path, both bodies), then replaced
    everywhere, so a token first seen in this exchange's answer is masked in its request too.
    """
    request_headers = _headers(exchange.request_headers, masker)
    response_headers = _headers(exchange.response_headers, masker)
    url = masker.url(exchange.url)
    masker.body(exchange.request_body)
    masker.body(exchange.response_body)
    return replace(
        exchange,
        url=masker.text(url),
        request_headers=tuple((n, masker.text(v)) for n, v in request_headers),
        request_body=masker.body(exchange.request_body),
        response_headers=tuple((n, masker.text(v)) for n, v in response_headers),
        response_body=masker.body(exchange.response_body),
        error=masker.text(exchange.error),
        notes=tuple(masker.text(note) for note in exchange.notes),
    )
