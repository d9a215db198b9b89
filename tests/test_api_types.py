"""paysuite_core.api_types says what spec/openapi.yaml says: each TypedDict has its schema's
properties, the same ones required, and the JSON types ``field_types`` gives the checks.

No ``from __future__ import annotations``: Python 3.11's TypedDict reads ``NotRequired`` only
from an evaluated annotation (the local TypedDicts below)."""

from typing import Literal, NotRequired, TypedDict

import pytest

from paysuite_core import api_types
from paysuite_core.specfile import load_spec

#: Each TypedDict and the schema it types.
TYPED = [
    (api_types.Transaction, "CreationResponse"),
    (api_types.Lookup, "LookupResponse"),
    (api_types.EventData, "EventData"),
    (api_types.Event, "EventRecord"),
    (api_types.EventsPage, "EventList"),
    (api_types.ErrorBody, "Error"),
    (api_types.TokenPairBody, "TokenPair"),
]
JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def _json_types(schema: dict[str, object]) -> tuple[type, ...]:
    """The Python types of a property's JSON schema (a ``$ref``: that schema's)."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        schema = load_spec()["components"]["schemas"][ref.rsplit("/", 1)[1]]
    kinds = schema["type"] if "type" in schema else "object"
    names = kinds if isinstance(kinds, list) else [kinds]
    return tuple(t for name in names for t in JSON_TYPES[str(name)])


def mismatches(typed: type, name: str) -> list[str]:
    """Where the TypedDict ``typed`` parts from the schema ``name`` of spec/openapi.yaml."""
    schema = load_spec()["components"]["schemas"][name]
    fields = api_types.field_types(typed)
    found = [f"{key}: only in the TypedDict" for key in fields if key not in schema["properties"]]
    found += [f"{key}: only in the schema" for key in schema["properties"] if key not in fields]
    if typed.__required_keys__ != frozenset(schema["required"]):
        found.append(f"required {sorted(typed.__required_keys__)} != {sorted(schema['required'])}")
    found += [
        f"{key}: {types} in the TypedDict"
        for key, types in fields.items()
        if key in schema["properties"] and set(types) != set(_json_types(schema["properties"][key]))
    ]
    return found


@pytest.mark.parametrize(("typed", "name"), TYPED, ids=[name for _, name in TYPED])
def test_each_typed_body_has_its_schemas_fields(typed: type, name: str) -> None:
    assert mismatches(typed, name) == []


def test_a_typed_body_that_parts_from_its_schema_is_caught() -> None:
    class Wrong(TypedDict):
        status: str
        code: str
        message: NotRequired[str]
        detail: str

    assert sorted(mismatches(Wrong, "Error")) == [
        "detail: only in the TypedDict",
        "required ['code', 'detail', 'status'] != ['code', 'message', 'status']",
        "status: (<class 'str'>,) in the TypedDict",
    ]


def test_field_types_reads_literals_unions_and_lists() -> None:
    class Body(TypedDict):
        word: Literal["a", "b"]
        amount: int | float
        items: list[str]
        maybe: NotRequired[str | None]
        inner: api_types.ErrorBody

    assert api_types.field_types(Body) == {
        "word": (str,),
        "amount": (int, float),
        "items": (list,),
        "maybe": (str, type(None)),
        "inner": (dict,),
    }
