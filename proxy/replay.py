"""``paysuite replay FILE.har --target URL``: re-send a recorded session and judge it again.

A recorded HAR is masked and its values belong to the recorded session (expired tokens, another
target's refs), so each request is rebuilt before it is sent, in the recorded order: secrets from
``--config``, each token placeholder bound to the value the replayed answer gives in the same
place, refs a replayed creation returns, idempotency keys renewed in shape (docs/proxy.md,
"paysuite replay", says how each is done). An exchange that cannot be rebuilt is listed with the
reason and not sent. Each replayed exchange goes to the same ``Judge`` as live traffic, so a
violation found live is reproduced, or shown fixed, by one command.
"""

from __future__ import annotations

import argparse
import json
import re
import secrets
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TextIO
from urllib.parse import quote, unquote, urlsplit

import httpx

from paysuite_core import guarded_json
from paysuite_core.api_types import JsonObject
from paysuite_core.bounded_http import (
    CONFORM_LIMITS,
    BoundedClient,
    Limits,
    ResponseTooLarge,
    TotalTimeout,
    in_words,
)
from paysuite_core.exchange import Exchange, Headers
from paysuite_core.results.masking import PLACEHOLDER, placeholders_in
from paysuite_core.target_config import Application, TargetConfig
from paysuite_core.tls import TLSSettings, explain
from proxy.routes import forwarded_url
from proxy.rules import Violation

#: The longest pause ``--keep-timing`` makes between two requests.
MAX_GAP_S = 60.0
#: Headers that belong to one connection or are recomputed for the body sent (RFC 9110 7.6.1).
NOT_RESENT = frozenset(
    {"host", "content-length", "connection", "keep-alive", "proxy-connection", "te",
     "transfer-encoding", "upgrade"}
)  # fmt: skip
#: What httpx adds on its own: removed unless the recording had it, so the request is as recorded.
_CLIENT_DEFAULTS = ("accept", "accept-encoding", "connection", "user-agent")
_REFUSED = (400, 401, 403)
#: « and » as an ASCII-only JSON encoder writes them (U+00AB, U+00BB).
_ESCAPED_GUILLEMETS = re.compile(r"\\u00(ab|bb)", re.IGNORECASE)
_KEY_QUERY = re.compile(r"(?i)(^|&)(idempotency-key=)([^&]*)")


class Judging(Protocol):
    """What the replay needs of ``proxy.judge.Judge``."""

    def observe(self, exchange: Exchange) -> Sequence[Violation]: ...

    def finish(self) -> Sequence[Violation]: ...


class TargetDown(RuntimeError):
    """The target refused the connection: nothing more of the session can be replayed."""


@dataclass(frozen=True)
class Skipped:
    """A recorded exchange the replay did not send, and why."""

    seq: int
    method: str
    url: str
    reason: str

    def line(self) -> str:
        return f"not replayed: #{self.seq} {self.method} {self.url}: {self.reason}"


@dataclass(frozen=True)
class Outgoing:
    method: str
    url: str
    headers: Headers
    body: bytes


@dataclass
class Rebuilder:
    """Turns each recorded (masked) exchange into the request to send now, and learns from each
    replayed answer the values later requests need."""

    target: str
    recorded_target: str | None = None
    config: TargetConfig | None = None
    keep_keys: bool = False
    values: dict[str, str] = field(default_factory=dict)  # placeholder -> value in this replay
    refs: dict[str, str] = field(default_factory=dict)  # recorded ref -> replayed ref
    keys: dict[str, str] = field(default_factory=dict)  # recorded key -> key sent now
    #: recorded client_id -> the target's application that sends its requests (``proxy.appmap``)
    apps: dict[str, Application] = field(default_factory=dict)

    def url(self, recorded_url: str) -> str:
        """The recorded URL moved onto ``target``, as ``paysuite proxy`` forwards (a ``target``
        given as the API's base URL is not doubled: ``proxy.routes.forwarded_url``)."""
        recorded_base = (self.recorded_target or "").rstrip("/")
        rest = recorded_url[len(recorded_base) :]
        if not (
            recorded_base and recorded_url.startswith(recorded_base) and rest[:1] in ("", "/", "?")
        ):
            parts = urlsplit(recorded_url)
            rest = parts.path + (f"?{parts.query}" if parts.query else "")
        return forwarded_url(self.target, rest)

    def rebuild(self, recorded: Exchange) -> Outgoing | Skipped:
        reason = self._bind_secret(recorded)
        if reason:
            return Skipped(recorded.seq, recorded.method, recorded.url, reason)
        url = self._url_values(self._renew_query_key(self.url(recorded.url)))
        headers = tuple(
            (name, self._renew_header_key(name, self._filled(value)))
            for name, value in recorded.request_headers
            if name.lower() not in NOT_RESENT
        )
        body = self._client_id(recorded, self._body(recorded.request_body))
        sent = url + "".join(v for _, v in headers) + body.decode("utf-8", errors="replace")
        left = placeholders_in(sent)
        if left:
            why = (
                f"it uses {left[0]}, which the configuration cannot fill"
                if ":secret:" in left[0]
                else f"it uses {left[0]}, which no replayed answer issued (a token obtained"
                " before the recording began, or whose authorize or refresh failed or was not"
                " replayed)"
            )
            return Skipped(recorded.seq, recorded.method, recorded.url, why)
        return Outgoing(recorded.method, url, headers, body)

    def learn(self, recorded: Exchange, replayed: Exchange) -> None:
        """Bind the placeholders and refs of ``recorded``'s answer to ``replayed``'s values (a
        target may issue one token twice, e.g. within one second: the recording then shows one
        placeholder where the replay obtains two values)."""
        if not 200 <= replayed.status < 300:
            return
        for old, new in _same_places(recorded.response_json(), replayed.response_json()):
            if PLACEHOLDER.fullmatch(old):
                # the latest answer wins: a client goes on with the pair it received last
                self.values[old] = new
        if recorded.method == "POST":
            old_ref, new_ref = _ref(recorded.response_json()), _ref(replayed.response_json())
            if old_ref and new_ref and old_ref != new_ref:
                self.refs.setdefault(old_ref, new_ref)

    # -- secrets ------------------------------------------------------------------------------
    def _bind_secret(self, recorded: Exchange) -> str:
        """Fill the client secret of an authorize from the configuration; why not, if it can't."""
        body = recorded.request_json()
        if not isinstance(body, dict) or not isinstance(body.get("client_secret"), str):
            return ""
        masked = body["client_secret"]
        if not PLACEHOLDER.fullmatch(masked) or masked in self.values:
            return ""
        if recorded.status in _REFUSED:
            self.values[masked] = "wrong-" + secrets.token_hex(12)
            return ""
        client_id = body.get("client_id")
        app = self.apps.get(str(client_id)) or next(
            (
                a
                for a in (self.config.applications if self.config else ())
                if a.client_id == client_id
            ),
            None,
        )
        if app is None and self.config is None:
            return (
                f"application {client_id!r} of the recording maps to no application: its secret "
                "is masked and no --config gives the target's"
            )
        if app is None:
            return (
                f"application {client_id!r} of the recording maps to no application of --config "
                f"(give --map {client_id}=CLIENT_ID)"
            )
        self.values[masked] = app.client_secret
        return ""

    def _client_id(self, recorded: Exchange, body: bytes) -> bytes:
        """An authorize body with the recorded client_id swapped for its mapped application's."""
        data = recorded.request_json()
        client_id = data.get("client_id") if isinstance(data, dict) else None
        if not isinstance(client_id, str):
            return body
        app = self.apps.get(client_id)
        if app is None or app.client_id == client_id:
            return body
        return body.replace(client_id.encode(), app.client_id.encode())

    # -- substitution ---------------------------------------------------------------------------
    def _filled(self, text: str, encoded: Callable[[str], str] = str) -> str:
        """``text`` with each bound placeholder replaced by its value, ``encoded`` for where it
        stands, and each recorded ref by the replayed one."""
        text = PLACEHOLDER.sub(
            lambda m: encoded(self.values[m[0]]) if m[0] in self.values else m[0], text
        )
        for old, new in self.refs.items():
            text = text.replace(old, new)
        return text

    def _url_values(self, url: str) -> str:
        """Placeholders and refs replaced, each value encoded for where it stands: a path
        segment keeps what a segment may hold, a query value only the unreserved characters."""
        path, sep, query = url.partition("?")
        return (
            self._filled(path, lambda v: quote(v, safe="-._~!$'()*+,;=:@"))
            + sep
            + self._filled(query, lambda v: quote(v, safe="-._~"))
        )

    def _body(self, body: bytes) -> bytes:
        if not body:
            return body
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return body
        try:
            guarded_json.loads(text, what="a recorded body")
        except ValueError:
            return self._filled(text).encode("utf-8")
        # in JSON: a placeholder an ASCII-only encoder wrote (\u00abmasked...), a value escaped
        text = _ESCAPED_GUILLEMETS.sub(lambda m: "«" if m.group(1).lower() == "ab" else "»", text)
        return self._filled(text, lambda v: json.dumps(v)[1:-1]).encode("utf-8")

    # -- idempotency keys ------------------------------------------------------------------------
    def _renewed(self, key: str) -> str:
        if self.keep_keys or not key:
            return key
        if key not in self.keys:
            alphabet = "0123456789abcdef"
            self.keys[key] = re.sub(r"[A-Za-z0-9]", lambda _m: secrets.choice(alphabet), key)
        return self.keys[key]

    def _renew_header_key(self, name: str, value: str) -> str:
        return self._renewed(value) if name.lower() == "idempotency-key" else value

    def _renew_query_key(self, url: str) -> str:
        head, sep, query = url.partition("?")
        if not sep:
            return url
        query = _KEY_QUERY.sub(
            lambda m: m.group(1) + m.group(2) + quote(self._renewed(unquote(m.group(3))), safe=""),
            query,
        )
        return f"{head}?{query}"


def _ref(data: object) -> str | None:
    ref = data.get("ref") if isinstance(data, dict) else None
    return ref if isinstance(ref, str) and len(ref) >= 8 else None


def _same_places(recorded: object, replayed: object) -> Iterator[tuple[str, str]]:
    """(recorded string, replayed string) found under the same keys of two JSON objects."""
    if not isinstance(recorded, dict) or not isinstance(replayed, dict):
        return
    for key, old in recorded.items():
        new = replayed.get(key)
        if isinstance(old, str) and isinstance(new, str):
            yield old, new
        elif isinstance(old, dict):
            yield from _same_places(old, new)


# --- sending -----------------------------------------------------------------------------------
@dataclass
class Sender:
    """One request at a time through the bounded reader, the answer read raw (as the wire
    carried it, not inflated) and within conform's limits: the replayed exchange records the
    bytes the target sent, as the proxy does."""

    client: BoundedClient

    def send(self, seq: int, outgoing: Outgoing) -> Exchange:
        request = self.client.build_request(
            outgoing.method, outgoing.url, headers=list(outgoing.headers), content=outgoing.body
        )
        recorded_names = {name.lower() for name, _ in outgoing.headers}
        for name in _CLIENT_DEFAULTS:
            if name not in recorded_names and name in request.headers:
                del request.headers[name]
        started, began = time.time(), time.perf_counter()
        status, body, error = 0, b"", ""
        headers: Headers = ()
        try:
            answer = self.client.send(request, raw=True)
            status, body = answer.status, answer.body
            headers = tuple(
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in answer.headers.raw
            )
        except (httpx.HTTPError, ResponseTooLarge, TotalTimeout, TimeoutError) as exc:
            # a refused certificate (or a client certificate the target demands) ends the
            # replay as a refused connection does: no later exchange would get through
            line = explain(exc, outgoing.url)
            if line is not None:
                raise TargetDown(line) from None
            if isinstance(exc, httpx.ConnectError):
                raise TargetDown(f"the target refused the connection: {exc}") from None
            error = in_words(exc)
        return Exchange(
            seq=seq,
            started=started,
            elapsed_ms=(time.perf_counter() - began) * 1000,
            method=outgoing.method,
            url=outgoing.url,
            request_headers=outgoing.headers,
            request_body=outgoing.body,
            status=status,
            response_headers=headers,
            response_body=body,
            error=error,
        )


# --- the replay --------------------------------------------------------------------------------
@dataclass
class ReplayResult:
    exchanges: list[Exchange]  # as replayed, in clear (mask before writing)
    violations: list[Violation]
    skipped: list[Skipped]
    stopped: str = ""  # the target went away: why the replay ended before the session did
    interrupted: bool = False  # Ctrl-C: what was replayed is still judged and reported


def replay_session(
    recorded: Sequence[Exchange],
    rebuilder: Rebuilder,
    sender: Sender,
    judge: Judging,
    *,
    keep_timing: bool = False,
    on_violation: Callable[[Violation], object] = lambda _v: None,
    on_skip: Callable[[Skipped], object] = lambda _s: None,
    sleep: Callable[[float], None] = time.sleep,
) -> ReplayResult:
    """Re-send ``recorded`` in order through ``rebuilder`` and ``sender``; ``judge`` sees each
    replayed exchange as it would live traffic."""
    result = ReplayResult([], [], [])
    previous: Exchange | None = None
    try:
        for item in recorded:
            if keep_timing and previous is not None:
                sleep(min(max(item.started - previous.started, 0.0), MAX_GAP_S))
            previous = item
            outgoing = rebuilder.rebuild(item)
            if isinstance(outgoing, Skipped):
                result.skipped.append(outgoing)
                on_skip(outgoing)
                continue
            try:
                replayed = sender.send(item.seq, outgoing)
            except TargetDown as exc:
                result.stopped = str(exc)
                break
            rebuilder.learn(item, replayed)
            result.exchanges.append(replayed)
            for violation in judge.observe(replayed):
                result.violations.append(violation)
                on_violation(violation)
    except KeyboardInterrupt:
        result.interrupted = True
    try:
        settled = list(judge.finish())
    except KeyboardInterrupt:  # a Ctrl-C while settling: what was replayed is still reported
        result.interrupted = True
        settled = list(getattr(judge, "violations", ()))[len(result.violations) :]
        unsettled = getattr(judge, "unsettled", None)
        if isinstance(unsettled, list):
            left = "; ".join(unsettled) or "nothing"
            unsettled[:] = [f"interrupted while settling; left: {left}"]
    for violation in settled:
        result.violations.append(violation)
        on_violation(violation)
    return result


def open_client(limits: Limits | None = None, tls: TLSSettings | None = None) -> BoundedClient:
    """The replay's client, the bounded reader (``paysuite_core.bounded_http``): conform's
    limits, no redirects followed (a redirect is part of what is judged), no environment proxies
    (the target is addressed directly), the target's certificate judged with ``tls``."""
    return BoundedClient(limits or CONFORM_LIMITS, tls=tls, trust_env=False)


# --- the command -------------------------------------------------------------------------------
def run_replay(
    args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """``paysuite replay``: 0 the replayed session followed the document, 1 a violation, 2 a
    file or configuration that cannot be used, a target that refuses connections, or nothing
    that could be replayed."""
    from paysuite_core.cli_flags import UsageError
    from paysuite_core.target_config import load_target_config
    from proxy.appmap import authorized, map_applications, parse_maps
    from proxy.har import read_session
    from proxy.judge import Judge
    from proxy.report import scorecard, write_reports
    from proxy.session import live_line, write_session_har

    out = out or sys.stdout
    err = err or sys.stderr
    # A file or a value that cannot be used (HarError, MappingError): one line, exit status 2.
    recorded = read_session(args.har_file)
    config = load_target_config(args.config) if args.config else None
    tls = TLSSettings.from_args(args, config)
    if not recorded.exchanges:
        raise UsageError(f"{args.har_file} holds no exchange")
    target = urlsplit(args.target)
    if target.scheme not in ("http", "https") or not target.hostname:
        raise UsageError(f"--target {args.target!r}: expected an http(s) URL")
    explicit = parse_maps(getattr(args, "map", None) or [])
    known: dict[str, dict[str, str]] = {cid: {} for cid, _ in authorized(recorded.exchanges)}
    mapping = map_applications({**known, **recorded.applications}, config, explicit)
    if mapping.problems:
        for problem in mapping.problems:
            print(f"paysuite replay: {problem}", file=err, flush=True)
        return 2
    rebuilder = Rebuilder(
        target=args.target,
        recorded_target=recorded.target,
        config=config,
        keep_keys=bool(getattr(args, "keep_keys", False)),
        apps=mapping.apps,
    )
    judge = Judge(
        config,
        profile=args.profile,
        base_url=config.base_url if config else None,
        judge=getattr(args, "judge", "server"),
        tls=tls,
    )
    if tls.insecure:
        print(f"paysuite replay: {tls.describe()}", file=err, flush=True)
    for line in mapping.lines():
        out.write(line + "\n")
    show = live_line(out)
    started = time.time()
    out.write(
        f"replaying {len(recorded.exchanges)} exchange(s) of {args.har_file} -> {args.target}\n"
    )
    with open_client(tls=tls) as client:
        result = replay_session(
            recorded.exchanges,
            rebuilder,
            Sender(client),
            judge,
            keep_timing=bool(getattr(args, "keep_timing", False)),
            on_violation=show,
            on_skip=lambda skipped: out.write(skipped.line() + "\n"),
        )
    if result.stopped:
        print(f"paysuite replay: {result.stopped}", file=err, flush=True)
        return 2
    if result.interrupted:
        out.write(f"interrupted after {len(result.exchanges)} replayed exchange(s)\n")
    if not result.exchanges:
        print("paysuite replay: no exchange could be replayed (see the lines above)", file=err)
        return 2
    if result.skipped:  # a session not reproduced whole proves nothing by passing
        first = result.skipped[0]
        judge.run_errors.append(
            f"{len(result.skipped)} of {len(recorded.exchanges)} recorded exchange(s) were not "
            f"replayed (first: #{first.seq} {first.reason}): the session was not reproduced whole"
        )
    verdict, paths = write_reports(
        judge, args.report_dir, target=args.target, started=started,
        duration_s=time.time() - started, extra=_replay_facts(args.har_file, result.skipped),
    )  # fmt: skip
    har = Path(args.report_dir) / "session.har"
    paths.append(write_session_har(judge, result.exchanges, har, target=args.target))
    out.write(f"replayed {len(result.exchanges)}, not replayed {len(result.skipped)}\n")
    out.write(f"reports: {', '.join(str(p) for p in paths)}\n")
    out.write(scorecard(judge) + "\n")
    out.flush()
    return verdict.exit_code


def _replay_facts(har_file: str, skipped: list[Skipped]) -> JsonObject:
    """What conformance.json says of a replay: which file, and what of it was not sent."""
    return {
        "mode": "replay",
        "replay": {
            "har": str(har_file),
            "not_replayed": [
                {"seq": s.seq, "method": s.method, "url": s.url, "reason": s.reason}
                for s in skipped
            ],
        },
    }
