"""docs/security.md's table of what a ``view`` token may do, door by door, checked row by row:
the DAP and HTTP rows against a running bridge, the MCP row against the tools it offers. A
request or tool added to the bridge must be placed in the table (the rows cover them all)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from raydap.bridge.mcp import catalog
from raydap.bridge.server.auth import Token
from raydap.protocol import COMMANDS
from tests.conftest import Connect
from tests.e2e.conftest import BridgeProcess
from tests.integration.bridge.server.conftest import BOB
from tests.integration.bridge.server.test_access import get, record_id

ROOT = Path(__file__).resolve().parents[4]
VIEW = Token("bob", "view", BOB)


def table() -> dict[str, tuple[list[str], list[str]]]:
    """Each door's row: (what view may, what view is refused), as the page lists them."""
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("## What each role may do, door by door", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[list[str], list[str]]] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("door", "---"):
            door = cells[0].split(":")[0].split(" (")[0]
            rows[door] = (re.findall(r"`([^`]+)`", cells[1]), re.findall(r"`([^`]+)`", cells[2]))
    return rows


def test_the_dap_row_is_what_view_tokens_are_allowed_and_covers_every_request() -> None:
    may, refused = table()["DAP"]
    assert may and refused
    assert all(VIEW.allows(command) for command in may)
    assert not any(VIEW.allows(command) for command in refused)
    from_clients = {name for name, entry in COMMANDS.items() if entry.from_clients}
    assert set(may) | set(refused) == from_clients


def test_the_mcp_row_is_the_tools_a_view_token_is_offered() -> None:
    may, refused = table()["MCP"]
    assert set(may) == {tool.name for tool in catalog.TOOLS if tool.reads}
    assert set(refused) == {tool.name for tool in catalog.TOOLS if not tool.reads}


def test_the_http_row_holds_on_a_running_bridge(secured: BridgeProcess) -> None:
    may, refused = table()["HTTP API"]
    assert may and refused
    for route in may:
        method, path = route.split(" ", 1)
        assert get(secured, path, BOB, None if method == "GET" else b"{}", method) == 200, route
    for route in refused:
        method, path = route.split(" ", 1)
        assert get(secured, path, BOB, None if method == "GET" else b"{}", method) == 403, route


async def test_the_dap_row_holds_on_a_running_bridge(
    secured: BridgeProcess, dap_connect: Connect
) -> None:
    may, refused = table()["DAP"]
    rid = record_id(secured)
    viewer = await dap_connect(secured.dap_host, secured.dap_port)
    await viewer.attach(breakpoint=rid, token=BOB)
    thread_id = (await viewer.wait_event("stopped")).body["threadId"]
    frames = (await viewer.request("stackTrace", {"threadId": thread_id})).body["stackFrames"]
    known: dict[str, Any] = {"threadId": thread_id, "frameId": frames[0]["id"],
                             "variablesReference": 0, "sourceReference": 0}  # fmt: skip
    for command in may + refused:
        answer = await viewer.request(command, known, check=False, timeout=5)
        looked = "may only look" not in str(answer.message)
        assert looked == (command in may), (command, answer.message)
