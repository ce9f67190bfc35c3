"""``raydap mcp``: an MCP server on stdio for coding agents, relayed to the bridge's ``/mcp``.

Agents start MCP servers as commands that speak on stdio; the tools themselves run in the
bridge (``raydap.bridge.mcp``), next to the workers, behind its token. This only carries
messages: the official SDK reads and writes stdio, and each message is POSTed to the bridge,
whose stateless ``/mcp`` answers each one in its response. Requests go concurrently (an
agent may list workers while it waits for a pause), and one the bridge cannot answer (it is
down, it refused the token) gets a JSON-RPC error saying so at once, never silence. So
``ssh head raydap mcp`` serves an agent on a laptop, and what a token may do is decided in
one place.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from raydap.bridge.client.connection import BridgeTarget
from raydap.bridge.mcp.server import CALL_LIMIT_S

#: JSON-RPC's code for an error of the server's own ("server error" range).
BRIDGE_UNREACHABLE = -32000


class Relay:
    def __init__(self, target: BridgeTarget, http: httpx2.AsyncClient) -> None:
        self.url = f"{target.url}/mcp"
        self.http = http
        #: The protocol version the agent and the bridge agreed on, sent with each message.
        self.version: str | None = None

    async def forward(self, message: Any, answer: Any) -> None:
        """POST one message; give the agent the bridge's answer, or an error for a request."""
        headers = {"MCP-Protocol-Version": self.version} if self.version else {}
        body = message.model_dump_json(by_alias=True, exclude_unset=True)
        request_id = getattr(message, "id", None) if hasattr(message, "method") else None
        try:
            response = await self.http.post(self.url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            why = f"the raydap bridge at {self.url} did not answer: {exc or type(exc).__name__}"
            return await self._fail(request_id, why, answer)
        if response.status_code == 202 or not response.content:
            return  # a notification or a response of the agent's: nothing comes back
        try:
            reply = types.jsonrpc_message_adapter.validate_json(response.content, by_name=False)
        except ValueError:
            detail = _error_text(response.content) or response.reason_phrase
            why = f"the raydap bridge refused it: HTTP {response.status_code}: {detail}"
            return await self._fail(request_id, why, answer)
        result = getattr(reply, "result", None)
        if getattr(message, "method", None) == "initialize" and isinstance(result, dict):
            self.version = str(result.get("protocolVersion") or "") or None
        await answer.send(SessionMessage(reply))

    async def _fail(self, request_id: Any, why: str, answer: Any) -> None:
        print(f"raydap mcp: {why}", file=sys.stderr, flush=True)
        if request_id is None:
            return  # nobody waits for an answer
        error = types.ErrorData(code=BRIDGE_UNREACHABLE, message=why)
        reply = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        await answer.send(SessionMessage(reply))


def _error_text(content: bytes) -> str | None:
    try:
        found = json.loads(content)
    except ValueError:
        return None
    return str(found.get("error")) if isinstance(found, dict) and found.get("error") else None


async def relay(target: BridgeTarget) -> None:
    """Serve stdio until the agent closes it."""
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # a line per message otherwise
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if target.token:
        headers["Authorization"] = f"Bearer {target.token}"
    verify: Any = target.ssl_context() or True
    # A call may wait for workers up to the bridge's limit; connecting must not hang as long.
    timeout = httpx2.Timeout(30.0, read=CALL_LIMIT_S + 30)
    async with (
        httpx2.AsyncClient(headers=headers, verify=verify, timeout=timeout) as http,
        stdio_server() as (from_agent, to_agent),
        to_agent,  # closed last: the SDK's stdout writer ends (and so the relay) only then
        anyio.create_task_group() as calls,
    ):
        bridge = Relay(target, http)
        async for item in from_agent:
            if isinstance(item, Exception):  # not JSON-RPC: the SDK said what; so do we
                print(f"raydap mcp: unreadable message: {item}", file=sys.stderr, flush=True)
                continue
            calls.start_soon(bridge.forward, item.message, to_agent)
        calls.cancel_scope.cancel()  # the agent is gone: so is what it was waiting for
