"""The JSON Schemas of paysuite's configuration files, and their first error as one line.

They ship in the package (``schemas/``) so that an editor checks a file by the rules paysuite
applies (``# yaml-language-server: $schema=...``). What a schema cannot say (a rule across two
keys, loopback only) stays as code beside each reader. A schema may word a reason itself with
``errorMessage`` (the keyword VS Code's JSON and YAML servers show too).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError, best_match
from jsonschema.protocols import Validator

SCHEMAS = ("target", "stub", "load-plan")

_KINDS = {
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
    "boolean": "true or false",
    "object": "a mapping",
    "array": "a list",
}

_REASONS: dict[str, Callable[[Any, Any], str]] = {
    "enum": lambda allowed, value: f"{value!r} is not one of {', '.join(map(str, allowed))}",
    "const": lambda const, value: f"expected {const!r}, got {value!r}",
    "minLength": lambda _, value: f"expected a non-empty string, got {value!r}",
    "minItems": lambda least, value: f"expected at least {least} item(s), got {value!r}",
    "exclusiveMinimum": lambda least, value: f"must be greater than {least}, got {value!r}",
    "minimum": lambda least, value: f"must be {least} or more, got {value!r}",
    "maximum": lambda most, value: f"must be {most} or less, got {value!r}",
}

# YAML hands over Python ints, floats and bools: jsonschema would take 3.0 as an integer, and
# ``.inf`` or ``.nan`` as a number, neither of which is a port, a count or a time-out.
_TYPES = Draft202012Validator.TYPE_CHECKER.redefine_many(
    {
        "integer": lambda _, value: isinstance(value, int) and not isinstance(value, bool),
        "number": lambda _, value: (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and (isinstance(value, int) or math.isfinite(value))
        ),
    }
)
# typeshed's stubs leave extend untyped (create is typed, but needs the draft's internals)
_Validator: type[Validator] = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, type_checker=_TYPES
)


def schema_text(name: str) -> str:
    """The schema as shipped (``paysuite schema NAME`` prints it)."""
    path = files("paysuite_core") / "schemas" / f"{name}.schema.json"
    return path.read_text(encoding="utf-8")


@cache
def schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(schema_text(name))
    return loaded


@cache
def _validator(name: str) -> Validator:
    return _Validator(schema(name), format_checker=Draft202012Validator.FORMAT_CHECKER)


def validate(name: str, instance: Any, error: type[Exception]) -> None:
    """``error("key.path: reason")`` for the most relevant failure of ``instance``, if any."""
    found = best_match(_validator(name).iter_errors(instance))
    if found is None:
        return
    # best_match descends into the alternatives of an anyOf; a choice that words its own
    # reason speaks for all of them
    parent = found.parent
    while parent is not None:
        if "errorMessage" in _subschema(parent):
            found = parent
        parent = parent.parent
    path, reason = _reason(found)
    raise error(f"{_where(path)}: {reason}" if path else reason)


def _where(path: Sequence[str | int]) -> str:
    """``applications[0].client_id``: how the messages name a key."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def _subschema(error: ValidationError) -> dict[str, Any]:
    return error.schema if isinstance(error.schema, dict) else {}


def _reason(error: ValidationError) -> tuple[list[str | int], str]:
    path: list[str | int] = list(error.absolute_path)
    sub, keyword = _subschema(error), str(error.validator)
    value: Any = error.instance
    expected: Any = error.validator_value
    custom = sub.get("errorMessage")
    if keyword == "required":
        path.append(next(key for key in expected if key not in value))
        return path, custom or "required"
    if keyword == "additionalProperties":
        known = sorted(sub.get("properties", {}))
        path.append(min((key for key in value if key not in known), key=str))
        return path, f"unknown key (known: {', '.join(known)})"
    if custom:
        return path, custom if isinstance(value, dict) else f"{custom}, got {value!r}"
    if keyword == "type":
        kinds = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
        names = [_KINDS[kind] for kind in kinds if kind != "null"]
        if "string" in kinds and sub.get("minLength"):
            names = [name.replace("a string", "a non-empty string") for name in names]
        return path, f"expected {' or '.join(names)}, got {value!r}"
    if keyword == "format":
        return path, f"not a valid {expected} ({error.cause}), got {value!r}"
    if keyword in _REASONS:
        return path, _REASONS[keyword](expected, value)
    return path, error.message
