"""Customer drivers: how the suite makes a customer confirm or cancel a pending transaction.

The document leaves the customer's side to the phone network, so each target says how to play
the customer (``customer.driver`` in the target configuration):

- ``sandbox``: call an HTTP endpoint per outcome (the stub's ``/_sandbox/...``);
- ``magic-numbers``: create the transaction for a number the target resolves by itself;
- ``command``: run a shell command with ``{ref}`` and ``{outcome}`` substituted;
- ``manual``: ask the operator on the terminal (only when stdin is a TTY);
- ``none``: the lifecycle checks skip.

A driver only *triggers* the outcome; the checks then poll find until the status moves, within
``timeout_s``.
"""

from __future__ import annotations

import shlex
import subprocess
from typing import Literal

from paysuite_core.driver.http import RecordingClient
from paysuite_core.results.outcome import CouldNotCheck, not_applicable
from paysuite_core.target_config import CustomerDriver

Outcome = Literal["confirm", "cancel"]


def _has_tty() -> bool:
    try:
        with open("/dev/tty", encoding="utf-8"):
            return True
    except OSError:
        return False


class DriverUnavailable(RuntimeError):
    """The configured driver cannot act here; the message is the skip reason."""


class DriverFailed(CouldNotCheck):
    """The driver was asked to act and its action failed: the check cannot judge its rule."""


class Customer:
    """Wraps the configured ``CustomerDriver`` behind one call: ``act(ref, outcome)``."""

    def __init__(self, config: CustomerDriver, client: RecordingClient) -> None:
        self.config = config
        self.client = client

    @property
    def driver(self) -> str:
        return self.config.driver

    def unavailable_reason(self) -> str | None:
        """Why lifecycle checks cannot run, or ``None`` when they can."""
        if self.config.driver == "none":
            return "customer.driver is none: the suite cannot make a customer confirm or cancel"
        if self.config.driver == "manual" and not _has_tty():
            return "customer.driver is manual but there is no terminal to prompt on"
        return None

    def need_available(self) -> None:
        """Skip the running check unless this driver can act here."""
        reason = self.unavailable_reason()
        if reason:
            not_applicable(reason)

    def number_for(self, outcome: Outcome, default: str) -> str:
        """The customer number to create with: magic numbers decide the outcome themselves."""
        if self.config.driver != "magic-numbers":
            return default
        magic = self.config.confirm_number if outcome == "confirm" else self.config.cancel_number
        return magic or default

    def act(self, ref: str, outcome: Outcome) -> str:
        """Trigger ``outcome`` for ``ref``; returns a one-line account of what was done."""
        reason = self.unavailable_reason()
        if reason:
            raise DriverUnavailable(reason)
        driver = self.config.driver
        if driver == "sandbox":
            action = self.config.confirm if outcome == "confirm" else self.config.cancel
            assert action is not None  # guaranteed by the config parser
            reply = self.client.request(action.method, action.url(ref), note=f"customer {outcome}")
            if not reply.ok:
                # The driver itself failed: whatever the transaction does next says nothing
                # about the lifecycle rule the check is about.
                raise DriverFailed(
                    f"the customer driver's {outcome} ({action.method} {action.url(ref)}) "
                    f"answered {reply.status}",
                    [reply.exchange],
                )
            return f"sandbox {outcome}: {reply.status}"
        if driver == "magic-numbers":
            return "magic number: the target resolves it"
        if driver == "command":
            assert self.config.command is not None
            command = self.config.command.replace("{ref}", shlex.quote(ref)).replace(
                "{outcome}", outcome
            )
            done = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=self.config.timeout_s
            )
            if done.returncode != 0:
                raise DriverFailed(
                    f"customer command exited {done.returncode}: {done.stderr.strip()[:200]}"
                )
            return f"command: exit {done.returncode}"
        if driver == "manual":
            # pytest captures fds 0-2, so talk to the terminal itself.
            with open("/dev/tty", "r+", encoding="utf-8") as tty:
                tty.write(
                    f"\n[paysuite] As the customer, please {outcome.upper()} transaction {ref}, "
                    "then press Enter: "
                )
                tty.flush()
                tty.readline()
            return "manual"
        raise DriverUnavailable(f"unknown customer driver {driver!r}")
