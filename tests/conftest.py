"""Fixtures shared by every test layer."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.server import connection_file
from tests.dap_schema import schema_errors


def pytest_configure(config: pytest.Config) -> None:
    """Every bridge the tests start (in-process or as ``raydap serve``) writes its connection
    file here, not into the user's runtime directory; the tests' clients find tokens there.
    Their hang reports and captures go to directories of the session's too, not the user's state."""
    os.environ["RAYDAP_RUNTIME_DIR"] = tempfile.mkdtemp(prefix="raydap-test-runtime-")
    os.environ["RAYDAP_HANG_REPORTS"] = tempfile.mkdtemp(prefix="raydap-test-hangs-")
    os.environ["RAYDAP_CAPTURES"] = tempfile.mkdtemp(prefix="raydap-test-captures-")
    # Ray turns token auth on for every head it starts once ~/.ray/auth_token exists (any
    # ray.init() that starts a cluster of its own leaves one): the tests' heads run without it
    # unless a test asks for it (tests/e2e/test_ray_auth.py).
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ.pop("RAYDAP_RUNTIME_DIR", ""), ignore_errors=True)
    shutil.rmtree(os.environ.pop("RAYDAP_HANG_REPORTS", ""), ignore_errors=True)
    shutil.rmtree(os.environ.pop("RAYDAP_CAPTURES", ""), ignore_errors=True)


def runtime_dir() -> Path:
    return Path(os.environ["RAYDAP_RUNTIME_DIR"])


def token_for(where: str | int) -> str | None:
    """The token of the running test bridge serving DAP port ``where`` (or WebSocket URL)."""
    for found in connection_file.live_connections(runtime_dir()):
        host_port = found.url.split("://", 1)[1]
        if found.dap_port == where or (isinstance(where, str) and f"//{host_port}/" in where):
            return found.token
    return None


#: ``connect(host, port)`` for the TCP listener, ``connect("ws://.../dap?...")`` for WebSocket.
Connect = Callable[..., Awaitable[DapClient]]


@pytest.fixture
async def dap_connect() -> AsyncIterator[Connect]:
    """Connect DAP clients to a bridge; every message the bridge sends them is checked
    against the official DAP schema, and the test fails if any is invalid."""
    clients: list[DapClient] = []
    invalid: list[tuple[dict[str, object], list[str]]] = []

    def observe(message: object) -> None:
        wire = message.to_dict()  # type: ignore[attr-defined]
        errors = schema_errors(wire)
        if errors:
            invalid.append((wire, errors))

    async def connect(where: str, port: int | None = None) -> DapClient:
        if port is None:
            client = await DapClient.connect_websocket(where, observe, token_for(where))
        else:
            client = await DapClient.connect(where, port, observe, token=token_for(port))
        clients.append(client)
        return client

    yield connect
    for client in clients:
        await client.close()
    assert not invalid, f"the bridge sent messages that break the DAP schema: {invalid}"
