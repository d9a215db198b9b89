"""Customer numbers the target accepts, unique per check where a count must prove something.

The target configuration gives either a list of numbers or a regex. From a regex we draw fresh
strings with a small generator over Python's own regex parse tree (ASCII only, shortest sensible
repeats), so that a check can create transactions for a number nobody else used and count them.
From a list we cycle: counts then rely on before/after differences instead of absolute values.
"""

from __future__ import annotations

import random
import re
import string
from typing import Any

try:  # Python 3.11+: the parser moved under ``re``
    from re import _constants as sre_constants  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover
    import sre_constants  # type: ignore[no-redef]
    import sre_parse  # type: ignore[no-redef]

_MAX_REPEAT = 4
_PRINTABLE = [c for c in string.ascii_letters + string.digits]


class PatternTooComplex(ValueError):
    """The regex uses a construct the generator does not draw from."""


def _category_chars(category: Any) -> list[str]:
    name = str(category)
    if "DIGIT" in name and "NOT" not in name:
        return list(string.digits)
    if "WORD" in name and "NOT" not in name:
        return list(string.ascii_letters + string.digits + "_")
    if "SPACE" in name and "NOT" not in name:
        return [" "]
    if "NOT_DIGIT" in name:
        return list(string.ascii_letters)
    return list(string.ascii_letters)


def _in_chars(items: list[tuple[Any, Any]]) -> list[str]:
    negate = False
    chars: list[str] = []
    for op, arg in items:
        if op is sre_constants.NEGATE:
            negate = True
        elif op is sre_constants.LITERAL:
            chars.append(chr(arg))
        elif op is sre_constants.RANGE:
            low, high = arg
            chars.extend(chr(c) for c in range(low, min(high, low + 200) + 1))
        elif op is sre_constants.CATEGORY:
            chars.extend(_category_chars(arg))
    if negate:
        excluded = set(chars)
        return [c for c in _PRINTABLE if c not in excluded]
    return chars


def _draw(tokens: Any, rng: random.Random, groups: dict[int, str]) -> str:
    out: list[str] = []
    for op, arg in tokens:
        if op is sre_constants.LITERAL:
            out.append(chr(arg))
        elif op is sre_constants.NOT_LITERAL:
            out.append(rng.choice([c for c in string.digits if ord(c) != arg]))
        elif op is sre_constants.ANY:
            out.append(rng.choice(string.digits))
        elif op is sre_constants.IN:
            chars = _in_chars(arg)
            if not chars:
                raise PatternTooComplex("an empty character class")
            out.append(rng.choice(chars))
        elif op is sre_constants.BRANCH:
            _, branches = arg
            out.append(_draw(rng.choice(branches), rng, groups))
        elif op is sre_constants.SUBPATTERN:
            group, _, _, sub = arg
            text = _draw(sub, rng, groups)
            if group is not None:
                groups[group] = text
            out.append(text)
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            low, high, sub = arg
            high = low + _MAX_REPEAT if high is sre_constants.MAXREPEAT else high
            count = rng.randint(low, max(low, high))
            out.extend(_draw(sub, rng, groups) for _ in range(count))
        elif op is sre_constants.GROUPREF:
            out.append(groups.get(arg, ""))
        elif op is sre_constants.AT:
            continue  # anchors draw nothing
        else:
            raise PatternTooComplex(f"unsupported regex construct {op}")
    return "".join(out)


def draw_from_pattern(pattern: str, rng: random.Random, attempts: int = 50) -> str:
    """A string that fully matches ``pattern`` (checked), drawn with ``rng``."""
    parsed = sre_parse.parse(pattern)
    compiled = re.compile(pattern)
    for _ in range(attempts):
        candidate = _draw(parsed, rng, {})
        if compiled.fullmatch(candidate):
            return candidate
    raise PatternTooComplex(f"could not draw a string matching {pattern!r}")


class NumberSource:
    """Hands out customer numbers: fresh ones from the pattern, else from the configured list."""

    def __init__(self, pattern: str, numbers: tuple[str, ...], seed: int) -> None:
        self.pattern = pattern
        self.numbers = numbers
        self._rng = random.Random(seed)
        self._used: set[str] = set()
        self._cursor = 0

    @property
    def unique(self) -> bool:
        """Whether numbers are fresh (drawn from the pattern) rather than reused from a list."""
        return not self.numbers

    def next(self) -> str:
        if self.numbers:
            number = self.numbers[self._cursor % len(self.numbers)]
            self._cursor += 1
            return number
        for _ in range(1000):
            number = draw_from_pattern(self.pattern, self._rng)
            if number not in self._used:
                self._used.add(number)
                return number
        raise PatternTooComplex(f"the pattern {self.pattern!r} yields too few distinct numbers")


#: Digits of a mobile number that survive every way of writing it (0781234567, 250781234567,
#: +250 781 234 567): the national significant number.
SIGNIFICANT_DIGITS = 9


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
