"""RC-12: reads for every privilege; cashin needs cashin or read-write; cashout, cashout or
read-write; otherwise 403 insufficient_privilege (and nothing is created)."""

from __future__ import annotations

import pytest
from stubkit import Api, new_number

ALLOWED = {
    "read": {"find", "events"},
    "read-write": {"find", "events", "cashin", "cashout"},
    "cashin": {"find", "events", "cashin"},
    "cashout": {"find", "events", "cashout"},
}


@pytest.fixture(scope="module")
def known_ref(api: Api) -> str:
    return str(api.create().json()["ref"])


@pytest.mark.parametrize("privilege", list(ALLOWED))
@pytest.mark.parametrize("operation", ["find", "events", "cashin", "cashout"])
def test_privilege_matrix(api: Api, known_ref: str, privilege: str, operation: str) -> None:
    app = api.app(privilege, "DEMO01")
    number = new_number()
    if operation == "find":
        response = api.find(known_ref, app)
    elif operation == "events":
        response = api.events(app)
    else:
        response = api.create(operation, app=app, number=number)
    if operation in ALLOWED[privilege]:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 403, response.text
        assert response.json()["code"] == "insufficient_privilege"
        assert api.events(client=number).json()["total"] == 0


def test_privilege_is_checked_before_the_body(api: Api) -> None:
    response = api.http.post(
        "/transactions/cashout", content=b"{", headers=api.headers(api.app("cashin"))
    )
    assert response.status_code == 403
