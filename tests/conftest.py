"""Fixtures shared by every test layer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from raydap.bridge.client.dap_client import DapClient
from tests.dap_schema import schema_errors

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
            client = await DapClient.connect_websocket(where, observe)
        else:
            client = await DapClient.connect(where, port, observe)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        await client.close()
    assert not invalid, f"the bridge sent messages that break the DAP schema: {invalid}"
