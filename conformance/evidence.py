"""Evidence: the HTTP exchanges a check made, kept so a failure can prove itself.

Every request a check sends is recorded with its response (a ``Recorded``: the wire's
``paysuite_core.exchange.Exchange``, which keeps the values really sent, tokens, client secrets,
refresh tokens in a path, and renders two forms):

- the *safe* form (the default, what reports publish): displayed headers and bodies are redacted
  (bearer tokens shortened, client secrets masked, issued tokens in a response shortened) and the
  curl command names the credentials by environment variable (``$PAYSUITE_TOKEN``,
  ``$PAYSUITE_REFRESH_TOKEN``, ``$PAYSUITE_CLIENT_SECRET``), so it replays as printed once those
  are exported (:func:`replay_exports` says how) and a report never leaks a credential;
- the *revealed* form (``to_dict(reveal=True)``, ``--reveal-secrets``): the real values
  everywhere, for a private run whose curl must replay without any setup.

A credential the suite derived from a real one (a token with an altered signature, a secret with
a suffix) cannot be named by a variable without changing the request; such a curl says so in the
item's ``note`` rather than silently replaying something else. To tell a credential the target
issued from one the suite made up, exchanges remember (process-wide, bounded) the tokens that
authorize and refresh answered and the secrets that authorize accepted.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from paysuite_core.exchange import Exchange
from paysuite_core.tokens import AUTHORIZE_PATH

MAX_BODY_CHARS = 2000
#: A request body kept for the curl is never cut at 2000 characters (it would not replay), but a
#: runaway one is (a property test can send megabytes).
MAX_REPLAY_BODY_CHARS = 200_000
TOKEN_VAR = "PAYSUITE_TOKEN"
REFRESH_VAR = "PAYSUITE_REFRESH_TOKEN"
SECRET_VAR = "PAYSUITE_CLIENT_SECRET"

_SECRET_KEYS = re.compile(r'("client_secret"\s*:\s*")([^"]*)(")')
_ISSUED_KEYS = re.compile(r'("(?:access|refresh)"\s*:\s*")([^"]*)(")')
_REFRESH_PATH = re.compile(r"(/refresh/)([^/?#]+)")
_SKIPPED_CURL_HEADERS = ("content-length", "host", "accept-encoding", "connection", "user-agent")


def shorten_token(value: str) -> str:
    """``Bearer eyJhbGciOiJI…Xk3`` : enough to tell tokens apart, not enough to use one."""
    scheme, sep, token = value.partition(" ")
    if not sep:
        scheme, token = "", value
    if len(token) > 24:
        token = f"{token[:12]}…{token[-6:]}"
    return f"{scheme} {token}" if scheme else token


def redact_body(text: str) -> str:
    """Mask client secrets the report would otherwise publish."""
    return _SECRET_KEYS.sub(lambda m: f"{m.group(1)}{m.group(2)[:4]}…{m.group(3)}", text)


def redact_issued(text: str) -> str:
    """Shorten the access and refresh tokens of a token pair shown as a response body."""
    return _ISSUED_KEYS.sub(lambda m: m.group(1) + shorten_token(m.group(2)) + m.group(3), text)


def redact_url(url: str) -> str:
    """Shorten a refresh token carried in a refresh path."""
    return re.sub(
        r"(/refresh/)([^/?#]{25,})",
        lambda m: m.group(1) + m.group(2)[:12] + "…" + m.group(2)[-6:],
        url,
    )


def truncate(text: str, limit: int = MAX_BODY_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"… [{len(text) - limit} more characters]"


def safe_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers with the Authorization credential shortened."""
    return {k: shorten_token(v) if k.lower() == "authorization" else v for k, v in headers.items()}


# --- credentials the target issued or accepted ---------------------------------------------
class _Known:
    """Credential value -> the client_id it belongs to ("" when unknown), oldest dropped first.

    Process-wide on purpose: a token is issued in one check (or the session's set-up) and sent in
    another, and the values are random, so nested sessions cannot confuse each other.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._owners: dict[str, str] = {}
        self._limit = limit

    def add(self, value: Any, client_id: str) -> None:
        if not isinstance(value, str) or not value:
            return
        self._owners.pop(value, None)
        self._owners[value] = client_id
        while len(self._owners) > self._limit:
            del self._owners[next(iter(self._owners))]

    def match(self, value: str) -> tuple[str, str] | None:
        """(known value, client_id) equal to ``value`` or, failing that, its longest prefix."""
        if value in self._owners:
            return value, self._owners[value]
        best: tuple[str, str] | None = None
        for known, owner in self._owners.items():
            if len(known) >= 8 and value.startswith(known):
                if best is None or len(known) > len(best[0]):
                    best = (known, owner)
        return best


_ACCESS = _Known()
_REFRESH = _Known()
_SECRETS = _Known()


def _learn(exchange: Recorded) -> None:
    """Remember the tokens a 2xx authorize or refresh answered, and the secret that earned them."""
    if not 200 <= exchange.wire.status < 300:
        return
    answer = exchange.wire.response_json()
    if not isinstance(answer, dict) or not isinstance(answer.get("access"), str):
        return
    client_id = ""
    sent: Any = None
    raw_body = exchange._raw_body()
    if raw_body:
        try:
            sent = json.loads(raw_body)
        except ValueError:
            sent = None
    if isinstance(sent, dict):
        # A client_id JSON-escaped as a lone surrogate (ERR-004 sends one) stays escaped: the
        # report and the terminal write UTF-8, which cannot hold the surrogate itself.
        client_id = str(sent.get("client_id") or "").encode("utf-8", "backslashreplace").decode()
        _SECRETS.add(sent.get("client_secret"), client_id)
    path_token = _REFRESH_PATH.search(exchange.wire.url)
    if not client_id and path_token:
        known = _REFRESH.match(path_token.group(2))
        client_id = known[1] if known else ""
    _ACCESS.add(answer.get("access"), client_id)
    _REFRESH.add(answer.get("refresh"), client_id)


# --- shell words with environment variables --------------------------------------------------
@dataclass(frozen=True)
class _Var:
    """An environment variable standing in for a credential inside a shell word."""

    name: str


Segment = str | _Var
_DOUBLE_QUOTE_UNSAFE = re.compile(r'["\\$`!]')


def _shell_word(segments: Sequence[Segment]) -> str:
    """Quote one argument; variables stay expandable (``"Authorization: Bearer $PAYSUITE_TOKEN"``).

    Plain text uses ``shlex.quote``. With a variable, the whole word goes in double quotes when its
    text allows (readable), else single-quoted text is spliced with ``"$VAR"`` (a JSON body).
    """
    if not any(isinstance(s, _Var) for s in segments):
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
            else:
                out.append(segment)
        return '"' + "".join(out) + '"'
    out = []
    for segment in segments:
        if isinstance(segment, _Var):
            out.append(f'"${segment.name}"')
        elif segment:
            out.append(shlex.quote(segment))
    return "".join(out)


@dataclass
class _StandIns:
    """What the safe curl needed: variable -> client_id (or ""), and why it may not replay."""

    needs: dict[str, str] = field(default_factory=dict)
    inexact: list[str] = field(default_factory=list)

    def stand_in(self, value: str, known: _Known, var: str, what: str) -> list[Segment]:
        """``value`` as ``$VAR`` (+ the literal suffix the suite appended to a known value)."""
        match = known.match(value)
        if match is None:
            self.needs.setdefault(var, "")
            self.inexact.append(
                f"the {what} sent is not one the target issued or accepted in this run (a "
                f"forgery or a wrong value): ${var} stands in for it, so the replay differs; "
                "--reveal-secrets prints the exact value"
            )
            return [_Var(var)]
        found, owner = match
        if owner or var not in self.needs:
            self.needs[var] = owner
        suffix = value[len(found) :]
        return [_Var(var), suffix] if suffix else [_Var(var)]


def _split_segments(
    text: str, pattern: re.Pattern[str], stand_in: Callable[[str], list[Segment]]
) -> list[Segment]:
    """Cut ``text`` at each match; ``stand_in(value)`` gives the segments of the match's group 2
    (the credential between the key or path and what follows)."""
    segments: list[Segment] = []
    position = 0
    for match in pattern.finditer(text):
        segments.append(text[position : match.start(2)])
        segments.extend(stand_in(match.group(2)))
        position = match.end(2)
    segments.append(text[position:])
    return [s for s in segments if s != ""]


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

    __slots__ = ("note", "wire", "_has_body")

    def __init__(self, wire: Exchange, *, note: str | None = None, has_body: bool = True) -> None:
        self.wire = wire
        self.note = note
        self._has_body = has_body
        if wire.status:
            _learn(self)

    @classmethod
    def build(
        cls,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: str | bytes | None,
        note: str | None = None,
    ) -> Recorded:
        data = body.encode("utf-8", "surrogatepass") if isinstance(body, str) else body
        wire = Exchange(method.upper(), url, tuple(headers.items()), data or b"")
        return cls(wire, note=note, has_body=body is not None)

    def record_response(
        self, status: int, headers: Mapping[str, str], body: str, elapsed_ms: float
    ) -> None:
        self.wire.status = status
        self.wire.response_headers = tuple(headers.items())
        self.wire.response_body = body.encode("utf-8", "surrogatepass")
        self.wire.elapsed_ms = round(elapsed_ms, 1)
        _learn(self)

    @property
    def method(self) -> str:
        return self.wire.method

    @property
    def url(self) -> str:
        return redact_url(self.wire.url)

    @property
    def request_headers(self) -> dict[str, str]:
        return safe_headers(dict(self.wire.request_headers))

    @property
    def request_body(self) -> str | None:
        if not self._has_body:
            return None
        return truncate(redact_body(_text(self.wire.request_body)))

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

    def _curl_words(self, reveal: bool) -> tuple[list[list[Segment]], _StandIns]:
        stand_ins = _StandIns()
        words: list[list[Segment]] = [["curl"], ["-sS"], ["-i"], ["-X"], [self.method]]
        for name, value in self.wire.request_headers:
            if name.lower() in _SKIPPED_CURL_HEADERS:
                continue
            words.append(["-H"])
            if name.lower() == "authorization" and not reveal:
                words.append([f"{name}: ", *_authorization(value, stand_ins)])
            else:
                words.append([f"{name}: {value}"])
        body = self._raw_body()
        if body is not None:
            words += [["--data-raw"], [body] if reveal else _stand_in_secrets(body, stand_ins)]
        if reveal:
            words.append([self.wire.url])
        else:
            words.append(
                _split_segments(
                    self.wire.url,
                    _REFRESH_PATH,
                    lambda v: stand_ins.stand_in(v, _REFRESH, REFRESH_VAR, "refresh token"),
                )
            )
        return words, stand_ins

    def curl(self, reveal: bool = False) -> str:
        """A shell command that sends the same request (credentials by variable unless revealed)."""
        words, _ = self._curl_words(reveal)
        return " ".join(_shell_word(word) for word in words)

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
                "body": body if reveal or body is None else redact_issued(body),
                "elapsed_ms": self.wire.elapsed_ms if self.wire.status else None,
            }
        words, stand_ins = self._curl_words(reveal)
        data = {
            "request": request,
            "response": response,
            "curl": " ".join(_shell_word(word) for word in words),
        }
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
    exchange: Exchange, note: str | None = None, had_body: bool | None = None
) -> dict[str, Any]:
    """An exchange another tool recorded (the proxy, an SDK run) as a safe evidence item;
    ``had_body`` tells an empty body from none (default: an empty body is none)."""
    if not exchange.status:
        exchange = replace(exchange, error=exchange.error or "no answer")
    sent = bool(exchange.request_body) if had_body is None else had_body
    return Recorded(exchange, note=note, has_body=sent).to_dict()


def _text(body: bytes) -> str:
    return body.decode("utf-8", errors="replace")


def _authorization(value: str, stand_ins: _StandIns) -> list[Segment]:
    """The credential of an Authorization value as ``$PAYSUITE_TOKEN``, its scheme kept."""
    scheme, sep, credential = value.partition(" ")
    if not sep:
        scheme, credential = "", value
    if not credential:
        return [value]
    prefix = f"{scheme} " if sep else ""
    return [prefix, *stand_ins.stand_in(credential, _ACCESS, TOKEN_VAR, "token")]


def _stand_in_secrets(body: str, stand_ins: _StandIns) -> list[Segment]:
    return _split_segments(
        body,
        _SECRET_KEYS,
        lambda v: stand_ins.stand_in(v, _SECRETS, SECRET_VAR, "client_secret"),
    )


def replay_exports(base_url: str, needs: dict[str, set[str]]) -> list[str]:
    """Shell lines that fill the variables the safe curls use, application by application.

    ``needs`` maps a variable to the client_ids whose credential it stood for ("" when unknown).
    A token is fetched fresh from authorize (the one the run used has likely expired), which
    needs the application's secret, so ``$PAYSUITE_CLIENT_SECRET`` always comes first.
    """
    if not needs:
        return []
    owners = sorted({cid for cids in needs.values() for cid in cids if cid}) or ["<client_id>"]
    authorize = shlex.quote(base_url.rstrip("/") + AUTHORIZE_PATH)
    lines: list[str] = []
    for cid in owners:
        if len(owners) > 1:
            lines.append(f"# application {cid}")
        lines.append(f"export {SECRET_VAR}='<the client_secret of {cid} in the target config>'")
        body = '{"client_id":' + json.dumps(cid).replace("'", "'\\''") + ","
        body += f'"client_secret":"\'"${SECRET_VAR}"\'"}}'
        for var, key in ((TOKEN_VAR, "access"), (REFRESH_VAR, "refresh")):
            if var in needs:
                lines.append(
                    f"export {var}=$(curl -sS -X POST {authorize} "
                    "-H 'Content-Type: application/json' -H 'Accept: application/json' "
                    f"-d '{body}' | python3 -c "
                    f"'import json,sys;print(json.load(sys.stdin)[\"{key}\"])')"
                )
    return lines


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
