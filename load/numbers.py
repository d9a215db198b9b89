"""Customer numbers and amounts that the target will accept.

Creates must be valid for the target, or the load measures 400s instead of the service. The target
configuration gives either an explicit list of numbers, or a regex (default: the Rwandan mobile
pattern of the live service). For the default pattern, faker fills digit templates derived from
it (``078#######`` ...), which is fast and uniform. For any other pattern, hypothesis's
``from_regex`` (already a dependency) draws a pool of distinct matching strings once, at start-up:
regex-driven generation is a solved problem, not one to hand-write.
"""

from __future__ import annotations

import math
import random
import re
import warnings

from faker import Faker

from paysuite.target_config import RWANDA_MOBILE_PATTERN, TargetConfig

#: Digit templates that match RWANDA_MOBILE_PATTERN without its optional country prefix.
RWANDA_TEMPLATES = tuple(f"{prefix}#######" for prefix in ("078", "079", "075", "073", "072"))

_ASCII_PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F))


def sample_from_regex(pattern: str, count: int = 200, seed: int = 0) -> list[str]:
    """Up to ``count`` distinct printable-ASCII strings that fully match ``pattern``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    compiled = re.compile(pattern)
    found: set[str] = set()

    @settings(
        max_examples=count * 3,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(st.from_regex(compiled, fullmatch=True, alphabet=_ASCII_PRINTABLE))
    def collect(value: str) -> None:
        if len(found) < count and compiled.fullmatch(value):
            found.add(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collect()
    if not found:
        raise ValueError(f"number_pattern {pattern!r}: could not generate a matching number")
    values = sorted(found)
    random.Random(seed).shuffle(values)
    return values


class NumberSource:
    """Draws customer numbers valid for one target."""

    def __init__(self, config: TargetConfig, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._faker = Faker()
        if seed is not None:
            self._faker.seed_instance(seed)
        self._numbers = list(config.numbers)
        self._pool: list[str] = []
        pattern = config.effective_number_pattern
        if not self._numbers and pattern != RWANDA_MOBILE_PATTERN:
            self._pool = sample_from_regex(pattern)

    def number(self, rng: random.Random | None = None) -> str:
        """A valid number; ``rng`` makes it deterministic (the storm derives numbers from keys)."""
        rng = rng or self._rng
        if self._numbers:
            return rng.choice(self._numbers)
        if self._pool:
            return rng.choice(self._pool)
        template = rng.choice(RWANDA_TEMPLATES)
        if rng is self._rng:
            return self._faker.numerify(template)
        return "".join(str(rng.randrange(10)) if ch == "#" else ch for ch in template)


class AmountSource:
    """Draws whole amounts inside the target's configured bounds (integer RWF in practice)."""

    def __init__(self, config: TargetConfig, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        low, high = config.amount.min, config.amount.max
        self.low = math.ceil(low)
        self.high = math.floor(high)
        # bounds with no integer between them: use the lower bound itself
        self._fractional = self.low > self.high
        self._fallback = low

    def amount(self, rng: random.Random | None = None) -> float:
        rng = rng or self._rng
        if self._fractional:
            return self._fallback
        # keep amounts modest: the upper decile of a wide range adds nothing to a load test
        high = min(self.high, max(self.low, self.low * 100))
        return rng.randint(self.low, high)
