"""ERR-007's exchange and verdict (the check itself is in ``conformance/suite/errors.py``): a
request body that stalls is answered 408 ``request_timeout`` and its connection closed (RC-4),
within the body time-out.

A creation whose head declares a ``Content-Length`` is sent with only the start of that body, and
then nothing. The reference stub waits ``body_timeout_s`` (10 s) for the rest, answers 408 and
closes the connection: a client's slow or broken upload must not hold a handler for ever, and the
client learns why. No client library sends a body shorter than it declares, so the exchange is
written on a bare socket (``paysuite_core.http_clients.raw_connection``: the run's TLS settings
over HTTPS) and its answer read with h11, the parser under httpx.

The wait costs the run nothing: the stalled request is sent when the run starts (an early
set-up, ``conformance.checks.set_up_early``) and a thread of its own watches for the answer while
every other check runs; the check, judged at the end, only reads what that thread saw. Every
part is bounded: the answer must come within the body time-out plus a grace for a busy machine,
its head within h11's 16 KiB, its body within the run's ``--max-response-bytes``.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from paysuite_core import guarded_json
from paysuite_core.driver.api import CASHIN
from paysuite_core.results.evidence import Recorded
from paysuite_core.results.outcome import CouldNotCheck, expect, fail

if TYPE_CHECKING:
    import h11

    from paysuite_core.driver.target import Target
    from paysuite_core.results.masking import Masker
    from paysuite_core.tls import TLSSettings

#: RC-4: how long the reference waits for the rest of a body before it answers 408.
BODY_TIMEOUT_S = 10.0
#: Beyond the body time-out, for a machine busy with the run's other checks (the 408 of the
#: stub comes within a few milliseconds of its time-out on an idle one).
GRACE_S = 10.0


@dataclass
class Seen:
    """What came back on the stalled connection, each time in seconds after the last byte sent."""

    response: h11.Response | None = None
    body: bytearray = field(default_factory=bytearray)
    answered_s: float | None = None
    closed_s: float | None = None
    #: Why the watch ended without an answer or without seeing the connection close.
    error: str = ""

    def code(self) -> object:
        try:
            answer = guarded_json.loads(bytes(self.body))
        except guarded_json.JsonRefused:
            return None
        return answer.get("code") if isinstance(answer, dict) else None


def _head(target: Target, app_token: str, length: int) -> list[tuple[str, str]]:
    from paysuite_core.driver.http import USER_AGENT  # not at import: --list stays light

    parts = urlsplit(target.base_url)
    return [
        ("Host", parts.netloc),
        ("Accept", "application/json"),
        ("Content-Type", "application/json"),
        ("User-Agent", USER_AGENT),
        ("Authorization", f"Bearer {app_token}"),
        ("Idempotency-Key", target.fresh_key()),
        ("Content-Length", str(length)),
    ]


class Stall:
    """One stalled request, sent at once, its answer watched by a thread until ``bound_s`` after
    its last byte (``wait`` then returns what was seen)."""

    def __init__(
        self,
        url: str,
        head: list[tuple[str, str]],
        sent: bytes,
        *,
        tls: TLSSettings | None,
        bound_s: float,
        max_body_bytes: int,
        connect_s: float = 10.0,
        masker: Masker | None = None,
    ) -> None:
        import h11

        from paysuite_core.http_clients import raw_connection

        self.bound_s = bound_s
        self.max_body_bytes = max_body_bytes
        self.seen = Seen()
        self.exchange = Recorded.build("POST", url, dict(head), sent, masker=masker)
        self.exchange.stall_s = bound_s
        self.exchange.note = (
            f"the body stops after {len(sent)} of the {dict(head)['Content-Length']} bytes its "
            f"Content-Length declares; the connection then stays silent"
        )
        self._connection = h11.Connection(h11.CLIENT)
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        self._sock = raw_connection(url, tls, timeout_s=connect_s)
        try:
            data = self._connection.send(h11.Request(method="POST", target=path, headers=head))
            data = (data or b"") + (self._connection.send(h11.Data(data=sent)) or b"")
            self._sock.sendall(data)
        except BaseException:
            self._sock.close()
            raise
        self.started = time.monotonic()
        self._thread = threading.Thread(target=self._watch, name="paysuite-stall", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        """Read until the answer has come and the connection closed, or until the bound."""
        import h11

        from paysuite_core.bounded_http import ResponseTooLarge, in_words

        seen, connection = self.seen, self._connection
        deadline = self.started + self.bound_s
        overdue = False
        try:
            while seen.closed_s is None:
                # Past the deadline, one more short read: an answer that is already here (a
                # thread scheduled late on a busy machine) is taken, not called missing; a
                # target trickling bytes is read no further.
                remaining = deadline - time.monotonic()
                if remaining <= 0 and overdue:
                    seen.error = f"nothing more within {self.bound_s:g} s"
                    return
                overdue = remaining <= 0
                self._sock.settimeout(max(remaining, 0.05))
                try:
                    data = self._sock.recv(65536)
                except TimeoutError:
                    seen.error = f"nothing more within {self.bound_s:g} s"
                    return
                except ConnectionError:
                    data = b""  # a reset closes the connection as surely as a FIN
                if not data and seen.response is None:  # closed without a word (h11 objects)
                    seen.closed_s = time.monotonic() - self.started
                    return
                connection.receive_data(data)
                self._events(time.monotonic() - self.started)
        except (h11.RemoteProtocolError, OSError, ResponseTooLarge) as exc:
            seen.error = in_words(exc)
        finally:
            self._sock.close()

    def _events(self, at_s: float) -> None:
        import h11

        from paysuite_core.bounded_http import ResponseTooLarge

        seen, connection = self.seen, self._connection
        while True:
            event = connection.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Response):
                seen.response, seen.answered_s = event, at_s
            elif isinstance(event, h11.Data):
                seen.body += event.data
                if len(seen.body) > self.max_body_bytes:
                    raise ResponseTooLarge(self.max_body_bytes)
            elif isinstance(event, h11.ConnectionClosed):
                seen.closed_s = at_s
                return

    def wait(self, stopped: threading.Event | None = None, deadline: float | None = None) -> Seen:
        """What the watch saw, once it ended (at most ``bound_s`` after the stall began);
        ``stopped``: the run's interruption, ``deadline``: the check's ``--check-timeout``."""
        while self._thread.is_alive():
            if stopped is not None and stopped.is_set():
                raise CouldNotCheck("not judged: the run was interrupted")
            if deadline is not None and time.monotonic() > deadline:
                raise CouldNotCheck(
                    "the check used its time budget (--check-timeout) waiting for the answer "
                    "to its stalled body",
                    [self.exchange],
                )
            self._thread.join(0.2)
        self._record()
        return self.seen

    def _record(self) -> None:
        seen = self.seen
        if seen.response is None:
            self.exchange.error = f"no answer within {self.bound_s:g} s of the stalled body" + (
                f": {seen.error}" if seen.error else ""
            )
            return
        headers = {
            name.decode("latin-1"): value.decode("latin-1") for name, value in seen.response.headers
        }
        text = bytes(seen.body).decode("utf-8", "replace")
        self.exchange.record_response(
            seen.response.status_code, headers, text, (seen.answered_s or 0.0) * 1000
        )


def start_stall(target: Target) -> Stall | None:
    """Send ERR-007's stalled creation now, a cashin (None: no application may cashin). What is
    sent stops before the customer number: a target that took the body as ended could not
    create a transaction from it."""
    app = target.writer("CASHIN")
    if app is None:
        return None
    body = json.dumps({"amount": target.amount(), "number": target.number()}).encode()
    return Stall(
        target.base_url + CASHIN,
        _head(target, target.token(app), len(body)),
        body[: body.index(b'"number"')],
        tls=target.tls,
        bound_s=BODY_TIMEOUT_S + GRACE_S,
        max_body_bytes=target.limits.max_body_bytes,
        connect_s=target.limits.connect_s,
        masker=target.masker,
    )


def judge(seen: Seen, stall: Stall) -> None:
    """ERR-007's verdict on what the watch saw."""
    bound = f"{stall.bound_s:g} s"
    expected = (
        f"408 request_timeout within the body time-out ({BODY_TIMEOUT_S:g} s, RC-4; waited "
        f"{bound}), then the connection closed"
    )
    if seen.response is None:
        why = f" ({seen.error})" if seen.error and "within" not in seen.error else ""
        if seen.closed_s is not None:
            actual = f"the connection closed after {seen.closed_s:.1f} s without an answer"
        else:
            actual = f"no answer within {bound}{why}"
        fail(
            f"a cashin body that stalled: {actual}",
            stall.exchange,
            expected=expected,
            actual=actual,
        )
    status, code = seen.response.status_code, seen.code()
    answered = f"{status} {code!r} after {seen.answered_s or 0.0:.1f} s"
    expect(
        status == 408 and code == "request_timeout",
        f"a cashin body that stalled was answered {answered}",
        stall.exchange,
        expected=expected,
        actual=answered,
    )
    expect(
        seen.closed_s is not None,
        f"a cashin body that stalled was answered {answered}, but the connection stayed open "
        f"until {bound} after the stall",
        stall.exchange,
        expected=expected,
        actual=f"{answered}; the connection still open after {bound}",
    )
