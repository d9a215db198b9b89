"""Customer numbers and amounts a target accepts, and how to tell two notations of one number.

Creates must be valid for the target, or a check or a load test measures 400s instead of the
service. The target configuration gives either an explicit list of numbers or a regex (default:
the Rwandan mobile pattern of the live service). For the default pattern, faker fills digit
templates derived from it (``078#######`` ...), which is fast and uniform. For any other pattern,
hypothesis's ``from_regex`` (already a dependency) draws pools of distinct matching strings:
regex-driven generation is a solved problem, not one to hand-write. Hypothesis favours the
simplest strings (``0720000000``, ``0722222229``), which the property phase's schemathesis sends
too and people testing by hand pick, so each string's digits are then made random where the
pattern allows: a fresh number must not be one somebody else is likely to have paid.

Two uses: a load test draws numbers at random (``number``); a conformance check that counts
events per number needs one nobody used before (``fresh``), so each run seeds its draws anew.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from typing import TYPE_CHECKING

from paysuite_core.target_config import RWANDA_MOBILE_PATTERN, TargetConfig

if TYPE_CHECKING:
    from faker import Faker

#: Digit templates that match RWANDA_MOBILE_PATTERN without its optional country prefix.
RWANDA_TEMPLATES = tuple(f"{prefix}#######" for prefix in ("078", "079", "075", "073", "072"))
#: Digits of a mobile number that survive every way of writing it (0781234567, 250781234567,
#: +250 781 234 567): the national significant number.
SIGNIFICANT_DIGITS = 9
_ASCII_PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F))
#: How many pools of a custom pattern ``fresh`` draws before it calls the pattern too narrow.
MAX_POOLS = 20


class PatternTooNarrow(ValueError):
    """The number pattern yields too few distinct numbers for the run."""


def sample_from_regex(pattern: str, count: int = 200, seed: int = 0) -> list[str]:
    """Up to ``count`` distinct printable-ASCII strings that fully match ``pattern``."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    compiled = re.compile(pattern)
    found: set[str] = set()

    @hypothesis_seed(seed)
    @settings(
        max_examples=count * 3,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.from_regex(compiled, fullmatch=True, alphabet=_ASCII_PRINTABLE))
    def collect(value: str) -> None:
        if len(found) < count and compiled.fullmatch(value):
            found.add(value)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        collect()
    if not found:
        raise PatternTooNarrow(f"number_pattern {pattern!r}: could not generate a matching number")
    rng = random.Random(seed)
    values: list[str] = []
    taken: set[str] = set()
    for value in sorted(found):
        scattered = _random_digits(value, compiled, rng)
        chosen = scattered if scattered not in taken else value
        if chosen not in taken:
            taken.add(chosen)
            values.append(chosen)
    rng.shuffle(values)
    return values


def _random_digits(value: str, compiled: re.Pattern[str], rng: random.Random) -> str:
    """``value`` with each ASCII digit replaced by a random one wherever the pattern still
    matches: hypothesis's simple strings, spread over the pattern's space."""
    chars = list(value)
    for index, char in enumerate(chars):
        if char in "0123456789":
            chars[index] = str(rng.randrange(10))
            if not compiled.fullmatch("".join(chars)):
                chars[index] = char
    return "".join(chars)


class NumberSource:
    """Draws customer numbers valid for one target."""

    def __init__(
        self, pattern: str = RWANDA_MOBILE_PATTERN, numbers: tuple[str, ...] = (), seed: int = 0
    ) -> None:
        self.pattern = pattern
        self.numbers = tuple(numbers)
        self._seed = seed
        self._rng = random.Random(seed)
        self._faker_instance: Faker | None = None
        self._pool: list[str] = []
        self._pools_drawn = 0
        self._used: set[str] = set()
        self._cursor = 0

    @property
    def _faker(self) -> Faker:
        """Faker, made on first use: importing it costs more than a light import should."""
        if self._faker_instance is None:
            from faker import Faker

            self._faker_instance = Faker()
            self._faker_instance.seed_instance(self._seed)
        return self._faker_instance

    @classmethod
    def for_target(cls, config: TargetConfig, seed: int = 0) -> NumberSource:
        return cls(config.effective_number_pattern, config.numbers, seed)

    @property
    def unique(self) -> bool:
        """Whether ``fresh`` numbers are new (drawn) rather than cycled from a configured list."""
        return not self.numbers

    def number(self, rng: random.Random | None = None) -> str:
        """A valid number; ``rng`` makes it deterministic (the storm derives numbers from keys)."""
        rng = rng or self._rng
        if self.numbers:
            return rng.choice(self.numbers)
        if self.pattern != RWANDA_MOBILE_PATTERN:
            return rng.choice(self._pool or self._draw_pool())
        template = rng.choice(RWANDA_TEMPLATES)
        if rng is self._rng:
            return self._faker.numerify(template)
        return "".join(str(rng.randrange(10)) if ch == "#" else ch for ch in template)

    def fresh(self) -> str:
        """A number not handed out before by this source (the configured list cycles)."""
        if self.numbers:
            number = self.numbers[self._cursor % len(self.numbers)]
            self._cursor += 1
            return number
        draw = self.number if self.pattern == RWANDA_MOBILE_PATTERN else self._next_in_pool
        for _ in range(1000):
            number = draw()
            if number not in self._used:
                self._used.add(number)
                return number
        raise PatternTooNarrow(f"the pattern {self.pattern!r} yields too few distinct numbers")

    def _next_in_pool(self) -> str:
        """The pool's numbers in turn, drawing a new pool (another seed) when it runs out."""
        if self._cursor >= len(self._pool):
            if self._pools_drawn >= MAX_POOLS:
                raise PatternTooNarrow(
                    f"the pattern {self.pattern!r} yields too few distinct numbers"
                )
            self._draw_pool()
        number = self._pool[self._cursor]
        self._cursor += 1
        return number

    def _draw_pool(self) -> list[str]:
        self._pools_drawn += 1
        self._pool = sample_from_regex(self.pattern, seed=self._seed + self._pools_drawn)
        self._cursor = 0
        return self._pool


class AmountSource:
    """Draws whole amounts inside the target's bounds (integer RWF in practice)."""

    def __init__(self, low: float, high: float, seed: int = 0) -> None:
        self._rng = random.Random(seed)
        self.low = math.ceil(low)
        self.high = math.floor(high)
        # bounds with no integer between them: use the lower bound itself
        self._fractional = self.low > self.high
        self._fallback = low

    @classmethod
    def for_target(cls, config: TargetConfig, seed: int = 0) -> AmountSource:
        return cls(config.amount.min, config.amount.max, seed)

    def amount(self, rng: random.Random | None = None) -> int | float:
        rng = rng or self._rng
        if self._fractional:
            return self._fallback
        # keep amounts modest: the upper decile of a wide range adds nothing to a test
        high = min(self.high, max(self.low, self.low * 100))
        return rng.randint(self.low, high)


def same_number(stored: object, sent: object) -> bool:
    """Whether ``stored`` is the customer number ``sent``, in any notation.

    "Customer phone number" is all the document says; an implementation may keep it as sent or
    normalise it (to international form, without spaces). Both name the same customer.
    """
    if not isinstance(stored, str) or not isinstance(sent, str) or not stored or not sent:
        return False
    if stored == sent:
        return True
    a = "".join(ch for ch in stored if ch.isascii() and ch.isdigit())
    b = "".join(ch for ch in sent if ch.isascii() and ch.isdigit())
    if a == b and a:
        return True
    n = SIGNIFICANT_DIGITS
    return len(a) >= n and len(b) >= n and a[-n:] == b[-n:]
