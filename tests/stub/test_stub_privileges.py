"""RC-12: reads for every privilege; cashin needs cashin or read-write; cashout, cashout or
read-write; otherwise 403 insufficient_privilege (and nothing is created)."""

from __future__ import annotations

import jwt
import pytest
from stubkit import Api, new_number, refresh_url

ALLOWED = {
    "read": {"authorize", "refresh", "find", "events"},
    "read-write": {"authorize", "refresh", "find", "events", "cashin", "cashout"},
    "cashin": {"authorize", "refresh", "find", "events", "cashin"},
    "cashout": {"authorize", "refresh", "find", "events", "cashout"},
}
OPERATIONS = ["authorize", "refresh", "find", "events", "cashin", "cashout"]


@pytest.fixture(scope="module")
def known_ref(api: Api) -> str:
    return str(api.create().json()["ref"])


@pytest.mark.parametrize("privilege", list(ALLOWED))
@pytest.mark.parametrize("operation", OPERATIONS)
def test_privilege_matrix(api: Api, known_ref: str, privilege: str, operation: str) -> None:
    """Each of the 4 privileges against each of the 6 operations (RC-12)."""
    app = api.app(privilege, "DEMO01")
    number = new_number()
    if operation == "authorize":
        response = api.authorize(app)
    elif operation == "refresh":
        response = api.http.get(refresh_url(api.pair(app, fresh=True)["refresh"]))
    elif operation == "find":
        response = api.find(known_ref, app)
    elif operation == "events":
        response = api.events(app)
    else:
        response = api.create(operation, app=app, number=number)
    if operation in ALLOWED[privilege]:
        assert response.status_code == 200, response.text
        if operation in ("authorize", "refresh"):
            claims = jwt.decode(response.json()["access"], options={"verify_signature": False})
            assert claims["perm"] == privilege and claims["merchant"] == "DEMO01"
        elif operation == "find":
            assert response.json()["ref"] == known_ref
        elif operation in ("cashin", "cashout"):
            assert response.json()["kind"] == operation.upper()
            assert api.events(client=number).json()["total"] == 1
    else:
        assert response.status_code == 403, response.text
        assert response.json()["code"] == "insufficient_privilege"
        assert api.events(client=number).json()["total"] == 0


def test_privilege_is_checked_before_the_body(api: Api) -> None:
    response = api.http.post(
        "/transactions/cashout", content=b"{", headers=api.headers(api.app("cashin"))
    )
    assert response.status_code == 403
