"""Evidence: the HTTP exchanges a check made, kept so a failure can prove itself.

Every request a check sends is recorded with its response (a ``Recorded``: the wire's
``paysuite_core.exchange.Exchange``, which keeps the values really sent, tokens, client secrets,
refresh tokens in a path, and renders two forms):

- the *safe* form (the default, what reports publish): displayed headers and bodies are redacted
  (bearer tokens shortened, client secrets masked, issued tokens in a response shortened) and the
  curl command names the credentials by environment variable, one per application
  (``$PAYSUITE_TOKEN_<APP>``, ``$PAYSUITE_REFRESH_TOKEN_<APP>``, ``$PAYSUITE_CLIENT_SECRET_<APP>``,
  ``$PAYSUITE_SHORT_TOKEN_<APP>`` for a short-lived pair's; ``Masker.app_name``), so it replays as
  printed once those are exported (:func:`replay_exports` says how) and a report never leaks a
  credential;
- the *revealed* form (``to_dict(reveal=True)``, ``--reveal-secrets``): the real values
  everywhere, for a private run whose curl must replay without any setup.

A credential the suite derived from a real one (a token with an altered signature, a secret with
a suffix) is rebuilt in the curl from the variable (``$(python3 -c ...)`` keeps the parts it
shares with an issued token and adds what the suite changed), so a forgery replays as a forgery of
a fresh token; one that shares too little with any issued credential says so in the item's
``note`` rather than silently replaying something else. To tell a credential the target issued from
one the suite made up, each exchange teaches the run's ``Masker`` (``results.masking``: made by
whoever starts the run, handed to its client) the tokens authorize and refresh answered, when and
with which ``expires``, and the secrets authorize accepted.

A failed check's *reproduction* (:func:`reproduction`) is more than its last curl: the requests
that show the defect on their own, run in a fresh shell after the exports. Idempotency keys are
fresh (``$PAYSUITE_KEY_n``, made by the script) so a replay is not answered "key reused" for the
run's own key; a reused key's first request is sent first with the same fresh key; requests the
check sent at once (a race) are sent at once again; a short-lived token is waited out first.
"""

from __future__ import annotations

import json
import math
import re
import shlex
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from paysuite_core.exchange import Exchange
from paysuite_core.results.masking import (
    JSON_MEMBER,
    REFRESH_PATH,
    Issued,
    Kind,
    Masker,
    credential_of,
    shown,
    shown_headers,
    shown_url,
)
from paysuite_core.tokens import AUTHORIZE_PATH

MAX_BODY_CHARS = 2000
#: A request body kept for the curl is never cut at 2000 characters (it would not replay), but a
#: runaway one is (a property test can send megabytes).
MAX_REPLAY_BODY_CHARS = 200_000
_SKIPPED_CURL_HEADERS = ("content-length", "host", "accept-encoding", "connection", "user-agent")


def truncate(text: str, limit: int = MAX_BODY_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


# --- shell words with environment variables --------------------------------------------------
@dataclass(frozen=True)
class _Var:
    """An environment variable standing in for a credential inside a shell word."""

    name: str


@dataclass(frozen=True)
class _Expr:
    """A command substitution (``$(...)``) inside a shell word: a value computed from a
    variable (a forgery of a fresh token, a key upper-cased)."""

    text: str


Segment = str | _Var | _Expr
_DOUBLE_QUOTE_UNSAFE = re.compile(r'["\\$`!]')


def _shell_word(segments: Sequence[Segment]) -> str:
    """Quote one argument; variables stay expandable (``"Authorization: Bearer $PAYSUITE_TOKEN"``).

    Plain text uses ``shlex.quote``. With a variable, the whole word goes in double quotes when its
    text allows (readable), else single-quoted text is spliced with ``"$VAR"`` (a JSON body).
    """
    if all(isinstance(s, str) for s in segments):
        return shlex.quote("".join(str(s) for s in segments))
    texts = [s for s in segments if isinstance(s, str)]
    if not any(_DOUBLE_QUOTE_UNSAFE.search(t) for t in texts):
        out = []
        for index, segment in enumerate(segments):
            if isinstance(segment, _Var):
                following = segments[index + 1] if index + 1 < len(segments) else ""
                head = following[:1] if isinstance(following, str) else ""
                glued = head.isalnum() or head == "_"
                out.append(f"${{{segment.name}}}" if glued else f"${segment.name}")
            elif isinstance(segment, _Expr):
                out.append(segment.text)
            else:
                out.append(segment)
        return '"' + "".join(out) + '"'
    out = []
    for segment in segments:
        if isinstance(segment, _Var):
            out.append(f'"${segment.name}"')
        elif isinstance(segment, _Expr):
            out.append(f'"{segment.text}"')
        elif segment:
            out.append(shlex.quote(segment))
    return "".join(out)


def _rebuilt(var: str, head: int, middle: str, tail: int) -> _Expr:
    """``$VAR``'s first ``head`` and last ``tail`` characters around ``middle``: a forgery of a
    fresh credential made the way the suite made its own."""
    code = f"import sys;t=sys.argv[1];print(t[:{head}]+sys.argv[2]+t[len(t)-{tail}:])"
    return _Expr(f'$(python3 -c {shlex.quote(code)} "${var}" {shlex.quote(middle)})')


#: The variable and the words of a note for each kind of credential.
_VAR_KIND = {"access": "TOKEN", "refresh": "REFRESH_TOKEN", "secret": "CLIENT_SECRET"}
_WHAT = {"access": "token", "refresh": "refresh token", "secret": "client_secret"}


@dataclass
class _StandIns:
    """What the safe curl needed: variable -> client_id (or ""), and why it may not replay."""

    masker: Masker
    needs: dict[str, str] = field(default_factory=dict)
    inexact: list[str] = field(default_factory=list)
    #: The longest short-lived lifetime among the tokens used: the reproduction waits it out.
    short_ttl_s: float = 0.0

    def _var(self, kind: Kind, owner: Issued) -> str:
        name = _VAR_KIND[kind]
        if kind == "access" and owner.short:
            name = "SHORT_TOKEN"
            if self.masker.short_lived is not None:
                self.short_ttl_s = max(self.short_ttl_s, self.masker.short_lived[2])
        var = self.masker.var_name(name, owner.client_id)
        self.needs[var] = owner.client_id
        return var

    def stand_in(self, value: str, kind: Kind, *others: Kind) -> list[Segment]:
        """``value`` as ``$VAR``, or rebuilt from one (the suite's forgery of a known value)."""
        for store_kind in (kind, *others):
            owner = self.masker.known[store_kind].get(value)
            if owner is not None:
                return [_Var(self._var(store_kind, owner))]
        known = self.masker.known[kind]
        match = known.match(value)
        if match is not None:
            found, owner = match
            suffix = value[len(found) :]
            return [_Var(self._var(kind, owner)), suffix]
        near = known.nearest(value)
        if near is not None:
            found, owner, head, tail = near
            middle = value[head : len(value) - tail]
            return [_rebuilt(self._var(kind, owner), head, middle, tail)]
        var = self.masker.var_name(_VAR_KIND[kind], "")
        self.needs.setdefault(var, "")
        self.inexact.append(
            f"the {_WHAT[kind]} sent is not one the target issued or accepted in this run (a "
            f"forgery or a wrong value): ${var} stands in for it, so the replay differs; "
            "--reveal-secrets prints the exact value"
        )
        return [_Var(var)]


# --- fresh idempotency keys ------------------------------------------------------------------
_HEX_RUN = re.compile(r"[0-9a-fA-F]{8,}")
_QUERY_KEY = re.compile(r"[?&]idempotency-key=(?P<v>[^&#]*)", re.IGNORECASE)


class _Keys:
    """The run's idempotency keys made fresh: each random part of a key (a run of 8 or more hex
    digits) becomes ``$PAYSUITE_KEY_n`` of the same length, the same part the same variable
    wherever it recurs (a reuse, a key in both channels, a key and its upper-cased twin), so
    the replay keeps every relation between keys and none of the run's values."""

    def __init__(self) -> None:
        self._vars: dict[str, tuple[str, int]] = {}  # lower-cased run -> (variable, length)

    def segments(self, value: str) -> list[Segment]:
        out: list[Segment] = []
        position = 0
        for match in _HEX_RUN.finditer(value):
            run = match.group(0)
            if run != run.lower() and run != run.upper():
                continue  # mixed case: not a random part the suite made (kept as sent)
            var, _ = self._vars.setdefault(
                run.lower(), (f"PAYSUITE_KEY_{len(self._vars) + 1}", len(run))
            )
            out.append(value[position : match.start()])
            upper = run != run.lower()
            out.append(_Expr(f'$(printf %s "${var}" | tr a-f A-F)') if upper else _Var(var))
            position = match.end()
        out.append(value[position:])
        return [s for s in out if s != ""]

    def lines(self) -> list[str]:
        """The shell lines that make the variables: a fresh random hex of each length."""
        out = []
        for var, length in self._vars.values():
            times = math.ceil(length / 32)
            made = "uuid.uuid4().hex" if times == 1 else f"(uuid.uuid4().hex*{times})"
            cut = "" if length == 32 else f"[:{length}]"
            out.append(f"{var}=$(python3 -c {shlex.quote(f'import uuid;print({made}{cut})')})")
        return out


_BODY_NUMBER = re.compile(r'"number"\s*:\s*"(?P<v>[0-9]{7,})"')
_QUERY_NUMBER = re.compile(r"[?&]client=(?P<v>[0-9]{7,})(?=&|#|$)")


class _Numbers:
    """The run's customer numbers made fresh: ``$PAYSUITE_NUMBER_n``, the number's last six
    digits drawn again until it matches the target's pattern (a number the run used has the
    run's transactions; a fresh one has only the replay's). Kept as sent when the target's
    numbers are a configured list."""

    def __init__(self, steps: Sequence[Recorded] = ()) -> None:
        self._vars: dict[str, str] = {}  # number -> variable
        #: Only a number the reproduction's own requests create with and then list is made
        #: fresh (the listing shows the replay's transactions alone); one it merely reads (a
        #: listing of the run's transactions) stays the run's, and a creation's own answer
        #: needs none.
        created = {
            m["v"]
            for step in steps
            if step.method == "POST"
            for m in _BODY_NUMBER.finditer(_text(step.wire.request_body))
        }
        listed = {m["v"] for step in steps for m in _QUERY_NUMBER.finditer(step.wire.url)}
        self._created = created & listed
        self._pattern = steps[0].masker.number_pattern if steps else None

    def segments(self, value: str) -> list[Segment]:
        if self._pattern is None or value not in self._created:
            return [value]
        var = self._vars.setdefault(value, f"PAYSUITE_NUMBER_{len(self._vars) + 1}")
        return [_Var(var)]

    def lines(self) -> list[str]:
        code = (
            "import random,re,sys;p,n=sys.argv[1:];c=(n[:-6]+'%06d'%random.randrange(10**6) "
            "for _ in range(200));print(next((x for x in c if re.fullmatch(p,x)),n))"
        )
        return [
            f"{var}=$(python3 -c {shlex.quote(code)} "
            f"{shlex.quote(self._pattern or '')} {shlex.quote(number)})"
            for number, var in self._vars.items()
        ]


def key_runs(wire: Exchange) -> set[str]:
    """The random parts of the idempotency keys an exchange carried (header and query),
    lower-cased: how two keys are told to be one."""
    keys = [value for name, value in wire.request_headers if name.lower() == "idempotency-key"]
    keys += [match["v"] for match in _QUERY_KEY.finditer(wire.url)]
    runs = (match.group(0) for key in keys for match in _HEX_RUN.finditer(key))
    return {run.lower() for run in runs if run in (run.lower(), run.upper())}


def _cut(
    segments: Sequence[Segment],
    pattern: re.Pattern[str],
    stand_in: Callable[[str], list[Segment]],
    only: str | None = None,
) -> list[Segment]:
    """The text segments of a word cut at each match; ``stand_in(value)`` gives the segments of
    the match's group "v" (the credential between the key or path and what follows); ``only``:
    the matches whose group "k" (a JSON member's name) is this."""
    out: list[Segment] = []
    for segment in segments:
        if not isinstance(segment, str):
            out.append(segment)
            continue
        position = 0
        for match in pattern.finditer(segment):
            if only is None or match["k"] == only:
                out.append(segment[position : match.start("v")])
                out.extend(stand_in(match["v"]))
                position = match.end("v")
        out.append(segment[position:])
    return [s for s in out if s != ""]


class EvidenceItem(dict[str, Any]):
    """The safe form of an exchange (a plain dict to JSON), able to give its revealed form.

    The real values are reachable only through :meth:`revealed`, never as keys, so serializing
    or copying the item can only publish the safe form.
    """

    __slots__ = ("_exchange",)

    def __init__(self, data: dict[str, Any], exchange: Recorded) -> None:
        super().__init__(data)
        self._exchange = exchange

    def revealed(self) -> dict[str, Any]:
        return self._exchange.to_dict(reveal=True)

    @property
    def masker(self) -> Masker:
        return self._exchange.masker


def wire_of(item: Mapping[str, Any]) -> Exchange | None:
    """The exchange behind a safe evidence item, real values and all (None: a tool's item)."""
    return item._exchange.wire if isinstance(item, EvidenceItem) else None


def issued(item: object, token: str) -> Issued | None:
    """What the run of an evidence item knows of an access token it was issued (None: not one
    it saw issued, or a tool's item)."""
    return item.masker.known["access"].get(token) if isinstance(item, EvidenceItem) else None


def masker_of(results: Iterable[object]) -> Masker:
    """The run's masker, as its results' evidence carries it (the reports are written from the
    results alone); a fresh one when no evidence does (then no curl names a credential)."""
    held = (
        h for r in results for h in (getattr(r, "reproduction", None), *getattr(r, "evidence", ()))
    )
    return next((m for h in held if isinstance(m := getattr(h, "masker", None), Masker)), Masker())


def item_form(item: dict[str, Any], *, reveal: bool) -> dict[str, Any]:
    """An evidence item as a report shows it: revealed when asked and known, else as given."""
    if reveal and isinstance(item, EvidenceItem):
        return item.revealed()
    return item


class Recorded:
    """An ``Exchange`` as evidence: the real values stay in ``wire`` (for the curl and
    ``--reveal-secrets``); ``url``, ``request_headers`` and ``request_body`` are the redacted
    forms, safe to put in a failure message.

    It is built when the request leaves and completed when (if) the answer comes, so a request
    that got no answer still proves itself.
    """

    __slots__ = ("note", "wire", "_has_body", "stall_s", "masker")

    def __init__(
        self,
        wire: Exchange,
        *,
        note: str | None = None,
        has_body: bool = True,
        masker: Masker | None = None,
    ) -> None:
        self.wire = wire
        self.note = note
        self._has_body = has_body
        #: The run's masker: it learns the credentials this exchange was issued, and names the
        #: ones it sent (a fresh one, without a run: it knows this exchange alone).
        self.masker = masker if masker is not None else Masker()
        #: Set when the body sent is only the start of the one the ``Content-Length`` declares,
        #: and the connection then stayed silent this long (ERR-007): the curl does the same.
        self.stall_s: float | None = None
        if wire.status:
            self.masker.learn_issued(wire, self._raw_body())

    @classmethod
    def build(
        cls,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: str | bytes | None,
        note: str | None = None,
        masker: Masker | None = None,
    ) -> Recorded:
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        wire = Exchange(method.upper(), url, tuple(headers.items()), data or b"")
        wire.started = time.time()  # a race is told by requests in flight at once
        return cls(wire, note=note, has_body=body is not None, masker=masker)

    def record_response(
        self, status: int, headers: Mapping[str, str], body: str, elapsed_ms: float
    ) -> None:
        self.wire.status = status
        self.wire.response_headers = tuple(headers.items())
        self.wire.response_body = body.encode("utf-8", "surrogatepass")
        self.wire.elapsed_ms = round(elapsed_ms, 1)
        self.masker.learn_issued(self.wire, self._raw_body())

    @property
    def method(self) -> str:
        return self.wire.method

    @property
    def url(self) -> str:
        return shown_url(self.wire.url)

    @property
    def request_headers(self) -> dict[str, str]:
        return shown_headers(dict(self.wire.request_headers))

    @property
    def request_body(self) -> str | None:
        if not self._has_body:
            return None
        return truncate(shown(_text(self.wire.request_body), "secret"))

    @property
    def status(self) -> int | None:
        return self.wire.status or None

    @property
    def response_headers(self) -> dict[str, str]:
        return dict(self.wire.response_headers)

    @property
    def response_body(self) -> str | None:
        if not self.wire.status:
            return None
        return truncate(_text(self.wire.response_body))

    @property
    def error(self) -> str | None:
        return self.wire.error or None

    @error.setter
    def error(self, value: str | None) -> None:
        self.wire.error = value or ""

    def _raw_body(self, limit: int = MAX_REPLAY_BODY_CHARS) -> str | None:
        return truncate(_text(self.wire.request_body), limit) if self._has_body else None

    def _curl_words(
        self, reveal: bool, keys: _Keys | None = None, numbers: _Numbers | None = None
    ) -> tuple[list[list[Segment]], _StandIns]:
        """The curl's words; with ``keys`` and ``numbers``, its idempotency keys and customer
        numbers made fresh (a reproduction)."""
        stand_ins = _StandIns(self.masker)
        words: list[list[Segment]] = [["curl"], ["-sS"], ["-i"], ["-X"], [self.method]]
        for name, value in self.wire.request_headers:
            if name.lower() in _SKIPPED_CURL_HEADERS and not (
                self.stall_s is not None and name.lower() == "content-length"
            ):
                continue
            words.append(["-H"])
            if name.lower() == "authorization" and not reveal:
                words.append([f"{name}: ", *_authorization(value, stand_ins)])
            elif name.lower() == "idempotency-key" and keys is not None:
                words.append([f"{name}: ", *keys.segments(value)])
            else:
                words.append([f"{name}: {value}"])
        body = self._raw_body()
        if self.stall_s is not None:
            # curl uploads stdin (``_joined``'s pipe) under the declared length: no chunking,
            # no ``Expect``. It sends the head at once, waits for stdin to end (the stall),
            # then prints the answer that came meanwhile; ``--max-time``: twice the stall.
            words += [["-H"], ["Transfer-Encoding:"], ["-H"], ["Expect:"]]
            words += [["--max-time"], [str(2 * math.ceil(self.stall_s))], ["-T"], ["-"]]
        elif body is not None:
            data: list[Segment] = [body]
            if not reveal:
                data = _cut(
                    data, JSON_MEMBER, partial(stand_ins.stand_in, kind="secret"), "client_secret"
                )
            if numbers is not None:
                data = _cut(data, _BODY_NUMBER, numbers.segments)
            words += [["--data-raw"], data]
        url: list[Segment] = [self.wire.url]
        if not reveal:
            url = _cut(url, REFRESH_PATH, lambda v: stand_ins.stand_in(v, "refresh"))
        if keys is not None:
            url = _cut(url, _QUERY_KEY, keys.segments)
        if numbers is not None:
            url = _cut(url, _QUERY_NUMBER, numbers.segments)
        words.append(url)
        return words, stand_ins

    def _joined(self, words: Sequence[Sequence[Segment]]) -> str:
        """The curl's words as one shell command; a stalled body is piped in: what was sent,
        then silence."""
        command = " ".join(_shell_word(word) for word in words)
        if self.stall_s is None:
            return command
        sent = shlex.quote(_text(self.wire.request_body))
        return f"(printf %s {sent}; sleep {math.ceil(self.stall_s)}) | {command}"

    def curl(self, reveal: bool = False) -> str:
        """A shell command that sends the same request (credentials by variable unless revealed)."""
        words, _ = self._curl_words(reveal)
        return self._joined(words)

    def to_dict(self, reveal: bool = False) -> dict[str, Any]:
        """The exchange as evidence: the safe form (an :class:`EvidenceItem`) or the revealed one.

        The safe form adds ``env`` (variable -> client_id whose credential it holds) when its
        curl needs variables, and ``note`` when that curl cannot replay the exact request.
        """
        request: dict[str, Any] = {
            "method": self.method,
            "url": self.wire.url if reveal else self.url,
            "headers": dict(self.wire.request_headers) if reveal else self.request_headers,
            "body": self._raw_body() if reveal else self.request_body,
        }
        if self.note:
            request["note"] = self.note
        response: dict[str, Any] = {"error": self.error}
        if self.error is None:
            body = self.response_body
            response = {
                "status": self.status,
                "headers": self.response_headers,
                "body": body if reveal or body is None else shown(body, "access", "refresh"),
                "elapsed_ms": self.wire.elapsed_ms if self.wire.status else None,
            }
        words, stand_ins = self._curl_words(reveal)
        data = {"request": request, "response": response, "curl": self._joined(words)}
        if reveal:
            return data
        if stand_ins.needs:
            data["env"] = dict(stand_ins.needs)
        if stand_ins.inexact:
            data["note"] = "; ".join(dict.fromkeys(stand_ins.inexact))
        return EvidenceItem(data, self)

    def summary(self) -> str:
        outcome = self.error if self.error is not None else f"-> {self.status}"
        return f"{self.method} {self.url} {outcome}"


def evidence_of(
    exchange: Exchange, masker: Masker, note: str | None = None, had_body: bool | None = None
) -> dict[str, Any]:
    """An exchange another tool recorded (the proxy, an SDK run) as a safe evidence item, its
    credentials named by the tool's run's ``masker``; ``had_body`` tells an empty body from none
    (default: an empty body is none)."""
    if not exchange.status:
        exchange = replace(exchange, error=exchange.error or "no answer")
    sent = bool(exchange.request_body) if had_body is None else had_body
    return Recorded(exchange, note=note, has_body=sent, masker=masker).to_dict()


def _text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def _authorization(value: str, stand_ins: _StandIns) -> list[Segment]:
    """The credential of an Authorization value as ``$PAYSUITE_TOKEN_<APP>``, its scheme kept
    (a refresh token sent as an access token, as AUTH-010 does, by its own variable)."""
    prefix, credential = credential_of(value)
    if not credential:
        return [value]
    return [prefix, *stand_ins.stand_in(credential, "access", "refresh")]


#: The kinds of credential variable, longest first (a variable is told by its prefix), and the
#: member of a token pair that fills each.
_KINDS = ("REFRESH_TOKEN", "CLIENT_SECRET", "SHORT_TOKEN", "TOKEN")
_PAIR_KEY = {"TOKEN": "access", "SHORT_TOKEN": "access", "REFRESH_TOKEN": "refresh"}


def _secret_line(var: str, client_id: str, config_path: str | None) -> str:
    """How to fill an application's secret: read from the run's configuration file (with the
    Python that ran paysuite, which can read it), else a placeholder to replace."""
    if config_path and client_id:
        code = (
            "import sys;from paysuite_core.target_config import load_target_config as load;"
            "print(next(a.client_secret for a in load(sys.argv[1]).applications "
            "if a.client_id==sys.argv[2]))"
        )
        return (
            f"export {var}=$({shlex.quote(sys.executable)} -c {shlex.quote(code)} "
            f"{shlex.quote(config_path)} {shlex.quote(client_id)})"
        )
    owner = client_id or "<client_id>"
    return f"export {var}='<the client_secret of {owner} in the target config>'"


def replay_exports(base_url: str, needs: Mapping[str, Iterable[str]], masker: Masker) -> list[str]:
    """Shell lines that fill the variables the safe curls use, application by application.

    ``needs`` maps a variable to the client_ids whose credential it stood for ("" when unknown);
    ``masker`` is the run's (its applications' names, configuration file, short-lived route).
    A token is fetched fresh (the one the run used has likely expired): from authorize, or from
    the configuration's ``short_lived_pair`` route for a short-lived one; that needs the
    application's secret, so its ``$PAYSUITE_CLIENT_SECRET_<APP>`` always comes first.
    """
    by_app: dict[str, set[str]] = {}
    for var, owners in needs.items():
        kind = next((k for k in _KINDS if f"{var}_".startswith(f"PAYSUITE_{k}_")), "TOKEN")
        for client_id in owners:
            by_app.setdefault(client_id, set()).add(kind)
    authorize = "POST " + base_url.rstrip("/") + AUTHORIZE_PATH
    lines: list[str] = []
    for client_id in sorted(by_app):
        kinds = by_app[client_id]
        if client_id:
            lines.append(f"# application {masker.app_name(client_id)} (client_id {client_id})")
        secret = masker.var_name("CLIENT_SECRET", client_id)
        lines.append(_secret_line(secret, client_id, masker.config_path))
        cid = client_id or "<client_id>"
        body = '{"client_id":' + json.dumps(cid).replace("'", "'\\''") + ","
        body += f'"client_secret":"\'"${secret}"\'"}}'
        for kind in ("TOKEN", "SHORT_TOKEN", "REFRESH_TOKEN"):
            if kind not in kinds:
                continue
            route = authorize
            if kind == "SHORT_TOKEN" and masker.short_lived is not None:
                route = f"{masker.short_lived[0]} {masker.short_lived[1]}"
            method, _, url = route.partition(" ")
            lines.append(
                f"export {masker.var_name(kind, client_id)}=$(curl -sS -X {method} "
                f"{shlex.quote(url)} -H 'Content-Type: application/json' "
                f"-H 'Accept: application/json' -d '{body}' | python3 -c "
                f"'import json,sys;print(json.load(sys.stdin)[\"{_PAIR_KEY[kind]}\"])')"
            )
    return lines


# --- a check's reproduction ------------------------------------------------------------------
#: Exchanges sent at once with one key, at least this many, are a race: sent at once again.
RACE_MIN = 3


def _overlaps(one: Exchange, other: Exchange) -> bool:
    """Whether two requests were in flight at the same time."""
    if not one.started or not other.started:
        return False
    one_end = one.started + max(one.elapsed_ms, 1.0) / 1000
    other_end = other.started + max(other.elapsed_ms, 1.0) / 1000
    return one.started <= other_end and other.started <= one_end


def _race(last: Recorded, sent: Sequence[Recorded]) -> int:
    """How many requests like ``last`` (method, path, key) were sent at once with it; 0 when
    fewer than ``RACE_MIN``."""
    runs = key_runs(last.wire)
    if not runs:
        return 0
    path = urlsplit(last.wire.url).path
    racers = [
        e
        for e in sent
        if e.method == last.method
        and urlsplit(e.wire.url).path == path
        and key_runs(e.wire) == runs
        and (e is last or _overlaps(e.wire, last.wire))
    ]
    return len(racers) if len(racers) >= RACE_MIN else 0


def _first_use(last: Recorded, sent: Sequence[Recorded]) -> Recorded | None:
    """The first request the check sent with a key ``last`` reuses (None: no reuse)."""
    runs = key_runs(last.wire)
    if not runs:
        return None
    for exchange in sent:
        if exchange is last:
            return None
        if key_runs(exchange.wire) & runs:
            return exchange
    return None


class Reproduction:
    """The shell lines that show a check's defect on their own, after the exports: fresh keys,
    the first request of a reused key, a race sent at once, a short-lived token waited out.

    Built from exchanges (the real values), rendered safe (variables) or revealed on demand."""

    def __init__(self, steps: Sequence[Recorded], race: int = 0) -> None:
        self.steps = list(steps)
        self.race = race
        self.masker = self.steps[0].masker if self.steps else Masker()  # the run's

    def render(self, reveal: bool = False) -> tuple[str, dict[str, str]]:
        """(the script, variable -> client_id of the credentials it needs)."""
        keys = _Keys()
        numbers = _Numbers(self.steps)
        needs: dict[str, str] = {}
        curls: list[str] = []
        wait = 0.0
        for step in self.steps:
            words, stand_ins = step._curl_words(reveal, keys, numbers)
            curls.append(step._joined(words))
            for var, owner in stand_ins.needs.items():
                if owner or var not in needs:
                    needs[var] = owner
            wait = max(wait, stand_ins.short_ttl_s)
        lines = keys.lines() + numbers.lines()
        if wait:
            lines.append(f"sleep {math.ceil(wait) + 1}  # past the short-lived token's lifetime")
        if self.race:
            lines.append(
                f"i=0; while [ $i -lt {self.race} ]; do i=$((i+1)); {curls[0]} & done; wait"
            )
            lines.extend(curls[1:])  # the read that shows what the race made
        else:
            lines.extend(curls)
        return "\n".join(lines), needs

    def to_dict(self, reveal: bool = False) -> dict[str, Any]:
        script, needs = self.render(reveal)
        data: dict[str, Any] = {"script": script}
        if needs and not reveal:
            data["env"] = needs
        if self.race:
            data["race"] = self.race
        return data


def reproduction(shown: Sequence[Recorded], sent: Sequence[Recorded]) -> Reproduction | None:
    """What shows a check's defect: the last exchange of its proof (``shown``), preceded by the
    first request of a key it reuses, or sent as often at once as the check raced it; ``sent``
    is every exchange the check made, in order. None without an exchange."""
    if not shown:
        return None
    last = shown[-1]
    race = _race(last, sent)
    steps = [last]
    if not race:
        first = _first_use(last, sent)
        steps = [first, last] if first is not None else [*_repeats(last, shown), last]
    return Reproduction(steps + _read_back(steps, sent), race)


def _repeats(last: Recorded, shown: Sequence[Recorded]) -> list[Recorded]:
    """The proof's earlier requests identical to a keyless ``last`` (method, URL, body): a
    defect that shows only when the same request is sent again (one ref answered to two keyless
    creations, IDEM-006) is reproduced by sending it as often."""
    if key_runs(last.wire):
        return []
    same = (last.wire.method, last.wire.url, last.wire.request_body)
    return [e for e in shown[:-1] if (e.wire.method, e.wire.url, e.wire.request_body) == same]


_EVENTS_PATH = "/events/transactions"
_REF_IN = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def _read_back(steps: Sequence[Recorded], sent: Sequence[Recorded]) -> list[Recorded]:
    """The events listing the check read after ``steps`` about what they sent (their number,
    a ref in their URLs): what shows a defect the answers do not (a rejected request executed
    anyway, an event missing)."""
    wanted: set[str] = set()
    for step in steps:
        body = _text(step.wire.request_body)
        wanted |= {m["v"] for m in _BODY_NUMBER.finditer(body)}
        wanted |= set(_REF_IN.findall(urlsplit(step.wire.url).path))
    if not wanted:
        return []
    after = sent[sent.index(steps[-1]) + 1 :] if steps[-1] in sent else []
    for exchange in after:
        parts = urlsplit(exchange.wire.url)
        if exchange.method != "GET" or not parts.path.endswith(_EVENTS_PATH):
            continue
        values = {value for _, _, value in (p.partition("=") for p in parts.query.split("&"))}
        if values & wanted:
            return [exchange]
    return []


@dataclass
class Evidence:
    """What one check recorded: its exchanges, plus any from a tool (schemathesis) verbatim."""

    exchanges: list[Recorded] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    limit: int = 400

    def add(self, exchange: Recorded) -> None:
        if len(self.exchanges) < self.limit:
            self.exchanges.append(exchange)

    def to_list(
        self, *, only_last: int | None = None, reveal: bool = False
    ) -> list[dict[str, Any]]:
        items = [exchange.to_dict(reveal=reveal) for exchange in self.exchanges]
        if only_last is not None and len(items) > only_last:
            items = items[-only_last:]
        return self.extra + items


# --- a tool's curl (schemathesis's code sample) ----------------------------------------------
class ToolItem(dict[str, Any]):
    """A tool's evidence item (a plain dict to JSON) that knows how to reproduce it."""

    __slots__ = ("reproduction",)

    def __init__(self, data: dict[str, Any], reproduction: Reproduction | None) -> None:
        super().__init__(data)
        self.reproduction = reproduction

    @property
    def masker(self) -> Masker | None:
        return self.reproduction.masker if self.reproduction is not None else None


_CURL_DATA = ("-d", "--data", "--data-raw", "--data-binary")


def _parse_curl(line: str, masker: Masker) -> Recorded | None:
    """One ``curl -X M -H 'h: v' -d 'body' 'url'`` line as the exchange it sends (None: a
    shape this reader does not know)."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    if not words or words[0] != "curl":
        return None
    method, url, body = "GET", "", None
    headers: list[tuple[str, str]] = []
    rest = iter(words[1:])
    for word in rest:
        if word == "-X":
            method = next(rest, "GET")
        elif word == "-H":
            name, _, value = next(rest, "").partition(":")
            headers.append((name.strip(), value.strip()))
        elif word in _CURL_DATA:
            body = next(rest, "")
        elif word.startswith("-") or url:
            return None
        else:
            url = word
    if not url:
        return None
    recorded = Recorded.build(method, url, {}, body, masker=masker)
    recorded.wire.request_headers = tuple(headers)  # a header may repeat
    recorded.wire.started = 0.0  # not sent by the suite: never a racer
    return recorded


def tool_item(data: dict[str, Any], code_sample: str, masker: Masker) -> ToolItem:
    """A tool's evidence item whose ``curl`` is its code sample with the credentials named by
    variable, as the suite's own curls (the tool prints them in full), and which reproduces as
    the suite's own do: each line a request, keys fresh. A sample this reader cannot parse is
    kept with every credential the run (``masker``) knows shortened (it may not replay)."""
    lines = [line for line in code_sample.splitlines() if line.strip()]
    steps = [_parse_curl(line, masker) for line in lines]
    if not steps or any(step is None for step in steps):
        return ToolItem({**data, "curl": masker.shortened(code_sample)}, None)
    recorded = [step for step in steps if step is not None]
    safe = [step.to_dict() for step in recorded]
    item = {**data, "curl": "\n".join(one["curl"] for one in safe)}
    if needs := {var: app for one in safe for var, app in one.get("env", {}).items()}:
        item["env"] = needs
    return ToolItem(item, Reproduction(recorded))
