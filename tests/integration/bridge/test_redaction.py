"""One redactor for what the bridge stores and what a view token sees, on a real held debugpy
whose frame holds a Hugging Face token and a URL with a password: merged stacks with locals and
the snapshot hide them from everyone; a view token's DAP variables and MCP variables hide them;
a debug token's DAP session shows them as they are (it can run code anyway)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.hangs.stacks import StackOptions
from raydap.bridge.mcp import catalog
from raydap.bridge.mcp.desk import Desk
from raydap.bridge.server.auth import Token
from raydap.bridge.service import Workers
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import record_id
from raydap.live.redact import REDACTED
from tests.integration.bridge import roles

SCRIPT = Path(__file__).parents[1] / "adapter" / "stopping_debuggee.py"
WORKER_ID = "cd" * 28
VIEW, DEBUG = roles.VIEW, roles.DEBUG
SECRETS = ("hunter2", "Ab1Ab1Ab1")


@pytest.fixture
async def served() -> AsyncIterator[tuple[Workers, int]]:
    async with roles.served(WORKER_ID, SCRIPT) as found:
        yield found


async def frame_variables(port: int, token: Token) -> dict[str, str]:
    client = await DapClient.connect("127.0.0.1", port)
    await client.attach(token=token.secret, breakpoint=record_id(WORKER_ID))
    thread = (await client.wait_event("stopped")).body["threadId"]
    frames = (await client.request("stackTrace", {"threadId": thread})).body["stackFrames"]
    [frame] = [f for f in frames if f["name"] == "step"]
    scopes = (await client.request("scopes", {"frameId": frame["id"]})).body["scopes"]
    reference = scopes[0]["variablesReference"]
    listed = (await client.request("variables", {"variablesReference": reference})).body
    await client.close()
    return {v["name"]: v["value"] for v in listed["variables"]}


async def test_a_view_token_sees_secrets_hidden_and_a_debug_token_sees_them(
    served: tuple[Workers, int],
) -> None:
    _, port = served
    viewed = await frame_variables(port, VIEW)
    assert viewed["hf_token"] == REDACTED and viewed["store"] == REDACTED
    assert viewed["value"] != REDACTED  # what is no secret is shown
    debugged = await frame_variables(port, DEBUG)
    assert "Ab1Ab1" in debugged["hf_token"] and "hunter2" in debugged["store"]


async def test_stacks_and_snapshots_hide_secrets_from_everyone(
    served: tuple[Workers, int],
) -> None:
    workers, _ = served
    merged = await workers.stacks(WorkerFilter(), StackOptions(locals=True))
    snapshot = await workers.snapshot()
    for shown in (str(merged), str(snapshot)):
        assert REDACTED in shown
        assert not [secret for secret in SECRETS if secret in shown]


async def test_mcp_variables_hide_secrets_from_a_view_token(served: tuple[Workers, int]) -> None:
    workers, _ = served
    desk = Desk(workers)
    answer = await desk.variables(catalog.Variables(worker=record_id(WORKER_ID), frame=0))
    assert "hunter2" in str(answer)  # a debug token's answer, as it is
    viewed = desk.as_viewer_sees("variables", answer)
    assert "hunter2" not in str(viewed) and REDACTED in str(viewed)
