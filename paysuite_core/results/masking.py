"""One run's secrets, and the forms in which a reader may show them.

One ``Masker`` a run, made by whoever starts it (conform's plugin for its ``Target``, the proxy's
session, the SDK runs) and passed where needed, learns the run's credentials: the client secrets
of its configuration and every secret met in what is written; the tokens authorize and refresh
answered and the secrets authorize accepted (``known``). One set of recognisers finds them (a JSON
member, a form or query parameter, a refresh path, an Authorization value), and each reader gets
its rendering of the same knowledge: a stable *placeholder* (``«masked:access:3»``: the same value,
the same placeholder within a run, so a stateful violation survives masking and ``proxy.replay``
can bind each placeholder again) in the proxy's reports and HAR and the SDK runs' reports (where:
docs/proxy.md, "Secrets in what is written"); a *shortened* display (``Bearer eyJhbGciOiJI…Xk3``)
and a *shell variable* (``$PAYSUITE_TOKEN_<APP>``) in the evidence
(``paysuite_core.results.evidence``). A variable stands only for a credential the target issued
or accepted, a placeholder for any secret seen: the masker keeps the two apart.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from os.path import commonprefix
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import unquote, unquote_plus

from paysuite_core.exchange import Exchange, Headers
from paysuite_core.tokens import REFRESH_PATHS, parse_expires

if TYPE_CHECKING:
    from paysuite_core.target_config import TargetConfig

Kind = Literal["secret", "access", "refresh"]
KINDS: tuple[Kind, ...] = ("secret", "access", "refresh")

#: A placeholder as written: ``«masked:access:3»``. The guillemets cannot occur in a token (JWTs,
#: refresh tokens and secrets are ASCII), so a placeholder is never mistaken for a value.
PLACEHOLDER = re.compile(r"«masked:(secret|access|refresh):(\d+)»")

#: A value shorter than this is masked where it was found but not searched for elsewhere: a
#: two-letter "secret" replaced everywhere would shred every body it occurs in.
MIN_SEARCHED_LENGTH = 8

# --- the recognisers: each has the secret in its group "v" ----------------------------------
REFRESH_PATH = re.compile(
    "(" + "|".join(re.escape(p.split("{token}")[0]) for p in REFRESH_PATHS) + ")(?P<v>[^/?#]+)"
)
_JSON_KEYS: dict[str, Kind] = {"client_secret": "secret", "access": "access", "refresh": "refresh"}
#: A JSON string member named as above, matched in the raw text so that masking changes nothing
#: but the value (re-serialising the body would change its bytes, and the HAR must show them).
JSON_MEMBER = re.compile(r'"(?P<k>client_secret|access|refresh)"\s*:\s*"(?P<v>(?:[^"\\]|\\.)*)"')
#: The same names as a query or form parameter (a client that sends its secret in a form or a
#: token in a query string), and the OAuth spellings of the tokens.
_FORM_MEMBER = re.compile(
    r"(?:^|[?&])(?P<k>client_secret|access|refresh|access_token|refresh_token)=(?P<v>[^&#\s]*)"
)
_FORM_KINDS: dict[str, Kind] = {**_JSON_KEYS, "access_token": "access", "refresh_token": "refresh"}


def credential_of(authorization: str) -> tuple[str, str]:
    """An Authorization value as (its scheme and a space, its credential): ``("Bearer ", token)``;
    ``("", value)`` for a bare credential."""
    scheme, sep, credential = authorization.partition(" ")
    return (f"{scheme} ", credential) if sep else ("", authorization)


def _replaced(text: str, pattern: re.Pattern[str], render: Callable[[re.Match[str]], str]) -> str:
    """``text`` with each match's value (its group "v") rendered, the rest kept byte for byte."""
    return pattern.sub(
        lambda m: m.string[m.start() : m.start("v")] + render(m) + m.string[m.end("v") : m.end()],
        text,
    )


def placeholders_in(text: str) -> list[str]:
    """Every placeholder in ``text``, in order of appearance (repeats kept)."""
    return [match.group(0) for match in PLACEHOLDER.finditer(text)]


# --- the shortened display -------------------------------------------------------------------
def _short(token: str) -> str:
    return f"{token[:12]}…{token[-6:]}" if len(token) > 24 else token


def shorten_token(value: str) -> str:
    """``Bearer eyJhbGciOiJI…Xk3`` : enough to tell tokens apart, not enough to use one."""
    prefix, token = credential_of(value)
    return prefix + _short(token) if prefix.strip() else _short(token)


def shown(text: str, *kinds: Kind) -> str:
    """``text`` with its JSON members of ``kinds`` shortened: a client secret to its first four
    characters, a token as :func:`shorten_token`."""

    def render(m: re.Match[str]) -> str:
        kind, value = _JSON_KEYS[m["k"]], m["v"]
        if kind not in kinds:
            return value
        return value[:4] + "…" if kind == "secret" else shorten_token(value)

    return _replaced(text, JSON_MEMBER, render)


def shown_url(url: str) -> str:
    """A URL with the token of a refresh path shortened."""
    return _replaced(url, REFRESH_PATH, lambda m: _short(m["v"]))


def shown_headers(headers: dict[str, str]) -> dict[str, str]:
    """The headers with the Authorization credential shortened."""
    return {k: shorten_token(v) if k.lower() == "authorization" else v for k, v in headers.items()}


# --- credentials the target issued or accepted ---------------------------------------------
@dataclass(frozen=True)
class Issued:
    """Who a credential belongs to ("" when unknown) and, for an issued access token, when its
    ``expires`` said it would expire (Unix seconds); ``short``: issued by the configuration's
    ``short_lived_pair`` route."""

    client_id: str
    expires_at: float | None = None
    short: bool = False


class Known(dict[str, Issued]):
    """Credential value -> ``Issued``, oldest dropped first past ``LIMIT`` (a long run stays
    bounded)."""

    LIMIT = 4096

    def add(self, value: object, owner: Issued) -> None:
        if not isinstance(value, str) or not value:
            return
        self.pop(value, None)
        self[value] = owner
        while len(self) > self.LIMIT:
            del self[next(iter(self))]

    def match(self, value: str) -> tuple[str, Issued] | None:
        """(known value, its facts) equal to ``value`` or, failing that, its longest prefix."""
        prefixes = [k for k in list(self) if len(k) >= 8 and value.startswith(k)]
        found = value if value in self else max(prefixes, key=len, default=None)
        return None if found is None else (found, self[found])

    def nearest(self, value: str) -> tuple[str, Issued, int, int] | None:
        """The known value sharing the most with ``value`` at its two ends: (known, facts,
        common prefix, common suffix), when what they share is most of ``value`` (a forgery
        that altered a signature, stripped it, or appended to a secret); else None."""
        best: tuple[str, Issued, int, int] | None = None
        for known, owner in list(self.items()):
            head = len(commonprefix([value, known]))
            tail = len(commonprefix([value[::-1], known[::-1]]))
            tail = min(tail, min(len(value), len(known)) - head)
            if best is None or head + tail > best[2] + best[3]:
                best = (known, owner, head, tail)
        if best is None or best[2] + best[3] < max(8, len(value) // 2):
            return None
        return best


def _upper_word(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").upper()


@dataclass
class Masker:
    """One run's secrets: placeholders numbered per kind in order of first sight; the
    credentials the target issued or accepted (``known``); the run's applications by name."""

    #: client_id -> ``<MERCHANT>_<PRIVILEGE>`` (a number added where two share both).
    names: dict[str, str] = field(default_factory=dict)
    #: The configuration file a reproduction reads the secrets from.
    config_path: str | None = None
    #: (method, url, access_token_ttl_s) of the configuration's ``short_lived_pair``.
    short_lived: tuple[str, str, float] | None = None
    #: The pattern a fresh customer number must match; None: numbers are not made fresh (a
    #: configured list of numbers, or no configuration).
    number_pattern: str | None = None
    known: dict[Kind, Known] = field(default_factory=lambda: {k: Known() for k in KINDS})
    _by_value: dict[str, str] = field(default_factory=dict)
    _counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    _searched: list[str] | None = field(default=None, repr=False)  # longest first, when known

    @classmethod
    def for_config(cls, config: TargetConfig | None, path: str | None = None) -> Masker:
        """A run's masker: it knows the configuration's client secrets (read from ``path``) and
        names its applications, so the variables of the curls follow."""
        masker = cls(config_path=str(Path(path).resolve()) if path else None)
        if config is None:
            return masker
        taken: dict[str, int] = {}
        for app in config.applications:
            masker.learn("secret", app.client_secret)
            base = _upper_word(f"{app.merchant}_{app.privilege}") or "APP"
            taken[base] = taken.get(base, 0) + 1
            masker.names[app.client_id] = base if taken[base] == 1 else f"{base}_{taken[base]}"
        if (pair := config.short_lived_pair) is not None:
            route, ttl = pair.authorize, float(pair.access_token_ttl_s)
            masker.short_lived = (route.method, route.url_template, ttl)
        if not config.numbers:
            masker.number_pattern = config.effective_number_pattern
        return masker

    def learn_issued(self, wire: Exchange, sent: str | None) -> None:
        """Remember the tokens a 2xx authorize or refresh answered (for whom, when, with which
        ``expires``), and the secret that earned them (``sent``: the body the suite sent)."""
        answer = wire.response_json() if 200 <= wire.status < 300 else None
        if not isinstance(answer, dict) or not isinstance(answer.get("access"), str):
            return
        try:
            asked = json.loads(sent or "null")
        except ValueError:
            asked = None
        client_id = ""
        if isinstance(asked, dict):
            # A client_id JSON-escaped as a lone surrogate (ERR-004 sends one) stays escaped:
            # the report and the terminal write UTF-8, which cannot hold the surrogate itself.
            client_id = (
                str(asked.get("client_id") or "").encode("utf-8", "backslashreplace").decode()
            )
            self.known["secret"].add(asked.get("client_secret"), Issued(client_id))
        path_token = REFRESH_PATH.search(wire.url)
        if not client_id and path_token:
            found = self.known["refresh"].match(path_token["v"])
            client_id = found[1].client_id if found else ""
        now = time.time()
        expires_at: float | None = parse_expires(answer.get("expires"), answer["access"], now, 0)
        if expires_at == now:  # neither ``expires`` nor the JWT said: no expiry known
            expires_at = None
        short = self.short_lived is not None and wire.url == self.short_lived[1]
        self.known["access"].add(answer["access"], Issued(client_id, expires_at, short))
        self.known["refresh"].add(answer.get("refresh"), Issued(client_id))

    # --- shell variables --------------------------------------------------------------------
    def app_name(self, client_id: str) -> str:
        """The application's name in variable names: the run's (``DEMO01_READ_WRITE``), else its
        client_id upper-cased, non-alphanumerics as ``_``."""
        return self.names.get(client_id) or _upper_word(client_id)[:40] or "APP"

    def var_name(self, kind: str, client_id: str) -> str:
        """``PAYSUITE_TOKEN_DEMO01_READ_WRITE``; ``PAYSUITE_TOKEN`` when the owner is unknown."""
        return f"PAYSUITE_{kind}" + (f"_{self.app_name(client_id)}" if client_id else "")

    def shortened(self, text: str) -> str:
        """``text`` with every credential the run issued or accepted shortened."""
        for kind in ("access", "refresh", "secret"):
            for value in list(self.known[kind]):
                if len(value) >= 8 and value in text:
                    text = text.replace(value, shorten_token(value))
        return text

    # --- placeholders -----------------------------------------------------------------------
    def learn(self, kind: Kind, value: str) -> str:
        """The placeholder of ``value``, allocated on first sight."""
        if not value or PLACEHOLDER.fullmatch(value):
            return value
        known = self._by_value.get(value)
        if known is None:
            self._counts[kind] += 1
            known = self._by_value[value] = f"«masked:{kind}:{self._counts[kind]}»"
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
        text = _replaced(text, JSON_MEMBER, self._masked_member)
        text = _replaced(text, _FORM_MEMBER, self._masked_parameter)
        return self.text(text).encode("utf-8")

    def _masked_member(self, match: re.Match[str]) -> str:
        raw = match["v"]
        try:
            value = json.loads(f'"{raw}"')
        except ValueError:
            value = raw
        masked = self.learn(_JSON_KEYS[match["k"]], value)
        return masked if masked != value else raw

    def authorization(self, value: str) -> str:
        """``Bearer <token>`` -> ``Bearer «masked:access:n»``; a bare token is masked whole."""
        prefix, token = credential_of(value.strip())
        if prefix:
            return prefix + self.learn("access", token.strip())
        if token.lower() in ("", "bearer", "basic"):
            return value  # a scheme without a credential: nothing to hide
        return self.learn("access", token)

    def url(self, url: str) -> str:
        """A URL with the token of a refresh path masked, and any other known secret."""
        url = _replaced(url, REFRESH_PATH, lambda m: self._encoded("refresh", m["v"]))
        url = _replaced(url, _FORM_MEMBER, self._masked_parameter)
        return self.text(url)

    def _masked_parameter(self, match: re.Match[str]) -> str:
        if not match["v"]:
            return ""
        return self._encoded(_FORM_KINDS[match["k"]], match["v"], form=True)

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
