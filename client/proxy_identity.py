"""Signing in to the approval inbox with the identity a trusted reverse proxy vouches
for (an SSO proxy: oauth2-proxy, Pomerium, a corporate gateway), instead of a token.

Never on by default: the operator names the header (`agentctl serve
--proxy-identity-header X-Forwarded-User`) and the addresses of the proxies it is
trusted from (`--trusted-proxy 10.0.0.5 --trusted-proxy 10.1.0.0/16`). The header's
value must be the name of a configured caller (`AGENT_GATEWAY_TOKENS`): its scopes and
agents are the person's. The header only signs a browser in (`POST /inbox/session`
with `{"proxy": true}`), which then holds a session cookie and its CSRF token like any
other: a proxy adds the header to every request, a cross-site form's too, so the header
never authenticates a change by itself. A header that comes from any other address is
ignored and logged (someone tried to name themselves).

`agentctl serve` turns uvicorn's `X-Forwarded-For` handling off when this is
configured: the address checked is the connection's own, which no header can change
(the audit's `from` is then the proxy's address).
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from starlette.requests import Request

log = logging.getLogger("durable_agents.gateway.audit")
MAX_IDENTITY = 200

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class ProxyConfigError(ValueError):
    """The proxy settings cannot be used: the message names the option and value."""


@dataclass(frozen=True)
class ProxyIdentity:
    """Which header names the person, and the proxies it is believed from."""

    header: str
    networks: tuple[Network, ...]

    @classmethod
    def parse(cls, header: str, trusted: Sequence[str]) -> ProxyIdentity:
        """From the options; `ProxyConfigError` for a bad header name or address."""
        name = header.strip().lower()
        if not name or not all(c.isalnum() or c == "-" for c in name) or not name.isascii():
            raise ProxyConfigError(f"--proxy-identity-header: {header!r} is not a header name")
        if name in {"authorization", "cookie", "host", "x-csrf-token"}:
            raise ProxyConfigError(f"--proxy-identity-header: {header!r} carries something else")
        if not trusted:
            raise ProxyConfigError(
                "--proxy-identity-header needs --trusted-proxy ADDRESS (the proxy's address "
                "or range): a header is believed only from there"
            )
        networks = []
        for given in trusted:
            try:
                network = ipaddress.ip_network(given.strip(), strict=False)
            except ValueError:
                raise ProxyConfigError(
                    f"--trusted-proxy: {given!r} is not an address or CIDR range"
                ) from None
            if network.prefixlen == 0:
                raise ProxyConfigError(
                    f"--trusted-proxy: {given!r} trusts every address: anyone who reaches "
                    "the port would name themselves"
                )
            if network.network_address != ipaddress.ip_interface(given.strip()).ip:
                raise ProxyConfigError(
                    f"--trusted-proxy: {given!r} has host bits set (did you mean {network}?)"
                )
            networks.append(network)
        return cls(header=name, networks=tuple(networks))

    def identity(self, request: Request) -> str | None:
        """The name the header gives, when the request comes from a trusted proxy; None
        without the header, and None (logged) when it comes from anywhere else."""
        values = request.headers.getlist(self.header)
        if not values:
            return None
        peer = request.client.host if request.client else None
        if not self._trusted(peer):
            log.warning(
                '{"event": "proxy_identity_ignored", "from": "%s", "header": "%s"}',
                str(peer)[:60],
                self.header,
            )
            return None
        if len(values) > 1:  # a client's own header passed on next to the proxy's
            log.warning(
                '{"event": "proxy_identity_repeated", "from": "%s", "header": "%s"}',
                str(peer)[:60],
                self.header,
            )
            return None
        name = values[0].strip()
        if not name or len(name) > MAX_IDENTITY or not name.isprintable():
            return None
        return name

    def scheme(self, request: Request) -> str:
        """The scheme the browser used: a trusted proxy's `X-Forwarded-Proto` (one value,
        `http` or `https`: the proxy that ends TLS says so), else the connection's own.
        uvicorn's own forwarded-header handling is off here (see the module docstring)."""
        values = request.headers.getlist("x-forwarded-proto")
        said = values[0].strip().lower() if len(values) == 1 else None
        peer = request.client.host if request.client else None
        if said in {"http", "https"} and self._trusted(peer):
            return said
        return request.url.scheme

    def _trusted(self, peer: str | None) -> bool:
        if peer is None:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped  # an IPv4 proxy, seen by a socket on `::`
        return any(address in network for network in self.networks)
