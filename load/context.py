"""What one Locust process knows about the run: target, profile, generators, application rotation.

Built from the parsed options at ``test_start`` on every process. A worker gets the master's
custom arguments with its spawn order (Locust sends them), including the target configuration
itself (``--paysuite-config-json``, filled in by the master from its file), so a worker on another
machine needs the locustfile and paysuite installed, not a copy of the credentials file.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from load.profiles import Profile, get_profile, parse_mix, parse_pacing
from paysuite_core.request_data import AmountSource, NumberSource
from paysuite_core.target_config import (
    Application,
    TargetConfig,
    load_target_config,
    parse_target_config,
)

DEFAULT_REPORT_DIR = "reports"


def option(options: Any, name: str, default: Any = None) -> Any:
    """A custom option's value, tolerating ``None`` options (a library-mode Environment)."""
    value = getattr(options, name, None) if options is not None else None
    return default if value in (None, "") else value


def resolve_profile(options: Any) -> Profile:
    """The profile named by the options, with the command-line overrides applied."""
    profile = get_profile(option(options, "paysuite_profile", "smoke"))
    mix_text = option(options, "paysuite_mix")
    users = option(options, "paysuite_users")
    spawn = option(options, "paysuite_spawn_rate")
    duration = option(options, "paysuite_duration")
    max_requests = option(options, "paysuite_max_requests")
    pacing = option(options, "paysuite_pacing")
    return profile.with_overrides(
        users=int(users) if users is not None else None,
        spawn_rate=float(spawn) if spawn is not None else None,
        duration_s=float(duration) if duration is not None else None,
        max_requests=int(max_requests) if max_requests is not None else None,
        mix=parse_mix(mix_text) if mix_text else None,
        pacing=parse_pacing(pacing) if pacing else None,
    )


def load_config_from_options(options: Any, host: str | None) -> TargetConfig:
    """The target configuration: the master's serialized copy first, else the file."""
    inline = option(options, "paysuite_config_json")
    if inline:
        return parse_target_config(json.loads(inline), env={}, base_url=host or None)
    path = option(options, "paysuite_config") or os.environ.get("PAYSUITE_CONFIG")
    if not path:
        raise ValueError(
            "no target configuration: pass --paysuite-config FILE (or PAYSUITE_CONFIG)"
        )
    return load_target_config(Path(path), base_url=host or None)


@dataclass
class RunContext:
    config: TargetConfig
    profile: Profile
    run_id: str
    worker_index: int = 0
    lifecycle_resolve: str = "auto"
    numbers: NumberSource = field(init=False)
    amounts: AmountSource = field(init=False)
    _counter: itertools.count = field(default_factory=itertools.count, init=False)
    refs_by_merchant: dict[str, deque[str]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        seed = hash((self.run_id, self.worker_index)) & 0xFFFFFFFF
        self.numbers = NumberSource.for_target(self.config, seed=seed)
        self.amounts = AmountSource.for_target(self.config, seed=seed + 1)

    def next_application(self, *, creators_only: bool = False) -> Application:
        """Round-robin over the applications (offset per worker, so workers spread too)."""
        apps = list(self.config.applications)
        if creators_only:
            apps = [a for a in apps if a.can_cashin() or a.can_cashout()] or apps
        n = next(self._counter) + self.worker_index
        return apps[n % len(apps)]

    def merchant_refs(self, merchant: str) -> deque[str]:
        """Refs created in this process per merchant: what read-only users look up."""
        return self.refs_by_merchant.setdefault(merchant, deque(maxlen=500))


_CURRENT: RunContext | None = None


def build_context(environment: Any) -> RunContext:
    """(Re)build this process's context from the environment's options."""
    global _CURRENT
    options = environment.parsed_options
    config = load_config_from_options(options, environment.host)
    worker_index = int(getattr(environment.runner, "worker_index", 0) or 0)
    resolve = option(options, "paysuite_lifecycle_resolve", "")
    if not resolve:
        resolve = "driver" if config.customer.driver in ("sandbox", "magic-numbers") else "auto"
    _CURRENT = RunContext(
        config=config,
        profile=resolve_profile(options),
        run_id=option(options, "paysuite_run_id") or uuid.uuid4().hex[:8],
        worker_index=max(worker_index, 0),
        lifecycle_resolve=resolve,
    )
    return _CURRENT


def current() -> RunContext:
    if _CURRENT is None:
        raise RuntimeError("paysuite: the run context is not built yet (test_start not fired)")
    return _CURRENT
