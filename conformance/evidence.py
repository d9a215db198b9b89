"""Evidence: the HTTP exchanges a check made, kept so a failure can prove itself.

Every request a check sends is recorded with its response. An exchange keeps the values it really
sent (tokens, client secrets, refresh tokens in a path) privately and renders two forms:

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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

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


def _safe_headers(headers: dict[str, str]) -> dict[str, str]:
    safe = {}
    for name, value in headers.items():
        if name.lower() == "authorization":
            value = shorten_token(value)
        safe[name] = value
    return safe


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


def _learn(exchange: Exchange) -> None:
    """Remember the tokens a 2xx authorize or refresh answered, and the secret that earned them."""
    if exchange.status is None or not 200 <= exchange.status < 300:
        return
    answer = exchange.json()
    if not isinstance(answer, dict) or not isinstance(answer.get("access"), str):
        return
    client_id = ""
    sent: Any = None
    if exchange._raw_body:
        try:
            sent = json.loads(exchange._raw_body)
        except ValueError:
            sent = None
    if isinstance(sent, dict):
        # A client_id JSON-escaped as a lone surrogate (ERR-004 sends one) stays escaped: the
        # report and the terminal write UTF-8, which cannot hold the surrogate itself.
        client_id = str(sent.get("client_id") or "").encode("utf-8", "backslashreplace").decode()
        _SECRETS.add(sent.get("client_secret"), client_id)
    path_token = _REFRESH_PATH.search(exchange._raw_url)
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


def _split_segments(text: str, pattern: re.Pattern[str], group: int, replace: Any) -> list[Segment]:
    """Cut ``text`` at each match; ``replace(value)`` gives the segments of group ``group``."""
    segments: list[Segment] = []
    position = 0
    for match in pattern.finditer(text):
        segments.append(text[position : match.start(group)])
        segments.extend(replace(match.group(group)))
        position = match.end(group)
    segments.append(text[position:])
    return [s for s in segments if s != ""]


class EvidenceItem(dict[str, Any]):
    """The safe form of an exchange (a plain dict to JSON), able to give its revealed form.

    The real values are reachable only through :meth:`revealed`, never as keys, so serializing
    or copying the item can only publish the safe form.
    """

    __slots__ = ("_exchange",)

    def __init__(self, data: dict[str, Any], exchange: Exchange) -> None:
        super().__init__(data)
        self._exchange = exchange

    def revealed(self) -> dict[str, Any]:
        return self._exchange.to_dict(reveal=True)


def item_form(item: dict[str, Any], *, reveal: bool) -> dict[str, Any]:
    """An evidence item as a report shows it: revealed when asked and known, else as given."""
    if reveal and isinstance(item, EvidenceItem):
        return item.revealed()
    return item


@dataclass
class Exchange:
    """One request and its response (or the transport error that replaced it).

    ``url``, ``request_headers`` and ``request_body`` are the redacted forms (safe to put in a
    failure message); the values really sent are kept in private fields for the curl.
    """

    method: str
    url: str
    request_headers: dict[str, str]
    request_body: str | None
    status: int | None = None
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: str | None = None
    error: str | None = None
    elapsed_ms: float | None = None
    note: str | None = None
    _raw_url: str = field(default="", repr=False, compare=False)
    _raw_headers: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    _raw_body: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def build(
        cls,
        method: str,
        url: str,
        headers: dict[str, str],
        body: str | bytes | None,
        note: str | None = None,
    ) -> Exchange:
        if isinstance(body, bytes):
            body = body.decode("utf-8", errors="replace")
        return cls(
            method=method.upper(),
            url=redact_url(url),
            request_headers=_safe_headers(headers),
            request_body=None if body is None else truncate(redact_body(body)),
            note=note,
            _raw_url=url,
            _raw_headers=dict(headers),
            _raw_body=None if body is None else truncate(body, MAX_REPLAY_BODY_CHARS),
        )

    def record_response(
        self, status: int, headers: dict[str, str], body: str, elapsed_ms: float
    ) -> None:
        self.status = status
        self.response_headers = dict(headers)
        self.response_body = truncate(body)
        self.elapsed_ms = round(elapsed_ms, 1)
        _learn(self)

    def _curl_words(self, reveal: bool) -> tuple[list[list[Segment]], _StandIns]:
        stand_ins = _StandIns()
        words: list[list[Segment]] = [["curl"], ["-sS"], ["-i"], ["-X"], [self.method]]
        for name, value in self._raw_headers.items():
            if name.lower() in _SKIPPED_CURL_HEADERS:
                continue
            words.append(["-H"])
            if name.lower() == "authorization" and not reveal:
                words.append([f"{name}: ", *self._authorization(value, stand_ins)])
            else:
                words.append([f"{name}: {value}"])
        if self._raw_body is not None:
            words.append(["--data-raw"])
            if reveal:
                words.append([self._raw_body])
            else:
                words.append(
                    _split_segments(
                        self._raw_body,
                        _SECRET_KEYS,
                        2,
                        lambda v: stand_ins.stand_in(v, _SECRETS, SECRET_VAR, "client_secret"),
                    )
                )
        if reveal:
            words.append([self._raw_url])
        else:
            words.append(
                _split_segments(
                    self._raw_url,
                    _REFRESH_PATH,
                    2,
                    lambda v: stand_ins.stand_in(v, _REFRESH, REFRESH_VAR, "refresh token"),
                )
            )
        return words, stand_ins

    @staticmethod
    def _authorization(value: str, stand_ins: _StandIns) -> list[Segment]:
        """The credential of an Authorization value as ``$PAYSUITE_TOKEN``, its scheme kept."""
        scheme, sep, credential = value.partition(" ")
        if not sep:
            scheme, credential = "", value
        if not credential:
            return [value]
        prefix = f"{scheme} " if sep else ""
        return [prefix, *stand_ins.stand_in(credential, _ACCESS, TOKEN_VAR, "token")]

    def curl(self, reveal: bool = False) -> str:
        """A shell command that sends the same request (credentials by variable unless revealed)."""
        words, _ = self._curl_words(reveal)
        return " ".join(_shell_word(word) for word in words)

    def json(self) -> Any:
        """The response body parsed as JSON, or ``None`` when it is not JSON."""
        if self.response_body is None:
            return None
        try:
            return json.loads(self.response_body)
        except ValueError:
            return None

    def to_dict(self, reveal: bool = False) -> dict[str, Any]:
        """The exchange as evidence: the safe form (an :class:`EvidenceItem`) or the revealed one.

        Keys: ``request``, ``response``, ``curl``; the safe form adds ``env`` (variable ->
        client_id whose credential it holds) when its curl needs variables, and ``note`` when
        that curl cannot replay the exact request.
        """
        request: dict[str, Any] = {
            "method": self.method,
            "url": self._raw_url if reveal else self.url,
            "headers": dict(self._raw_headers) if reveal else self.request_headers,
            "body": self._raw_body if reveal else self.request_body,
        }
        if self.note:
            request["note"] = self.note
        response: dict[str, Any] | None
        if self.error is not None:
            response = {"error": self.error}
        else:
            body = self.response_body
            response = {
                "status": self.status,
                "headers": self.response_headers,
                "body": body if reveal or body is None else redact_issued(body),
                "elapsed_ms": self.elapsed_ms,
            }
        words, stand_ins = self._curl_words(reveal)
        data: dict[str, Any] = {
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

    exchanges: list[Exchange] = field(default_factory=list)
    extra: list[dict[str, Any]] = field(default_factory=list)
    limit: int = 400

    def add(self, exchange: Exchange) -> None:
        if len(self.exchanges) < self.limit:
            self.exchanges.append(exchange)

    def to_list(
        self, *, only_last: int | None = None, reveal: bool = False
    ) -> list[dict[str, Any]]:
        items = [exchange.to_dict(reveal=reveal) for exchange in self.exchanges]
        if only_last is not None and len(items) > only_last:
            items = items[-only_last:]
        return self.extra + items
