"""``/mcp`` on a real `raydap serve`, driven by the official MCP SDK's streamable HTTP client:
the bridge's token, Origin and Host checks hold there too, a view token is offered and allowed
only the reading tools, and every call is audited under its token's name.

The worker is a real debugpy process (bench/debuggee.py) listed by a fake dashboard: who may
do what is the bridge's own business, so no Ray is needed here (tests/e2e/test_mcp.py has it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.conftest import BridgeProcess, start_bridge, stop_bridge
from tests.integration.bridge.server.conftest import ALICE, BOB


@asynccontextmanager
async def mcp_session(bridge: BridgeProcess, token: str) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(f"{bridge.url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> tuple[bool, Any]:
    result = await session.call_tool(tool, arguments)
    return bool(result.is_error), json.loads(result.content[0].text)  # type: ignore[union-attr]


async def paused_worker(session: ClientSession) -> str:
    for _ in range(100):
        _, listed = await call(session, "wait_for_pause", timeout_s=10)
        if listed["paused"]:
            return str(listed["paused"][0]["id"])
    raise AssertionError("the debuggee was never held")


def post(bridge: BridgeProcess, headers: dict[str, str], body: bytes = b"{}") -> tuple[int, str]:
    request = urllib.request.Request(bridge.url + "/mcp", data=body, method="POST")
    for name, value in {"Content-Type": "application/json", **headers}.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status), answer.read().decode()
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode()


async def test_a_view_token_is_offered_and_allowed_only_the_reading_tools(
    secured: BridgeProcess,
) -> None:
    async with mcp_session(secured, BOB) as viewer:
        offered = {tool.name for tool in (await viewer.list_tools()).tools}
        assert offered == {
            "list_workers",
            "stacks",
            "hangs",
            "source",
            "variables",
            "wait_for_pause",
            "list_captures",
            "read_capture",
        }
        worker = await paused_worker(viewer)
        error, seen = await call(viewer, "variables", worker=worker)
        payload = {v["name"]: v for v in seen["variables"]}["payload"]
        assert not error and "'rank': 3" in payload["value"] and payload["type"] == "dict"
        error, refused = await call(viewer, "evaluate", expression="payload['rank']")
        assert error and "'bob' may only look" in refused["error"]
        error, refused = await call(viewer, "continue_workers")
        assert error and "needs a debug token" in refused["error"]

    async with mcp_session(secured, ALICE) as debugger:
        assert len((await debugger.list_tools()).tools) == 16
        error, evaluated = await call(debugger, "evaluate", expression="payload['rank']")
        assert not error and [r["result"] for r in evaluated["results"]] == ["3"]

    audit = secured.log.with_name("audit.jsonl").read_text()
    entries = [json.loads(line) for line in audit.splitlines()]
    mcp = [(e["action"], e["token"], e["tool"]) for e in entries if e["action"].startswith("mcp")]
    assert ("mcp-refused", "bob", "evaluate") in mcp and ("mcp", "bob", "variables") in mcp
    assert ("mcp", "alice", "evaluate") in mcp
    assert not [e for e in mcp if e[1] == "bob" and e[0] == "mcp" and e[2] == "evaluate"]

    metrics = urllib.request.Request(secured.url + "/metrics")
    metrics.add_header("Authorization", f"Bearer {BOB}")
    with urllib.request.urlopen(metrics, timeout=10) as answer:
        exposition = "\n".join(
            line for line in answer.read().decode().splitlines() if "mcp_call_seconds_count" in line
        )
    assert 'raydap_mcp_call_seconds_count{outcome="refused",tool="evaluate"} 1.0' in exposition, (
        exposition
    )
    assert 'raydap_mcp_call_seconds_count{outcome="ok",tool="evaluate"} 1.0' in exposition


@pytest.mark.parametrize(
    ("headers", "status", "says"),
    [
        ({}, 401, "needs a token"),
        ({"Authorization": "Bearer not-a-token-at-all-xxxx"}, 401, "needs a token"),
        ({"Authorization": f"Bearer {ALICE}", "Origin": "https://evil.example"}, 403, "evil"),
        ({"Authorization": f"Bearer {ALICE}", "Host": "rebound.example:80"}, 403, "rebound"),
        ({"Authorization": f"Bearer {ALICE}", "Content-Type": "text/plain"}, 415, "JSON"),
    ],
)
def test_mcp_is_refused_without_a_token_or_from_a_foreign_page(
    secured: BridgeProcess, headers: dict[str, str], status: int, says: str
) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    accept = {"Accept": "application/json, text/event-stream"}
    answered, text = post(secured, {**accept, **headers}, body)
    assert (answered, says in text) == (status, True), text


def test_bad_mcp_input_gets_an_error_and_harms_nothing(secured: BridgeProcess) -> None:
    accept = {"Accept": "application/json, text/event-stream", "Authorization": f"Bearer {BOB}"}
    status, text = post(secured, accept, b"{not json")
    assert status == 400 and "Parse error" in text
    status, text = post(secured, accept, b"x" * (300 * 1024))
    assert status == 413
    as_bob = {"Authorization": accept["Authorization"]}
    request = urllib.request.Request(secured.url + "/mcp", headers=as_bob)
    with pytest.raises(urllib.error.HTTPError) as got:
        urllib.request.urlopen(request, timeout=10)  # GET: no stream to open on a stateless server
    assert got.value.code == 405
    listing = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}).encode()
    status, text = post(secured, accept, listing)
    assert status == 200 and json.loads(text)["id"] == 7  # the bridge serves on


async def test_raydap_mcp_tells_the_agent_at_once_when_the_bridge_is_gone(
    empty_dashboard: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAYDAP_TOKEN"}
    bridge = start_bridge(["--dashboard-url", empty_dashboard], tmp_path / "bridge.log", env)
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "raydap.bridge", "mcp"],
        env=dict(env, RAYDAP_URL=bridge.url, RAYDAP_TOKEN=bridge.token or ""),
    )  # fmt: skip
    try:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as agent:
            await agent.initialize()
            assert not (await agent.call_tool("list_workers", {})).is_error
            stop_bridge(bridge)
            started = time.monotonic()
            with pytest.raises(MCPError, match="did not answer"):
                await agent.call_tool("list_workers", {})
            assert time.monotonic() - started < 5
    finally:
        if bridge.process.poll() is None:
            stop_bridge(bridge)
    alone = subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "mcp"], capture_output=True, text=True,
        timeout=60, env=dict(env, RAYDAP_URL=bridge.url), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert alone.returncode == 1 and f"no raydap bridge at {bridge.url}" in alone.stderr
    assert alone.stdout == ""  # nothing an agent would take for a message


def test_raydap_mcp_ends_when_its_agent_closes_stdin(secured: BridgeProcess) -> None:
    """An agent that exits without killing its server (the Inspector's CLI does) leaves no
    `raydap mcp` running."""
    env = dict(os.environ, RAYDAP_URL=secured.url, RAYDAP_TOKEN=BOB)
    relay = subprocess.Popen(
        [sys.executable, "-m", "raydap.bridge", "mcp"], env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert relay.stdin is not None and relay.stdout is not None
        listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        relay.stdin.write(json.dumps(listing) + "\n")
        relay.stdin.flush()
        assert json.loads(relay.stdout.readline())["id"] == 1
        relay.stdin.close()
        assert relay.wait(timeout=15) == 0
    finally:
        if relay.poll() is None:
            relay.kill()
            relay.wait()
