"""One proxy session: serve, judge as the exchanges come, stop, settle, report.

The forwarding server hands each exchange to a queue once its answer is sent; one task judges
them in that order and prints a live line per violation, so judging never delays a client. The
session stops on the first of: ``max_exchanges`` exchanges judged, ``duration_s`` elapsed, SIGINT
or SIGTERM (Ctrl-C). Then the listener closes, the judge's ``finish`` settles what needs the
target's word (in a worker thread: it makes blocking requests), and the reports are written.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

from aiohttp import web

from paysuite_core.exchange import Exchange
from paysuite_core.results.masking import mask_exchange
from paysuite_core.results.verdict import Verdict
from paysuite_core.usage import UsageError
from proxy.appmap import recorded_applications
from proxy.har import write_har
from proxy.judge import Judge
from proxy.report import scorecard, write_reports
from proxy.rules import Violation
from proxy.server import ForwardingProxy, ProxySettings

LISTENING_PREFIX = "paysuite proxy listening on "
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
SignalHandler = Callable[[int, FrameType | None], object] | int | None


class ListenError(UsageError, OSError):
    """The proxy's address cannot be bound (taken, or not an address of this machine): the
    command stops there (exit status 2)."""


@dataclass(frozen=True)
class SessionLimits:
    max_exchanges: int | None = None
    duration_s: float | None = None


def live_line(out: TextIO) -> Callable[[Violation], None]:
    def show(violation: Violation) -> None:
        out.write(violation.line() + "\n")
        out.flush()

    return show


def _stop(stop: asyncio.Event, signum: int, seen: list[int]) -> None:
    """Stop the session on a signal, counting them: a second one while the listener closes
    means the user does not want the settling either."""
    seen.append(signum)
    stop.set()


async def serve(
    judge: Judge,
    settings: ProxySettings,
    *,
    host: str,
    port: int,
    limits: SessionLimits,
    out: TextIO,
    exchanges: list[Exchange],
    signals_seen: list[int],
) -> None:
    """Serve until a limit or a signal; every exchange judged by ``judge``, in order (and kept
    in ``exchanges`` as it is judged, so an interruption while the listener closes loses none;
    each stop signal is counted in ``signals_seen``)."""
    queue: asyncio.Queue[Exchange | None] = asyncio.Queue()
    stop = asyncio.Event()
    show = live_line(out)

    async def judge_forever() -> None:
        while (exchange := await queue.get()) is not None:
            exchanges.append(exchange)
            try:
                found = judge.observe(exchange)
            except Exception as exc:  # a judge's bug must not stop the forwarding
                judge.run_errors.append(f"#{exchange.seq} could not be judged: {exc!r}")
                out.write(f"! #{exchange.seq} could not be judged: {exc!r}\n")
                continue
            for violation in found:
                show(violation)
            if limits.max_exchanges is not None and len(exchanges) >= limits.max_exchanges:
                stop.set()

    proxy = ForwardingProxy(settings, queue.put_nowait)
    runner = await proxy.runner(access_log=None, handle_signals=False)
    site = web.TCPSite(runner, host, port)
    try:
        await site.start()
    except OSError as exc:  # the address is taken, or cannot be bound here
        await runner.cleanup()  # closes the upstream client session too (on_cleanup)
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    bound = runner.addresses[0]
    shown_host = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    out.write(f"{LISTENING_PREFIX}http://{shown_host}:{bound[1]} -> {settings.target}\n")
    out.flush()
    loop = asyncio.get_running_loop()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, _stop, stop, signum, signals_seen)
    worker = asyncio.create_task(judge_forever())
    try:
        if limits.duration_s is not None:
            try:
                await asyncio.wait_for(stop.wait(), limits.duration_s)
            except TimeoutError:
                pass
        else:
            await stop.wait()
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
        await runner.cleanup()  # in-flight exchanges finish (and are queued) first
        queue.put_nowait(None)
        await worker


class Interrupted(KeyboardInterrupt):
    """A SIGINT or SIGTERM while the session settles: the settling stops, the reports do not."""


def _interrupt(signum: int, _frame: object) -> None:
    raise Interrupted(signal.Signals(signum).name)


@contextmanager
def signals(handler: SignalHandler = None) -> Iterator[None]:
    """SIGINT and SIGTERM handled by ``handler`` (``signal.SIG_IGN`` while a report is written,
    so that no number of Ctrl-C leaves half a file; None: left as they are), the previous
    handlers restored after."""
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    try:
        if handler is not None:
            for signum in STOP_SIGNALS:
                signal.signal(signum, handler)
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def run_session(
    judge: Judge,
    settings: ProxySettings,
    *,
    host: str,
    port: int,
    limits: SessionLimits,
    report_dir: str | Path,
    har_path: str | Path | None = None,
    out: TextIO = sys.stdout,
) -> int:
    """The whole session; its exit status is the report's (0 clean, 1 violation, 2 no answer,
    3 the client's violation when gated, 130 settling interrupted).

    The reports and the HAR are written as soon as the session stops, before the settling (which
    asks the target and may take seconds): a Ctrl-C or a SIGTERM then stops the settling, never
    the writing (signals are ignored while a file is written), and the reports are written again
    with what was settled and what was not."""
    with signals():
        started = time.time()
        exchanges: list[Exchange] = []
        seen: list[int] = []
        try:
            asyncio.run(
                serve(judge, settings, host=host, port=port, limits=limits, out=out,
                      exchanges=exchanges, signals_seen=seen)
            )  # fmt: skip
        except KeyboardInterrupt:  # a second signal while the listener closed: report what was seen
            judge.run_errors.append(
                "interrupted while the listener closed; exchanges in flight lost"
            )
            seen += [signal.SIGINT, signal.SIGINT]
        for signum in STOP_SIGNALS:  # from here on a signal stops no write
            signal.signal(signum, signal.SIG_IGN)
        har = Path(har_path or Path(report_dir) / "session.har")

        def write() -> tuple[Verdict, list[Path]]:
            with signals(signal.SIG_IGN):
                verdict, paths = write_reports(
                    judge, report_dir, target=settings.target, started=started,
                    duration_s=time.time() - started,
                )  # fmt: skip
                written = write_session_har(judge, exchanges, har, target=settings.target)
            return verdict, [*paths, written]

        pending = judge.settlements()
        if pending:
            judge.unsettled = ["the session stopped; settling had not begun: " + "; ".join(pending)]
            write()
            judge.unsettled = []
            out.write(
                f"stopped after {len(exchanges)} exchange(s); reports written; settling what needs "
                f"the target ({len(pending)} question(s); Ctrl-C stops it)...\n"
            )
            out.flush()
        else:
            out.write(f"stopped after {len(exchanges)} exchange(s)\n")
        before = len(judge.violations)
        try:
            if len(seen) > 1 and pending:  # pressed again before the settling began: it does not
                judge.unsettled = list(pending)
                raise Interrupted(signal.Signals(seen[-1]).name)
            with signals(_interrupt):
                settled = judge.finish()
        except KeyboardInterrupt as exc:
            left = "; ".join(judge.unsettled) or "nothing"
            judge.unsettled = [f"interrupted ({exc or 'SIGINT'}) before it settled; left: {left}"]
            out.write("settling interrupted; the reports say what was not settled\n")
            settled = judge.violations[before:]  # what it found before it was stopped
        except Exception as exc:  # the reports are written whatever happens here
            left = "; ".join(judge.unsettled) or "nothing"
            judge.run_errors.append(
                f"the end-of-session confirmations failed: {exc!r}; left: {left}"
            )
            judge.unsettled = []  # not interrupted: the run error says what was left
            settled = []
        else:
            judge.unsettled = []
        for violation in settled:
            live_line(out)(violation)
        verdict, paths = write()
        out.write(f"reports: {', '.join(str(p) for p in paths)}\n")
        out.write(scorecard(judge) + "\n")
        out.flush()
        return verdict.exit_code


def write_session_har(
    judge: Judge, exchanges: list[Exchange], path: str | Path, *, target: str
) -> Path:
    """The session as a HAR file, every secret masked first (``paysuite_core.results.masking``)."""
    return write_har(
        [mask_exchange(e, judge.masker) for e in exchanges],
        path,
        target=target,
        applications=recorded_applications(exchanges, judge.config),
    )
