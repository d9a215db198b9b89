"""The HAR file: valid HAR 1.2, written from masked exchanges, read back into the same exchanges,
and other tools' HAR files read as well as they can be."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_masking import ACCESS_1, SECRET, session

from paysuite_core.exchange import Exchange
from paysuite_core.results.masking import Masker, mask_exchange
from proxy.har import HarError, read_har, read_session, to_har, write_har

TARGET = "http://127.0.0.1:9/api"


def test_a_session_reads_back_as_written(tmp_path: Path) -> None:
    masker = Masker()
    exchanges = [mask_exchange(item, masker) for item in session()]
    exchanges.append(
        replace(exchanges[1], seq=8, status=0, response_headers=(), response_body=b"",
                error="target did not answer within 30 s", notes=("retried",))
    )  # fmt: skip
    exchanges.append(replace(exchanges[2], seq=9, response_body=b"\x00\xff binary", method="PUT"))
    path = write_har(exchanges, tmp_path / "session.har", target=TARGET)
    recorded = read_session(path)
    assert recorded.exchanges == exchanges
    assert recorded.target == TARGET
    assert read_har(path) == exchanges


def test_the_file_is_har_1_2(tmp_path: Path) -> None:
    masked = [mask_exchange(item, Masker()) for item in session()]
    path = write_har(masked, tmp_path / "s.har")
    log = json.loads(path.read_text("utf-8"))["log"]
    assert log["version"] == "1.2"
    assert log["creator"]["name"] == "paysuite proxy"
    entry = log["entries"][0]
    for key in ("startedDateTime", "time", "request", "response", "cache", "timings"):
        assert key in entry
    assert entry["startedDateTime"] == "2023-11-14T22:13:21+00:00"
    request, response = entry["request"], entry["response"]
    assert request["method"] == "POST" and request["httpVersion"] == "HTTP/1.1"
    assert {"name": "Accept", "value": "application/json"} in request["headers"]
    assert json.loads(request["postData"]["text"])["client_secret"] == "«masked:secret:1»"
    assert response["status"] == 200 and response["statusText"] == "OK"
    assert json.loads(response["content"]["text"])["access"] == "«masked:access:1»"
    assert response["content"]["mimeType"] == "application/json"
    # extension fields are underscored, as HAR 1.2 requires of custom fields
    custom = [k for k in entry if k not in ("startedDateTime", "time", "request", "response",
                                            "cache", "timings")]  # fmt: skip
    assert custom and all(key.startswith("_") for key in custom)
    find = log["entries"][6]["request"]
    assert find["queryString"] == [{"name": "token", "value": "«masked:access:1»"}]


def test_what_is_written_carries_no_secret_when_masked_first(tmp_path: Path) -> None:
    masked = [mask_exchange(item, Masker()) for item in session()]
    text = write_har(masked, tmp_path / "s.har").read_text("utf-8")
    assert SECRET not in text and ACCESS_1 not in text
    assert "«masked:access:1»" in text  # written readably, not as \u escapes


def test_a_rewrite_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "s.har"
    write_har(session(), path)
    write_har(session()[:1], path)
    assert len(read_har(path)) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["s.har"]  # no temporary file left


def test_another_tools_har_is_read_without_the_extension_fields(tmp_path: Path) -> None:
    browser = {
        "log": {
            "version": "1.2",
            "creator": {"name": "WebInspector", "version": "537.36"},
            "entries": [
                {
                    "startedDateTime": "2026-11-24T10:00:00.250Z",
                    "time": 12.5,
                    "request": {
                        "method": "post",
                        "url": "http://127.0.0.1:9/api/transactions/cashin",
                        "headers": [{"name": "Content-Type", "value": "application/json"}],
                        "postData": {"mimeType": "application/json", "text": '{"amount": 100}'},
                    },
                    "response": {
                        "status": 200,
                        "headers": [],
                        "content": {
                            "size": 4,
                            "mimeType": "text/plain",
                            "text": "b2shCg==",
                            "encoding": "base64",
                        },
                    },
                },
                {
                    "startedDateTime": "2026-11-24T10:00:01Z",
                    "time": -1,
                    "request": {
                        "method": "POST",
                        "url": "http://127.0.0.1:9/form",
                        "postData": {
                            "mimeType": "application/x-www-form-urlencoded",
                            "params": [{"name": "a", "value": "1 2"}],
                        },
                    },
                    "response": {"status": 0, "content": {}},
                },
            ],
        }
    }
    path = tmp_path / "browser.har"
    path.write_text(json.dumps(browser), "utf-8")
    recorded = read_session(path)
    assert recorded.target is None
    first, second = recorded.exchanges
    assert first == Exchange(
        seq=1, started=datetime(2026, 11, 24, 10, 0, 0, 250_000, UTC).timestamp(),
        elapsed_ms=12.5, method="POST",
        url="http://127.0.0.1:9/api/transactions/cashin",
        request_headers=(("Content-Type", "application/json"),), request_body=b'{"amount": 100}',
        status=200, response_headers=(), response_body=b"ok!\n",
    )  # fmt: skip
    assert (second.seq, second.elapsed_ms, second.request_body, second.status) == (
        2, 0.0, b"a=1+2", 0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not JSON"),
        ("[]", "the file: expected an object"),
        ('{"log": {}}', "log.entries: expected list, got nothing"),
        ('{"log": {"entries": [{"request": {}}]}}', "log.entries[0].response: expected dict"),
        (
            '{"log": {"entries": [{"request": {"method": "GET"}, "response": {"status": 200},'
            ' "startedDateTime": "2026-01-01T00:00:00Z"}]}}',
            "log.entries[0].request.url: expected str, got nothing",
        ),
        (
            '{"log": {"entries": [{"request": {"method": "GET", "url": "http://h/"},'
            ' "response": {"status": "200"}}]}}',
            "log.entries[0].response.status: expected int, got str '200'",
        ),
        (
            '{"log": {"entries": [{"request": {"method": "GET", "url": "http://h/"},'
            ' "response": {"status": 200}, "startedDateTime": "yesterday"}]}}',
            "log.entries[0].startedDateTime: not an ISO 8601 time",
        ),
        (
            '{"log": {"entries": [{"request": {"method": "GET", "url": "http://h/",'
            ' "headers": {"a": 1}}, "response": {"status": 200}, "_started": 1}]}}',
            "log.entries[0].request.headers: expected a list",
        ),
        (
            '{"log": {"entries": [{"request": {"method": "GET", "url": "http://h/"},'
            ' "response": {"status": 200, "content": {"text": "%%%", "encoding": "base64"}},'
            ' "_started": 1}]}}',
            "log.entries[0].response.content.text: not valid base64",
        ),
    ],
)
def test_a_malformed_file_names_the_entry_and_field(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.har"
    path.write_text(content, "utf-8")
    with pytest.raises(HarError) as caught:
        read_har(path)
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(HarError, match="no such file"):
        read_har(tmp_path / "absent.har")


def test_an_empty_session_is_a_valid_har() -> None:
    assert to_har([])["log"]["entries"] == []


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import proxy.har

    path = tmp_path / "big.har"
    path.write_text(json.dumps({"log": {"entries": []}}) + " " * 2048)
    monkeypatch.setattr(proxy.har, "MAX_HAR_BYTES", 1024)
    with pytest.raises(HarError, match=r"big\.har: \d+ bytes, over the .* split the recording"):
        read_session(path)


def test_too_many_entries_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import proxy.har

    monkeypatch.setattr(proxy.har, "MAX_HAR_ENTRIES", 3)
    path = tmp_path / "many.har"
    path.write_text(json.dumps({"log": {"entries": [{}] * 4}}))
    with pytest.raises(HarError, match="4 entries, over the 3"):
        read_session(path)


def test_json_nested_past_the_parser_is_a_har_error_and_a_body_so_nested_no_crash(
    tmp_path: Path,
) -> None:
    path = tmp_path / "deep.har"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(HarError, match="nested deeper"):
        read_session(path)
    deep = ("[" * 100_000 + "]" * 100_000).encode()
    exchange = Exchange("POST", TARGET, request_body=deep, status=200, response_body=deep)
    assert exchange.request_json() is None and exchange.response_json() is None
