"""A check's reproduction, unit by unit: fresh keys, a reuse's first request, a race sent at
once, one variable per application, forgeries rebuilt from a fresh token, a short-lived token
waited out; schemathesis's curl with its credentials named; engine errors and early expiry said
once; reasons clipped at a word. Fast: synthetic exchanges, no target (the fault-by-fault proof
against the stub is test_fault_reproductions.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance import catalog, report
from conformance.plugin import _is_engine_error
from conformance.property_phase import chain_step
from conformance.schemathesis_adapter import build_config
from paysuite_core.report_engine import reports
from paysuite_core.results.evidence import Recorded, reproduction, tool_item
from paysuite_core.results.masking import Masker
from paysuite_core.results.outcome import CouldNotCheck, engine_error
from paysuite_core.results.verdict import CheckResult, Coverage, Verdict
from paysuite_core.target_config import parse_target_config
from paysuite_core.tokens import AUTHORIZE_PATH

BASE = "http://127.0.0.1:9/api"
SHORT = "http://127.0.0.1:9/_sandbox/auth/short-lived"
KEY = "0123456789abcdef0123456789abcdef"


def _config(**extra: object) -> object:
    data = {
        "base_url": BASE,
        "applications": [
            {"client_id": "app-w", "client_secret": "sw" * 8, "privilege": "read-write",
             "merchant": "M1"},
            {"client_id": "app-r", "client_secret": "sr" * 8, "privilege": "read",
             "merchant": "M1"},
            {"client_id": "app-r2", "client_secret": "sq" * 8, "privilege": "read",
             "merchant": "M1"},
        ],
        "customer": {"driver": "none"},
        **extra,
    }  # fmt: skip
    return parse_target_config(data)


#: The run's masker (its applications named), one a test.
RUN = SimpleNamespace(masker=Masker())


@pytest.fixture(autouse=True)
def context() -> Iterator[None]:
    RUN.masker = Masker.for_config(_config())  # type: ignore[arg-type]
    yield


def _issue(client_id: str, url: str = BASE + AUTHORIZE_PATH, expires: int = 900) -> str:
    """Record an authorize (or a short-lived pair) that issued a fresh pair; its access token."""
    token = f"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ{client_id}{time.time_ns()}." + "S" * 43
    ask = Recorded.build(
        "POST", url, {"Content-Type": "application/json"},
        json.dumps({"client_id": client_id, "client_secret": "sw" * 8}), masker=RUN.masker,
    )  # fmt: skip
    answer = {"access": token, "refresh": "rf" + token[-30:], "expires": int(time.time()) + expires}
    ask.record_response(200, {}, json.dumps(answer), 3.0)
    return token


def _create(
    token: str, key: str | None, *, status: int = 200, number: str = "0780000001"
) -> Recorded:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    sent = Recorded.build(
        "POST",
        f"{BASE}/transactions/cashin",
        headers,
        json.dumps({"amount": 100, "number": number}),
        masker=RUN.masker,
    )
    sent.record_response(status, {}, '{"ref": "r"}', 5.0)
    return sent


def test_applications_are_named_and_each_has_its_variables() -> None:
    token = _issue("app-w")
    script, needs = reproduction([_create(token, KEY)], []).render()  # type: ignore[union-attr]
    assert '"Authorization: Bearer $PAYSUITE_TOKEN_M1_READ_WRITE"' in script
    assert needs == {"PAYSUITE_TOKEN_M1_READ_WRITE": "app-w"}
    read_two = _issue("app-r2")
    script, needs = reproduction([_create(read_two, None)], []).render()  # type: ignore[union-attr]
    assert set(needs) == {"PAYSUITE_TOKEN_M1_READ_2"}  # the second read application of M1
    exports = reports.replay_exports(BASE, {"PAYSUITE_TOKEN_M1_READ_2": {"app-r2"}}, RUN.masker)
    assert exports[0] == "# application M1_READ_2 (client_id app-r2)"
    assert exports[1].startswith("export PAYSUITE_CLIENT_SECRET_M1_READ_2=")
    assert exports[2].startswith("export PAYSUITE_TOKEN_M1_READ_2=$(curl -sS -X POST")


def test_a_key_that_is_not_the_point_is_fresh() -> None:
    made = reproduction([_create(_issue("app-w"), KEY)], [])
    assert made is not None
    script, _ = made.render()
    assert KEY not in script and "PAYSUITE_KEY_1=$(python3 -c" in script
    assert '"Idempotency-Key: $PAYSUITE_KEY_1"' in script
    assert made.render()[0] == script  # rendering twice gives the same lines
    assert "PAYSUITE_NUMBER" not in script  # the answer shows it: the number needs no change


def test_a_reused_key_sends_its_first_request_first_with_the_same_fresh_key() -> None:
    token = _issue("app-w")
    other = _create(token, "ffffffffffffffffffffffffffffffff")
    first, second = _create(token, KEY), _create(token, KEY, status=409)
    listing = Recorded.build(
        "GET",
        f"{BASE}/events/transactions?client=0780000001",
        {"Authorization": "Bearer x"},
        None,
        masker=RUN.masker,
    )
    made = reproduction([second], [other, first, second, listing])
    assert made is not None and made.steps == [first, second, listing]  # and what they did
    script = made.render()[0]
    assert script.count('"Idempotency-Key: $PAYSUITE_KEY_1"') == 2 and "KEY_2" not in script
    # A fresh number: the listing shows the replay's transactions alone.
    assert script.count('"number": "\'"$PAYSUITE_NUMBER_1"\'"}') == 2
    assert "/events/transactions?client=$PAYSUITE_NUMBER_1" in script
    number = _run(script.splitlines()[1] + "; echo $PAYSUITE_NUMBER_1").strip()
    assert number != "0780000001" and number.startswith("0780") and len(number) == 10


def test_keys_keep_their_relations_upper_case_and_length() -> None:
    token = _issue("app-w")
    lower = _create(token, "Idem" + KEY[:24])
    upper = _create(token, ("Idem" + KEY[:24]).swapcase())
    made = reproduction([upper], [lower, upper])
    assert made is not None and made.steps == [lower, upper]  # one key, in another case
    script = made.render()[0]
    assert "print(uuid.uuid4().hex[:24])" in script
    assert '"Idempotency-Key: Idem$PAYSUITE_KEY_1"' in script
    assert '"Idempotency-Key: iDEM$(printf %s "$PAYSUITE_KEY_1" | tr a-f A-F)"' in script
    long_key = reproduction([_create(token, KEY + "x")], [])  # 33 characters: one too many
    assert long_key is not None
    script = long_key.render()[0]
    assert '"Idempotency-Key: ${PAYSUITE_KEY_1}x"' in script  # 32 fresh, then the same "x"
    made_key = _run(script.splitlines()[0] + "; echo $PAYSUITE_KEY_1").strip()
    assert len(made_key) == 32 and made_key != KEY
    longer = reproduction([_create(token, KEY + KEY[:8])], [])
    assert longer is not None and "(uuid.uuid4().hex*2)[:40]" in longer.render()[0]


def test_identical_keyless_requests_of_the_proof_are_all_sent_again() -> None:
    """IDEM-006's defect (one ref for two keyless creations) shows only when the same request is
    sent again: the script sends every identical request of the proof, not the last one alone;
    a different request of the proof is not repeated."""
    token = _issue("app-w")
    same = [_create(token, None) for _ in range(3)]
    other = _create(token, None, number="0780000002")
    script, _ = reproduction([other, *same], [other, *same]).render()  # type: ignore[union-attr]
    posts = [line for line in script.splitlines() if "/transactions/cashin" in line]
    assert len(posts) == 3, script
    assert len(set(posts)) == 1, script  # the same request, the same number
    keyed = reproduction([_create(token, KEY), _create(token, KEY)], [])
    assert keyed is not None and len(keyed.steps) == 1  # a reused key: its own rule (first use)


def test_a_race_is_sent_at_once_again() -> None:
    token = _issue("app-w")
    racers = [_create(token, KEY) for _ in range(5)]
    started = racers[0].wire.started
    for racer in racers:
        racer.wire.started = started  # in flight together
    made = reproduction(racers[-2:], racers)
    assert made is not None and made.race == 5
    script = made.render()[0]
    assert "i=0; while [ $i -lt 5 ]; do i=$((i+1)); curl " in script and script.endswith("wait")
    # one after another is a reuse, not a race
    for index, racer in enumerate(racers):
        racer.wire.started = started + index
    sequential = reproduction(racers[-1:], racers)
    assert sequential is not None and sequential.race == 0 and len(sequential.steps) == 2


def test_a_forgery_and_a_refresh_token_replay_as_such() -> None:
    token = _issue("app-w")
    middle = len(token) - 20
    altered = token[:middle] + "A" + token[middle + 1 :]
    script, needs = reproduction([_create(altered, None)], []).render()  # type: ignore[union-attr]
    assert token not in script and needs == {"PAYSUITE_TOKEN_M1_READ_WRITE": "app-w"}
    curl = script.splitlines()[-1]
    env = {"PATH": os.environ["PATH"], "PAYSUITE_TOKEN_M1_READ_WRITE": token}
    argv = _run("printf '%s\\0' " + curl.removeprefix("curl "), env).split("\0")
    assert f"Authorization: Bearer {altered}" in argv  # the same forgery of the token given
    refresh = "rf" + token[-30:]
    script, needs = reproduction([_create(refresh, None)], []).render()  # type: ignore[union-attr]
    assert '"Authorization: Bearer $PAYSUITE_REFRESH_TOKEN_M1_READ_WRITE"' in script
    assert "export PAYSUITE_REFRESH_TOKEN_M1_READ_WRITE=" in "\n".join(
        reports.replay_exports(BASE, {var: {owner} for var, owner in needs.items()}, RUN.masker)
    )


def test_a_short_lived_token_is_obtained_from_its_route_and_waited_out() -> None:
    short = {"authorize": f"POST {SHORT}", "access_token_ttl_s": 2}
    RUN.masker = Masker.for_config(_config(short_lived_pair=short), "/x/target.yaml")  # type: ignore[arg-type]
    token = _issue("app-w", SHORT, expires=2)
    script, needs = reproduction([_create(token, None)], []).render()  # type: ignore[union-attr]
    assert needs == {"PAYSUITE_SHORT_TOKEN_M1_READ_WRITE": "app-w"}
    assert any(line.startswith("sleep 3") for line in script.splitlines())  # past its 2 s
    exports = reports.replay_exports(
        BASE, {"PAYSUITE_SHORT_TOKEN_M1_READ_WRITE": {"app-w"}}, RUN.masker
    )
    assert f"-X POST {SHORT} " in exports[-1]
    assert "/x/target.yaml app-w" in exports[1]  # the secret read from the configuration


def test_schemathesis_curl_names_its_credentials_and_is_not_masked() -> None:
    token = _issue("app-w")
    config = build_config(1, "seed", BASE)
    assert not config.output.sanitization.enabled  # no "[Filtered]" in its code samples
    sample = (
        f"curl -X POST -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' "
        f"-d '{{\"number\": \"0780000001\"}}' '{BASE}/transactions/cashin?Idempotency-Key={KEY}'\n"
        f"curl -X GET -H 'Authorization: Bearer {token}' '{BASE}/transactions/find/x'"
    )
    item = tool_item({"request": None, "response": None}, sample, RUN.masker)
    assert token not in item["curl"] and "[Filtered]" not in item["curl"]
    assert item["env"] == {"PAYSUITE_TOKEN_M1_READ_WRITE": "app-w"}
    assert item.reproduction is not None
    script = item.reproduction.render()[0]
    assert KEY not in script and "Idempotency-Key=$PAYSUITE_KEY_1" in script
    odd = tool_item({}, f"wget --header 'Authorization: Bearer {token}' x", RUN.masker)
    assert token not in odd["curl"] and odd.reproduction is None  # shortened, not replayed


def test_reasons_are_clipped_at_a_word() -> None:
    text = "the property run proves nothing about operations it never saw succeed: GET /events"
    assert reports.clip(text, 40) == "the property run proves nothing about…"
    assert reports.clip("short", 40) == "short" and reports.clip("a\nb") == "a"
    assert len(reports.clip("x" * 300, 100)) == 100  # one word longer than the line: cut in it


def _refused(check_id: str, token: str) -> CheckResult:
    sent = _create(token, None, status=401)
    result = CheckResult(catalog.get(check_id), "error", "could not check: answered 401")
    result.evidence = [sent.to_dict()]
    return result


def test_early_expiry_is_said_once_when_most_checks_meet_it() -> None:
    young = _issue("app-w")
    results = [_refused(cid, young) for cid in ("TXN-001", "TXN-002", "FIND-001")]
    (line,) = report.early_expiry(results)
    assert line.startswith("the target refused 3 requests with 401 on tokens issued less than")
    assert "(3 of the 3 failed or errored checks): it expires tokens early" in line
    assert report.early_expiry(results[:2]) == ()  # too few to say
    old = _issue("app-w", expires=-60)  # already past its expires when sent
    assert report.early_expiry([_refused(c, old) for c in ("TXN-001", "TXN-002", "FIND-001")]) == ()
    others = [CheckResult(catalog.get(c), "failed", "x") for c in ("EVT-001", "EVT-002", "EVT-003")]
    assert report.early_expiry(results + others) == ()  # not most of them


def test_an_engine_error_is_the_runs_with_its_traceback(tmp_path: Path) -> None:
    # The property run's chain check met a repeated query parameter (a list) and raised.
    case = SimpleNamespace(
        operation=SimpleNamespace(path="/events/transactions"), query={"ref": ["a", "b"]}
    )
    chain_step({"a": {}}, case, 200, {"transactions": []})  # no longer raises
    assert _is_engine_error(TypeError("unhashable type: 'list'"))
    assert not _is_engine_error(CouldNotCheck("the target answered 401"))
    try:
        {}[["x"]]  # type: ignore[index]
    except TypeError as exc:
        error = engine_error("the property run (GET /events/transactions)", exc)
    verdict = Verdict(
        "error", 2, "seed", False, Coverage(1, 1),
        run_errors=(error.line(),), reason=error.line(), engine_errors=(error,),
    )  # fmt: skip
    reports.write_all(
        [], verdict=verdict, report_dir=tmp_path, target=BASE, started_at="", duration_s=0
    )
    data = json.loads((tmp_path / "conformance.json").read_text(encoding="utf-8"))
    (kept,) = data["engine_errors"]
    assert kept["message"] == "TypeError: unhashable type: 'list'"
    assert "Traceback (most recent call last)" in kept["traceback"]
    assert data["run_errors"] == [error.line()] and "not the target's" in error.line()
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Errors of paysuite itself" not in page  # a run with no check: what stopped it only
    result = CheckResult(catalog.get("PROP-006"), "passed")
    reports.write_all(
        [result], verdict=verdict, report_dir=tmp_path, target=BASE, started_at="", duration_s=0
    )
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Errors of paysuite itself" in page and "Traceback (most recent call last)" in page


def _run(command: str, env: dict[str, str] | None = None) -> str:
    env = env or {"PATH": os.environ["PATH"]}
    return subprocess.run(
        ["bash", "-c", command], env=env, capture_output=True, text=True, check=True
    ).stdout


def test_two_runs_in_one_process_keep_their_credentials_apart() -> None:
    """The masker is the run's, not the process's: a token one run was issued is a stranger to
    another run's curl (named with a note), and known to its own."""
    token = _issue("app-w")
    headers = {"Authorization": f"Bearer {token}"}
    elsewhere = Recorded.build("GET", f"{BASE}/x", headers, None, masker=Masker()).to_dict()
    assert "forgery" in elsewhere["note"] and elsewhere["env"] == {"PAYSUITE_TOKEN": ""}
    here = Recorded.build("GET", f"{BASE}/x", headers, None, masker=RUN.masker).to_dict()
    assert "note" not in here and here["env"] == {"PAYSUITE_TOKEN_M1_READ_WRITE": "app-w"}
