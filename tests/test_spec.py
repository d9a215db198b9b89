"""Checks of spec/openapi.yaml against the interface document and docs/reference-choices.md.

The field lists below are copied from the tables of the interface document
(the interface document), so that a field dropped or renamed in the spec, or typed
differently from the document, fails here rather than in a conformance run. The tests also pin
the contract the conformance suite relies on: where the reference choices are marked, where the
amount and number constraints live, and that schemathesis builds its state machine from the links.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import validate

from paysuite_core.specfile import load_spec, spec_path
from paysuite_core.target_config import RWANDA_MOBILE_PATTERN

REFERENCE_CHOICES = Path(__file__).resolve().parents[1] / "docs" / "reference-choices.md"

#: operationId -> (method, path), the document's six endpoints with both refresh shapes.
OPERATIONS = {
    "cashin": ("post", "/transactions/cashin"),
    "cashout": ("post", "/transactions/cashout"),
    "findTransaction": ("get", "/transactions/find/{ref}"),
    "listTransactionEvents": ("get", "/events/transactions"),
    "authorize": ("post", "/auth/agents/authorize"),
    "refreshAgents": ("get", "/auth/agents/refresh/{refresh_token}"),
    "refresh": ("get", "/auth/refresh/{refresh_token}"),
}

#: The document's JSON types, as JSON Schema types.
NUMBER, STRING, INTEGER, OBJECT, ARRAY = "number", "string", "integer", "object", "array"

#: Schema name -> the fields of the matching table of the document, with their types.
DOCUMENT_FIELDS: dict[str, dict[str, str]] = {
    "CreationResponse": {
        "amount": NUMBER,
        "created_at": STRING,
        "kind": STRING,
        "ref": STRING,
        "status": STRING,
    },
    "LookupResponse": {
        "amount": NUMBER,
        "client": STRING,
        "fee": NUMBER,
        "kind": STRING,
        "merchant": STRING,
        "ref": STRING,
        "status": STRING,
        "timestamp": STRING,
    },
    "EventRecord": {
        "event_id": STRING,
        "event_kind": STRING,
        "created_at": STRING,
        "data": OBJECT,
    },
    "EventData": {
        "ref": STRING,
        "kind": STRING,
        "fee": NUMBER,
        "merchant": STRING,
        "client": STRING,
        "amount": NUMBER,
        "status": STRING,
        "created_at": STRING,
        "processed_at": STRING,
    },
    "EventList": {
        "amount": NUMBER,
        "client": STRING,
        "event-kind": STRING,
        "kind": STRING,
        "limit": INTEGER,
        "offset": INTEGER,
        "ref": STRING,
        "status": STRING,
        "total": INTEGER,
        "transactions": ARRAY,
    },
    "TokenPair": {"access": STRING, "refresh": STRING, "expires": STRING},
    "TransactionRequest": {"amount": NUMBER, "number": STRING},
    "AuthorizeRequest": {"client_id": STRING, "client_secret": STRING},
}

#: Fields the document marks required in its request tables.
REQUIRED_REQUEST_FIELDS = {
    "TransactionRequest": {"amount", "number"},
    "AuthorizeRequest": {"client_id", "client_secret"},
}

#: operationId -> (success schema, request schema or None) as the document's endpoints say.
OPERATION_SCHEMAS = {
    "cashin": ("CreationResponse", "TransactionRequest"),
    "cashout": ("CreationResponse", "TransactionRequest"),
    "findTransaction": ("LookupResponse", None),
    "listTransactionEvents": ("EventList", None),
    "authorize": ("TokenPair", "AuthorizeRequest"),
    "refreshAgents": ("TokenPair", None),
    "refresh": ("TokenPair", None),
}

#: operationId -> the headers its section of the document lists (Authorization excepted: it is
#: the security scheme).
DOCUMENT_HEADERS = {
    "cashin": {"Accept", "Content-Type", "Idempotency-Key", "X-Webhook-Mode"},
    "cashout": {"Accept", "Content-Type", "Idempotency-Key", "X-Webhook-Mode"},
    "findTransaction": {"Accept", "Content-Type"},
    "listTransactionEvents": {"Accept", "Content-Type"},
    "authorize": {"Accept", "Content-Type"},
    "refreshAgents": {"Accept"},
    "refresh": {"Accept"},
}

#: Error statuses each operation documents (the error catalogue of reference-choices.md).
ERROR_STATUSES = {
    "cashin": {"400", "401", "403", "405", "409", "413", "415"},
    "cashout": {"400", "401", "403", "405", "409", "413", "415"},
    "findTransaction": {"401", "404", "405"},
    "listTransactionEvents": {"400", "401", "405"},
    "authorize": {"400", "401", "405", "413", "415"},
    "refreshAgents": {"401", "404", "405"},
    "refresh": {"401", "404", "405"},
}

#: (source operationId, link name) -> (target operationId, {parameter: expression}).
LINKS = {
    ("cashin", "FindCreatedTransaction"): ("findTransaction", {"path.ref": "$response.body#/ref"}),
    ("cashout", "FindCreatedTransaction"): ("findTransaction", {"path.ref": "$response.body#/ref"}),
    ("cashin", "ListEventsOfTransaction"): (
        "listTransactionEvents",
        {"query.ref": "$response.body#/ref"},
    ),
    ("cashout", "ListEventsOfTransaction"): (
        "listTransactionEvents",
        {"query.ref": "$response.body#/ref"},
    ),
    ("authorize", "RefreshAgents"): (
        "refreshAgents",
        {"path.refresh_token": "$response.body#/refresh"},
    ),
    ("authorize", "Refresh"): ("refresh", {"path.refresh_token": "$response.body#/refresh"}),
    ("refresh", "Refresh"): ("refresh", {"path.refresh_token": "$response.body#/refresh"}),
    ("refreshAgents", "RefreshAgents"): (
        "refreshAgents",
        {"path.refresh_token": "$response.body#/refresh"},
    ),
}


@pytest.fixture(scope="module")
def spec() -> dict[str, Any]:
    return load_spec()


def resolve(spec: dict[str, Any], node: Any) -> Any:
    """Follow local ``$ref``s until a node without one (the spec uses no remote references)."""
    while isinstance(node, dict) and "$ref" in node:
        target: Any = spec
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def operation(spec: dict[str, Any], operation_id: str) -> dict[str, Any]:
    method, path = OPERATIONS[operation_id]
    return spec["paths"][path][method]


def parameters(spec: dict[str, Any], operation_id: str) -> list[dict[str, Any]]:
    return [resolve(spec, p) for p in operation(spec, operation_id).get("parameters", [])]


def parameter(spec: dict[str, Any], operation_id: str, name: str, where: str) -> dict[str, Any]:
    found = [p for p in parameters(spec, operation_id) if p["name"] == name and p["in"] == where]
    assert len(found) == 1, f"{operation_id}: expected one {where} parameter {name!r}"
    return found[0]


def types_of(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if declared is None:
        return set()
    return {declared} if isinstance(declared, str) else set(declared)


def walk(node: Any, where: str = "#") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every mapping of the document with its JSON pointer."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from walk(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{where}/{index}")


def reference_choice_rows() -> dict[str, str]:
    """RC-n -> the text of its row in docs/reference-choices.md."""
    rows = {}
    for line in REFERENCE_CHOICES.read_text(encoding="utf-8").splitlines():
        match = re.match(r"\|\s*(RC-\d+)\s*\|", line)
        if match:
            rows[match.group(1)] = line
    return rows


def test_spec_is_package_data_and_valid_openapi_3_1(spec: dict[str, Any]) -> None:
    assert spec_path().name == "openapi.yaml" and spec_path().is_file()
    assert spec["openapi"] == "3.1.0"
    validate(spec)


def test_server_is_the_base_path(spec: dict[str, Any]) -> None:
    [server] = spec["servers"]
    assert server["url"].endswith("/api")
    assert "/api" in server["description"]


def test_every_operation_exists_with_its_stable_id(spec: dict[str, Any]) -> None:
    found = {
        op["operationId"]: (method, path)
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict) and "operationId" in op
    }
    assert found == OPERATIONS
    assert not any(path.startswith(("/healthz", "/_sandbox")) for path in spec["paths"])


def test_both_refresh_paths_are_marked_ambiguous(spec: dict[str, Any]) -> None:
    for operation_id in ("refresh", "refreshAgents"):
        op = operation(spec, operation_id)
        assert (
            "/auth/refresh/" in op["x-ambiguity"] and "/auth/agents/refresh/" in op["x-ambiguity"]
        )
        assert op["x-reference-choice-id"] == "RC-9"
        assert parameter(spec, operation_id, "refresh_token", "path")["required"] is True


@pytest.mark.parametrize("schema_name", sorted(DOCUMENT_FIELDS))
def test_document_fields_are_in_their_schema(spec: dict[str, Any], schema_name: str) -> None:
    schema = spec["components"]["schemas"][schema_name]
    properties = {name: resolve(spec, sub) for name, sub in schema["properties"].items()}
    for field, json_type in DOCUMENT_FIELDS[schema_name].items():
        assert field in properties, f"{schema_name} lacks the document's field {field!r}"
        assert json_type in types_of(properties[field]), f"{schema_name}.{field} not {json_type}"
    required = set(schema.get("required", []))
    assert required <= set(DOCUMENT_FIELDS[schema_name]), f"{schema_name} requires extra fields"
    if schema_name in REQUIRED_REQUEST_FIELDS:
        assert required == REQUIRED_REQUEST_FIELDS[schema_name]
        assert schema.get("additionalProperties", True) is not False  # RC-30: ignored, not refused


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_operations_use_the_documents_schemas(spec: dict[str, Any], operation_id: str) -> None:
    op = operation(spec, operation_id)
    response_name, request_name = OPERATION_SCHEMAS[operation_id]
    success = op["responses"]["200"]
    assert success["x-reference-choice"] is True and success["x-reference-choice-id"] == "RC-2"
    schema_ref = success["content"]["application/json"]["schema"]["$ref"]
    assert schema_ref == f"#/components/schemas/{response_name}"
    body = resolve(spec, op.get("requestBody"))
    if request_name is None:
        assert body is None
    else:
        assert body["required"] is True
        assert body["content"]["application/json"]["schema"]["$ref"].endswith(f"/{request_name}")


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_error_responses_use_the_error_body(spec: dict[str, Any], operation_id: str) -> None:
    responses = operation(spec, operation_id)["responses"]
    assert set(responses) == {"200"} | ERROR_STATUSES[operation_id]
    for status in ERROR_STATUSES[operation_id]:
        response = resolve(spec, responses[status])
        assert response["x-reference-choice"] is True, f"{operation_id} {status}"
        assert status in response["description"], f"{operation_id} {status}: say when it happens"
        schema = response["content"]["application/json"]["schema"]
        assert schema["$ref"] == "#/components/schemas/Error"
    error = spec["components"]["schemas"]["Error"]
    assert error["required"] == ["status", "code", "message"]
    assert error["x-reference-choice-id"] == "RC-3"
    assert {name: sub["type"] for name, sub in error["properties"].items()} == {
        "status": INTEGER,
        "code": STRING,
        "message": STRING,
    }


def test_error_descriptions_name_the_catalogue_codes(spec: dict[str, Any]) -> None:
    catalogue = re.findall(
        r"^\| (\d{3}) \| `([a-z_]+)` \|", REFERENCE_CHOICES.read_text(encoding="utf-8"), re.M
    )
    responses = spec["components"]["responses"]
    described = " ".join(r["description"] for r in responses.values())
    for status, code in catalogue:
        if code in ("transaction_not_pending", "internal_error"):
            continue  # the sandbox's code, and the code of a bug: not part of the service
        assert code in described, f"error code {code} ({status}) is described nowhere"


@pytest.mark.parametrize("operation_id", sorted(OPERATIONS))
def test_headers_the_document_lists(spec: dict[str, Any], operation_id: str) -> None:
    headers = {p["name"]: p for p in parameters(spec, operation_id) if p["in"] == "header"}
    assert set(headers) == DOCUMENT_HEADERS[operation_id]
    # A required header would make schemathesis expect a 4xx when it is left out; the reference
    # stub accepts a missing Accept (RC-31), and HTTP clients always send the body's media type.
    assert not any(p.get("required") for p in headers.values())
    assert "application/json" in headers["Accept"]["description"]


@pytest.mark.parametrize("operation_id", ["cashin", "cashout", "authorize"])
def test_post_content_type_is_json_only(spec: dict[str, Any], operation_id: str) -> None:
    content_type = parameter(spec, operation_id, "Content-Type", "header")
    assert content_type["schema"]["enum"] == ["application/json"]


def test_security_bearer_jwt_with_open_auth_operations(spec: dict[str, Any]) -> None:
    scheme = spec["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"], scheme["bearerFormat"]) == ("http", "bearer", "JWT")
    assert spec["security"] == [{"bearerAuth": []}]
    for operation_id in OPERATIONS:
        op = operation(spec, operation_id)
        if operation_id in ("authorize", "refresh", "refreshAgents"):
            assert op["security"] == []
        else:
            assert "security" not in op  # inherits the global bearer requirement


@pytest.mark.parametrize("operation_id", ["cashin", "cashout"])
def test_idempotency_key_as_header_and_query(spec: dict[str, Any], operation_id: str) -> None:
    for where in ("header", "query"):
        key = parameter(spec, operation_id, "Idempotency-Key", where)
        schema = resolve(spec, key["schema"])
        assert key["required"] is False
        assert (schema["type"], schema["minLength"], schema["maxLength"]) == (STRING, 1, 32)
        assert "maximum length 32" in key["description"]
    mode = parameter(spec, operation_id, "X-Webhook-Mode", "header")
    assert (mode["schema"]["type"], mode["schema"]["maxLength"]) == (STRING, 64)
    assert mode["x-reference-choice-id"] == "RC-28"


def test_amount_and_number_constraints_where_the_suite_patches_them(spec: dict[str, Any]) -> None:
    properties = spec["components"]["schemas"]["TransactionRequest"]["properties"]
    amount, number = properties["amount"], properties["number"]
    assert (amount["minimum"], amount["maximum"]) == (100, 10_000_000)
    assert amount["x-reference-choice"] is True and amount["x-reference-choice-id"] == "RC-13"
    assert number["x-reference-choice"] is True and number["x-reference-choice-id"] == "RC-14"
    # The spec's pattern is the JS SDK pattern with ASCII digits: same verdict on ASCII input.
    samples = [
        "0781234567",
        "250781234567",
        "+250721234567",
        "+25078123456",
        "0771234567",
        "078123456",
        "07812345678",
        "25 0781234567",
        "0781234567\n",
        "",
    ]
    for sample in samples:
        expected = re.fullmatch(RWANDA_MOBILE_PATTERN, sample) is not None
        assert (re.fullmatch(number["pattern"], sample) is not None) == expected, sample
    assert re.fullmatch(number["pattern"], "078\u0663234567") is None  # Arabic-Indic digit


def test_event_list_query(spec: dict[str, Any]) -> None:
    query = {p["name"]: p for p in parameters(spec, "listTransactionEvents") if p["in"] == "query"}
    assert set(query) == {"status", "client", "ref", "kind", "limit", "offset"} | {
        "event-kind",
        "from",
        "to",
    }
    assert not any(p["required"] for p in query.values())
    # The reference stub reads an empty value (`?status=`) as "not given" (RC-25).
    assert all(p["allowEmptyValue"] is True for p in query.values())
    assert query["kind"]["schema"]["enum"] == ["CASHIN", "CASHOUT"]
    limit, offset = query["limit"]["schema"], query["offset"]["schema"]
    assert (limit["type"], limit["minimum"], limit["maximum"], limit["default"]) == (
        INTEGER,
        1,
        100,
        20,
    )
    assert (offset["type"], offset["minimum"], offset["default"]) == (INTEGER, 0, 0)
    for name, row in (("limit", "RC-23"), ("offset", "RC-23")) + tuple(
        (extra, "RC-24") for extra in ("event-kind", "from", "to")
    ):
        assert query[name]["x-reference-choice"] is True
        assert query[name]["x-reference-choice-id"] == row


def test_ambiguities_are_marked(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]
    expires = schemas["TokenPair"]["properties"]["expires"]
    assert set(expires["type"]) == {STRING, INTEGER}
    assert "string" in expires["x-ambiguity"] and "integer" in expires["x-ambiguity"]
    status = schemas["TransactionStatus"]
    assert set(status["enum"]) == {"pending", "success", "successful", "failed"}
    assert "success" in status["x-ambiguity"] and "successful" in status["x-ambiguity"]
    for schema_name in ("LookupResponse", "EventData"):
        assert schemas[schema_name]["properties"]["status"]["$ref"].endswith("/TransactionStatus")
    assert schemas["CreationResponse"]["properties"]["status"]["enum"] == ["pending"]


def test_formats_the_document_gives(spec: dict[str, Any]) -> None:
    schemas = spec["components"]["schemas"]

    def prop(schema_name: str, name: str) -> dict[str, Any]:
        return resolve(spec, schemas[schema_name]["properties"][name])

    for schema_name, name in [
        ("CreationResponse", "ref"),
        ("LookupResponse", "ref"),
        ("EventData", "ref"),
        ("EventRecord", "event_id"),
    ]:
        assert prop(schema_name, name)["format"] == "uuid", f"{schema_name}.{name}"
    for schema_name, name in [
        ("CreationResponse", "created_at"),
        ("LookupResponse", "timestamp"),
        ("EventRecord", "created_at"),
        ("EventData", "created_at"),
        ("EventData", "processed_at"),
    ]:
        assert prop(schema_name, name)["format"] == "date-time", f"{schema_name}.{name}"
    assert set(prop("EventData", "processed_at")["type"]) == {STRING, "null"}
    for schema_name in ("CreationResponse", "LookupResponse", "EventData"):
        assert prop(schema_name, "kind")["enum"] == ["CASHIN", "CASHOUT"]
    assert prop("EventRecord", "event_kind")["enum"] == [
        "transaction:created",
        "transaction:processed",
    ]


def test_reference_patterns_match_the_examples_of_their_rows(spec: dict[str, Any]) -> None:
    rows = reference_choice_rows()
    patterned = [node for _, node in walk(spec) if "x-reference-pattern" in node]
    assert len(patterned) >= 5
    for node in patterned:
        row = rows[node["x-reference-choice-id"]]
        examples = re.findall(r"`(\d{4}-\d\d-\d\dT[^`]+)`", row)
        if not examples:
            # RC-21 gives no example: "UTC, microseconds, `Z`", the shape of RC-19's example.
            assert "UTC, microseconds, `Z`" in row, node["x-reference-choice-id"]
            examples = re.findall(r"`(\d{4}-\d\d-\d\dT[^`]+)`", rows["RC-19"])
        for example in examples:
            assert re.fullmatch(node["x-reference-pattern"], example), example
        assert not re.fullmatch(node["x-reference-pattern"], "2026-11-21T06:44:32Z")


def test_reference_choice_marks_name_existing_rows(spec: dict[str, Any]) -> None:
    rows = reference_choice_rows()
    assert len(rows) >= 32
    marked = [(where, node) for where, node in walk(spec) if "x-reference-choice-id" in node]
    assert len(marked) >= 40
    for where, node in marked:
        assert node["x-reference-choice-id"] in rows, f"{where} names an unknown row"
        assert node["x-reference-choice-id"] in node.get("description", ""), where
    for where, node in walk(spec):
        if node.get("x-reference-choice") is True:
            assert "x-reference-choice-id" in node, f"{where} is marked without its row"
        for key in ("x-reference-required",):
            if key in node:
                assert set(node["required"]) <= set(node[key]) <= set(node["properties"])
    # Every row that shapes the HTTP interface is marked somewhere.
    used = {node["x-reference-choice-id"] for _, node in marked}
    for row in ("RC-2", "RC-3", "RC-4", "RC-5", "RC-8", "RC-9", "RC-12", "RC-13", "RC-14"):
        assert row in used, row
    for row in ("RC-23", "RC-24", "RC-25", "RC-26", "RC-27", "RC-28", "RC-29", "RC-31", "RC-32"):
        assert row in used, row


def test_info_explains_the_extensions(spec: dict[str, Any]) -> None:
    description = spec["info"]["description"]
    for word in (
        "docs/reference-choices.md",
        "x-reference-choice",
        "x-reference-choice-id",
        "x-ambiguity",
        "x-reference-pattern",
        "x-reference-required",
        "x-extension",
    ):
        assert word in description
    assert {tag["name"] for tag in spec["tags"]} == {"Transactions", "Events", "Authentication"}


def test_links_chain_creations_and_tokens(spec: dict[str, Any]) -> None:
    ids = {op_id: operation(spec, op_id) for op_id in OPERATIONS}
    for (source, name), (target, link_parameters) in LINKS.items():
        link = resolve(spec, ids[source]["responses"]["200"]["links"][name])
        assert link["operationId"] == target
        assert link["parameters"] == link_parameters


def test_schemathesis_builds_the_state_machine_with_the_links() -> None:
    import schemathesis

    schema = schemathesis.openapi.from_dict(load_spec())
    operations = {result.ok().label for result in schema.get_all_operations()}
    assert operations == {f"{m.upper()} {p}" for m, p in OPERATIONS.values()}
    machine = schema.as_state_machine()
    labels = {op_id: f"{m.upper()} {p}" for op_id, (m, p) in OPERATIONS.items()}

    def squeeze(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9]", "", text)

    # Rule names read "<source label> -> 200 -> <link name> -> <target label>", normalized.
    transitions = set()
    for rule in dir(machine):
        for name in {link_name for _, link_name in LINKS}:
            source, found, target = rule.partition(f"_200_{name}_")
            if found:
                transitions.add((squeeze(source), name, squeeze(target)))
    for (source, name), (target, _) in LINKS.items():
        wanted = (squeeze(labels[source]), name, squeeze(labels[target]))
        assert wanted in transitions, f"no transition {source} -[{name}]-> {target}"


def test_authorize_roots_the_auth_chain_when_selected_alone() -> None:
    """With every operation selected, schemathesis roots its scenarios at cashin and cashout only
    (it reads `client_id` as a reference to a resource nothing produces); selecting the three
    auth operations alone makes authorize a root, so authorize -> refresh chains can run."""
    import schemathesis

    schema = schemathesis.openapi.from_dict(load_spec())
    auth = schema.include(operation_id=["authorize", "refresh", "refreshAgents"])
    roots = {name for name in dir(auth.as_state_machine()) if name.startswith("RANDOM_")}
    assert any(name.endswith("POST_auth_agents_authorize") for name in roots), roots


#: The routes the published SDKs call beyond the document (RC-36, RC-37).
EXTENSIONS = {
    "merchantProfile": ("get", "/merchants/me"),
    "listTransactions": ("get", "/transactions/list"),
}


def test_sdk_extensions_are_marked_and_left_out_by_default() -> None:
    full = load_spec(extensions=True)
    validate(full)
    for operation_id, (method, path) in EXTENSIONS.items():
        operation = full["paths"][path][method]
        assert operation["operationId"] == operation_id
        assert operation["x-extension"] is True
        assert operation["x-reference-choice-id"] in ("RC-36", "RC-37")
        assert path not in load_spec()["paths"]  # what the conformance suite reads
    document_paths = {p for p in full["paths"] if p not in {p for _, p in EXTENSIONS.values()}}
    assert document_paths == set(load_spec()["paths"])
    for item in load_spec()["paths"].values():
        assert not any(isinstance(op, dict) and op.get("x-extension") for op in item.values())
