"""One TLS setting for every command: resolved in one order, read by every client stack the same
way, and every certificate problem one line naming the host, the cause and the option."""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
import requests
import yaml
from tlsfront import MODES, Mode, TLSFront

from paysuite_core import http_clients
from paysuite_core.launcher import RunningStub, start_stub, stop_stub
from paysuite_core.target_config import TargetConfigError, load_target_config
from paysuite_core.tls import TLSSettings, TLSSettingsError, explain


@pytest.fixture(scope="module")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStub]:
    running = start_stub(tmp_path_factory.mktemp("tls-stub"), startup_timeout_s=60)
    yield running
    stop_stub(running)


@pytest.fixture
def front_of(stub: RunningStub, tmp_path: Path) -> Iterator[object]:
    fronts: list[TLSFront] = []

    def make(mode: Mode) -> TLSFront:
        front = TLSFront(_port(stub), mode, tmp_path / mode).__enter__()
        fronts.append(front)
        return front

    yield make
    for front in fronts:
        front.__exit__(None, None, None)


def _port(stub: RunningStub) -> int:
    port = urlsplit(stub.root_url).port
    assert port is not None
    return port


def _with_ca(front: TLSFront, *, client: bool = True) -> TLSSettings:
    return TLSSettings.resolve(
        ca_bundle=str(front.ca_pem),
        client_cert=str(front.client_cert) if client and front.client_cert else None,
        client_key=str(front.client_key) if client and front.client_key else None,
        environ={},
    )


def _httpx_line(tls: TLSSettings, url: str) -> str:
    with http_clients.httpx_client(tls) as client:
        try:
            return str(client.get(url).status_code)
        except httpx.HTTPError as exc:
            return explain(exc, url) or repr(exc)


def _requests_line(tls: TLSSettings, url: str) -> str:
    with http_clients.requests_session(tls) as session:
        try:
            return str(session.get(url, timeout=10).status_code)
        except requests.RequestException as exc:
            return explain(exc, url) or repr(exc)


# --- resolution ----------------------------------------------------------------------------


def test_the_command_line_wins_then_the_configuration_then_the_environment(
    tmp_path: Path,
) -> None:
    flag, section, env_file, env_other = (tmp_path / n for n in ("f", "c", "e", "r"))
    for path in (flag, section, env_file, env_other):
        path.write_text(Path(__import__("certifi").where()).read_text())
    env = {"SSL_CERT_FILE": str(env_file), "REQUESTS_CA_BUNDLE": str(env_other)}
    config = {"ca_bundle": str(section)}
    assert TLSSettings.resolve(ca_bundle=str(flag), config=config, environ=env).ca_bundle == str(
        flag
    )
    assert TLSSettings.resolve(config=config, environ=env).ca_bundle == str(section)
    assert TLSSettings.resolve(environ=env).ca_bundle == str(env_file)
    only_requests = {"REQUESTS_CA_BUNDLE": str(env_other)}
    assert TLSSettings.resolve(environ=only_requests).ca_bundle == str(env_other)
    assert TLSSettings.resolve(environ={}).ca_bundle is None


def test_every_stack_reads_the_same_bundle(tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text(Path(__import__("certifi").where()).read_text())
    tls = TLSSettings.resolve(ca_bundle=str(bundle), environ={})
    assert tls.requests_verify() == str(bundle)
    assert tls.node_environment() == {"PAYSUITE_CA_BUNDLE": str(bundle)}
    assert tls.ssl_context().verify_mode == ssl.CERT_REQUIRED
    insecure = TLSSettings.resolve(insecure=True, environ={})
    assert insecure.requests_verify() is False
    assert insecure.ssl_context().verify_mode == ssl.CERT_NONE
    assert "INSECURE" in insecure.describe() and "INSECURE" not in tls.describe()


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ({"ca_bundle": "/nonexistent/ca.pem"}, "--ca-bundle: no such file: /nonexistent/ca.pem"),
        ({"client_cert": "/nonexistent/c.pem"}, "--client-cert: no such file"),
        ({"client_key": "/nonexistent/k.pem"}, "--client-key needs --client-cert"),
    ],
)
def test_an_unusable_file_is_one_line(given: dict[str, str], words: str) -> None:
    with pytest.raises(TLSSettingsError) as caught:
        TLSSettings.resolve(**given, environ={})
    assert words in str(caught.value) and "\n" not in str(caught.value)


def test_a_file_that_is_not_pem_is_one_line(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    with pytest.raises(TLSSettingsError, match="cannot be loaded"):
        TLSSettings.resolve(ca_bundle=str(junk), environ={})


def test_the_configuration_section_is_relative_to_its_file(tmp_path: Path) -> None:
    (tmp_path / "certs").mkdir()
    (tmp_path / "certs" / "ca.pem").write_text("x")
    config = {
        "base_url": "https://127.0.0.1:9/api",
        "applications": [{"client_id": "a", "client_secret": "s"}],
        "tls": {"ca_bundle": "certs/ca.pem", "insecure": False},
    }
    path = tmp_path / "target.yaml"
    path.write_text(yaml.safe_dump(config))
    loaded = load_target_config(path)
    assert loaded.tls is not None and loaded.tls.ca_bundle == str(tmp_path / "certs" / "ca.pem")
    assert loaded.to_dict()["tls"] == {"ca_bundle": str(tmp_path / "certs" / "ca.pem")}
    config["tls"] = {"ca_bundle": "certs/missing.pem"}
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(TargetConfigError, match=r"tls\.ca_bundle: no such file"):
        load_target_config(path)
    config["tls"] = {"verify": False}
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(TargetConfigError, match="verify"):
        load_target_config(path)


# --- against a front: the diagnosis of each failure, the fix of each -------------------------


@pytest.mark.parametrize("line", [_httpx_line, _requests_line], ids=["httpx", "requests"])
@pytest.mark.parametrize("mode", MODES)
def test_each_failure_is_named_and_the_named_option_fixes_it(
    front_of: object, mode: Mode, line: object
) -> None:
    front = front_of(mode)  # type: ignore[operator]
    url = front.base_url + "/events/transactions"
    host = f"127.0.0.1:{front.port}"
    unconfigured = line(TLSSettings.resolve(environ={}), url)  # type: ignore[operator]
    assert unconfigured.startswith(f"TLS: {host}: ")
    assert "--ca-bundle" in unconfigured and "not trusted" in unconfigured
    with_ca = line(_with_ca(front), url)  # type: ignore[operator]
    if mode in ("private-ca", "mtls"):
        assert with_ca == "401"  # the stub itself answered: no token
        if mode == "mtls":
            without_cert = line(_with_ca(front, client=False), url)  # type: ignore[operator]
            # the alert itself, or (when the request crossed it) the close that follows it
            assert "client certificate" in without_cert
            assert "--client-cert" in without_cert
    elif mode == "wrong-host":
        assert "not for this" in with_ca and "--insecure" in with_ca
        assert line(TLSSettings.resolve(insecure=True, environ={}), url) == "401"  # type: ignore[operator]
    else:
        assert "has expired" in with_ca


def test_a_plain_http_port_spoken_to_in_tls_is_named(stub: RunningStub) -> None:
    url = f"https://127.0.0.1:{_port(stub)}/api/events/transactions"
    said = _httpx_line(TLSSettings.resolve(environ={}), url)
    assert "does not answer TLS on this port" in said
