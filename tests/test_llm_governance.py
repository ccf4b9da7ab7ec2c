"""The governance guard: only loopback/private endpoints unless llm.allow_remote=true."""

from __future__ import annotations

import pytest

from earlydx.llm import RemoteEndpointRefused, build_client, check_endpoint
from earlydx.llm.governance import is_local_address

FAKE_DNS = {
    "localhost": ["127.0.0.1", "::1"],
    "gpu-node-07": ["10.1.2.7"],
    "judge.local": ["192.168.1.20"],
    "printer.local": ["8.8.4.4"],
    "api.openai.com": ["104.18.7.192"],
    "mixed.example": ["10.0.0.5", "93.184.216.34"],
    "v6.internal": ["fd12:3456::1"],
}


def fake_resolver(host: str) -> list[str]:
    if host not in FAKE_DNS:
        raise OSError(f"Name or service not known: {host}")
    return FAKE_DNS[host]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8000/v1",
        "http://127.8.9.10/v1",
        "http://[::1]:8000/v1",
        "http://localhost:8000/v1",
        "http://10.0.0.1/v1",
        "http://172.16.0.1/v1",
        "http://172.31.255.254/v1",
        "http://192.168.0.10:80/v1",
        "http://[fd00::1]/v1",
        "http://[fc00::1]/v1",
        "http://[::ffff:10.0.0.1]/v1",
        "http://gpu-node-07:8000/v1",
        "https://judge.local/v1",
        "http://v6.internal/v1",
    ],
)
def test_local_endpoints_pass(url):
    check_endpoint(url, allow_remote=False, resolver=fake_resolver)


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://api.openai.com/v1", "104.18.7.192"),
        ("http://8.8.8.8/v1", "8.8.8.8"),
        ("http://172.32.0.1/v1", "172.32.0.1"),  # just outside 172.16/12
        ("http://11.0.0.1/v1", "11.0.0.1"),
        ("http://[2001:db8::1]/v1", "2001:db8::1"),
        ("http://printer.local/v1", "8.8.4.4"),  # *.local is judged by what it resolves to
        ("http://mixed.example/v1", "93.184.216.34"),  # every address must be local
        ("http://unknown.example/v1", "could not be resolved"),
        ("http:///v1", "no host"),
    ],
)
def test_remote_endpoints_refused(url, why):
    with pytest.raises(RemoteEndpointRefused) as err:
        check_endpoint(url, allow_remote=False, resolver=fake_resolver)
    assert why in str(err.value)
    if "no host" not in why:
        assert "allow_remote=true" in str(err.value) and "PhysioNet" in str(err.value)


def test_allow_remote_opts_out():
    check_endpoint("https://api.openai.com/v1", allow_remote=True, resolver=fake_resolver)


def test_client_refuses_remote_base_url(tmp_path):
    cfg = {
        "backend": "openai",
        "model": "m",
        "base_url": "https://api.openai.com/v1",
        "cache_dir": str(tmp_path),
    }
    with pytest.raises(RemoteEndpointRefused):
        build_client(cfg, resolver=fake_resolver)
    build_client({**cfg, "allow_remote": True}, resolver=fake_resolver).close()


def test_real_resolver_localhost():
    # The system resolver maps localhost to loopback on every machine; no network is touched.
    check_endpoint("http://localhost:8000/v1", allow_remote=False)


@pytest.mark.parametrize(
    ("addr", "local"),
    [
        ("127.0.0.1", True),
        ("10.255.255.255", True),
        ("172.15.255.255", False),
        ("192.169.0.1", False),
        ("169.254.1.1", False),
        ("fe80::1%eth0", False),
        ("::1", True),
        ("fdff::1", True),
    ],
)
def test_is_local_address(addr, local):
    assert is_local_address(addr) is local
