"""``raydap mcp``: an MCP server on stdio for coding agents, relayed to the bridge's ``/mcp``.

Agents start MCP servers as commands that speak on stdio; the tools themselves run in the
bridge (``raydap.bridge.mcp``), next to the workers, behind its token. This only carries
messages both ways with the official SDK's two transports, so ``ssh head raydap mcp`` serves
an agent on a laptop, and what a token may do is decided in one place.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from raydap.bridge.client.connection import BridgeTarget
from raydap.bridge.mcp.server import CALL_LIMIT_S


async def _carry(source: Any, sink: Any, side: str) -> None:
    """Every message from ``source`` to ``sink``; what cannot be read is said on stderr."""
    async with sink:
        async for item in source:
            if isinstance(item, SessionMessage):
                await sink.send(item)
            else:
                print(f"raydap mcp: {side}: {item}", file=sys.stderr, flush=True)


async def relay(target: BridgeTarget) -> None:
    """Serve stdio until the agent closes it."""
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # a line per message otherwise
    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    verify: Any = target.ssl_context() or True
    # A call may wait for workers up to the bridge's limit; connecting must not hang as long.
    timeout = httpx2.Timeout(30.0, read=CALL_LIMIT_S + 30)
    async with (
        httpx2.AsyncClient(headers=headers, verify=verify, timeout=timeout) as http,
        stdio_server() as (from_agent, to_agent),
        streamable_http_client(f"{target.url}/mcp", http_client=http) as streams,
    ):
        from_bridge, to_bridge = streams[0], streams[1]
        async with anyio.create_task_group() as tasks:

            async def agent_side() -> None:
                await _carry(from_agent, to_bridge, "from the agent")
                tasks.cancel_scope.cancel()  # the agent is gone: so is the relay

            tasks.start_soon(agent_side)
            tasks.start_soon(_carry, from_bridge, to_agent, "from the bridge")
