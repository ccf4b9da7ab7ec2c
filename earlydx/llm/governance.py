"""Governance guard: MIMIC-derived text may only go to endpoints on the user's own machines.

PhysioNet's data use agreement forbids sending credentialed data to third-party services, so the
OpenAI-compatible backend refuses any base_url whose host is not loopback or a private address,
unless the config says `llm.allow_remote=true` explicitly. Host names are resolved and every address
they resolve to must be local (a cluster node name resolving to 10.x passes; a public name does not).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

# Loopback and private ranges (RFC 1918, RFC 4193 unique local addresses).
LOCAL_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "127.0.0.0/8",
        "::1/128",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "fc00::/7",
    )
)

Resolver = Callable[[str], list[str]]


class RemoteEndpointRefused(ValueError):
    """The endpoint is not on the user's own machines and `allow_remote` is false."""


def _resolve(host: str) -> list[str]:
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    return sorted({info[4][0] for info in infos})


def is_local_address(address: str) -> bool:
    """True for loopback and private (RFC 1918 / fc00::/7) IP addresses."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in net for net in LOCAL_NETWORKS)


def check_endpoint(base_url: str, allow_remote: bool, resolver: Resolver | None = None) -> None:
    """Refuse a base_url that is not on the user's own machines.

    Args:
        base_url: e.g. "http://127.0.0.1:8000/v1".
        allow_remote: the config's explicit opt-out (`llm.allow_remote=true`).
        resolver: host name → IP addresses (tests inject one; default: the system resolver).

    Raises:
        RemoteEndpointRefused: with the host, what it resolved to and how to opt out.
    """
    if allow_remote:
        return
    host = urlsplit(base_url).hostname
    if not host:
        raise RemoteEndpointRefused(f"llm.base_url {base_url!r} has no host name")
    hint = (
        "MIMIC-derived text may only be sent to endpoints on your own machines (PhysioNet DUA). "
        "If this endpoint is yours and approved, set llm.allow_remote=true."
    )
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = (resolver or _resolve)(host)
        except OSError as exc:
            raise RemoteEndpointRefused(
                f"llm.base_url host {host!r} could not be resolved ({exc}), so it cannot be shown to be "
                f"local. {hint}"
            ) from exc
    if not addresses:
        raise RemoteEndpointRefused(f"llm.base_url host {host!r} resolved to no address. {hint}")
    remote = [a for a in addresses if not is_local_address(a)]
    if remote:
        raise RemoteEndpointRefused(
            f"Refusing llm.base_url {base_url!r}: host {host!r} resolves to non-local address(es) "
            f"{remote}. {hint}"
        )
