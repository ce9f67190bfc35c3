"""Defences against the developer's own browser: any web page it shows can send requests to
loopback, so a valid token is not enough.

- ``Host`` must be one of the bridge's names (loopback names, the address it is bound to, and
  any configured): a DNS-rebound name gets nothing, so a page cannot read the answers.
- ``Origin``, when a browser sends one, must be the bridge's own origin (or configured, for a
  reverse proxy): other pages cannot make the browser act with its cookie. ``Origin: null``
  is refused.
- ``POST`` bodies must be ``application/json``: a form or ``text/plain`` body is what a page can
  send without a CORS preflight. No CORS headers are ever sent.
- Every answer says how a browser may use it (:data:`SECURITY_HEADERS`): the page's scripts and
  styles come only from the bridge (no inline script, no ``eval``), no page may frame it, no
  answer is sniffed into another type, and no address of it leaks as a referrer. Job-controlled
  text is set as text by the page, never as markup; the policy is the second wall.

Clients without an ``Origin`` (the CLI, editors) are unaffected.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable

import psutil
from aiohttp import web

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})

#: Sent with every answer, the page's and the API's, errors included.
SECURITY_HEADERS = {
    "Content-Security-Policy": "; ".join([
        "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
        "connect-src 'self'", "form-action 'self'", "base-uri 'none'", "frame-ancestors 'none'",
    ]),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",  # what browsers without frame-ancestors read
}  # fmt: skip


async def add_security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """An ``on_response_prepare`` signal: every response, static files and errors too."""
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def host_name(host: str) -> str:
    """The name in a ``Host`` header, without its port, lowercased (``[::1]:7800`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    name, sep, port = host.rpartition(":")
    return name if sep and port.isdigit() and ":" not in name else host


def _is_loopback(name: str) -> bool:
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return name in LOOPBACK_NAMES


def local_names() -> set[str]:
    """This machine's names and addresses: what a bridge bound to every address answers to."""
    names = {socket.gethostname().lower(), socket.getfqdn().lower()}
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family in (socket.AF_INET, socket.AF_INET6):
                names.add(address.address.split("%", 1)[0].lower())
    return names


class BrowserGuard:
    def __init__(
        self, bound_host: str, allowed_hosts: list[str], allowed_origins: list[str]
    ) -> None:
        self.names = {host_name(h) for h in allowed_hosts}
        bound = host_name(bound_host)
        if bound in ("0.0.0.0", "::", ""):
            self.names |= local_names()
        else:
            self.names.add(bound)
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}

    def host_allowed(self, host: str | None) -> bool:
        name = host_name(host or "")
        return bool(name) and (_is_loopback(name) or name in self.names)

    def origin_allowed(self, origin: str, scheme: str, host: str) -> bool:
        origin = origin.strip().rstrip("/").lower()
        return origin == f"{scheme}://{host}".lower() or origin in self.origins


GUARD = web.AppKey("browser_guard", BrowserGuard)


def _refuse(status: type[web.HTTPException], text: str) -> web.HTTPException:
    return status(text=json.dumps({"error": text}), content_type="application/json")


@web.middleware
async def guard_browsers(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Runs before authentication, on every request and WebSocket upgrade."""
    guard = request.app[GUARD]
    host = request.headers.get("Host")
    if not guard.host_allowed(host):
        raise _refuse(
            web.HTTPForbidden,
            f"Host {host!r} is not a name of this bridge (a DNS-rebinding page, or a proxy: "
            "add its name with --allowed-hosts)",
        )
    origin = request.headers.get("Origin")
    if origin is not None and not guard.origin_allowed(origin, request.scheme, host or ""):
        raise _refuse(
            web.HTTPForbidden,
            f"requests from the web page at {origin!r} are refused (only the bridge's own page, "
            "or an origin given with --allowed-origins)",
        )
    if request.method == "POST" and request.content_type != "application/json":
        raise _refuse(
            web.HTTPUnsupportedMediaType,
            "POST bodies must be JSON (Content-Type: application/json)",
        )
    return await handler(request)
