"""Every request a client can send, as each role, against a held real debugpy.

The requests are read from the DAP schema the package ships (equal to ``../shared/dap``), so a
command added to the protocol joins this test by itself. Each is sent in its phase's order, with
arguments the schema accepts (the worker's real thread, frame and variables ids where it names
them), and must be answered within 2 s. A request debugpy never answers would freeze the worker's
connection for every session: after the run, a debug token's ``evaluate`` and ``continue`` still
work.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from raydap.adapter import (
    SingleWorker,
    Upstream,
    Worker,
    WorkerFeed,
    bridge_capabilities,
    open_tcp_channel,
)
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.server.auth import Authenticator, Token
from raydap.bridge.server.dap_listener import DapListener
from raydap.protocol import Response, schema
from tests.dap_schema import SHARED
from tests.integration.conftest import start_debuggee

SCRIPT = Path(__file__).with_name("stopping_debuggee.py")
TOKENS = {"debug": Token("dev", "debug", "d" * 32), "view": Token("viewer", "view", "v" * 32)}
#: Sent by an adapter to its client, never by a client.
REVERSE = {"runInTerminal", "startDebugging"}
#: Where each request stands in a session's life; the rest are asked while attached.
HANDSHAKE = ["initialize", "launch", "attach"]
CONFIGURATION = [
    "setBreakpoints", "setFunctionBreakpoints", "setExceptionBreakpoints", "setDataBreakpoints",
    "setInstructionBreakpoints", "configurationDone",
]  # fmt: skip
#: Asked last: these may move the worker (it stops again at once) or end the session.
MOVING = ["pause", "continue", "next", "stepIn", "stepOut", "stepBack", "reverseContinue",
          "goto", "restartFrame", "restart", "terminateThreads", "terminate"]  # fmt: skip
ANSWER_WITHIN = 2.0


def client_requests() -> list[str]:
    """Every request of the packaged schema that a client sends."""
    names = []
    for name, definition in schema.definitions().items():
        if not name.endswith("Request") or name == "Request":
            continue
        for part in definition.get("allOf", []):
            names += part.get("properties", {}).get("command", {}).get("enum", [])
    return [name for name in names if name not in REVERSE]


def in_phase_order(names: list[str]) -> list[str]:
    def place(name: str) -> tuple[int, int]:
        for rank, group in enumerate((HANDSHAKE, CONFIGURATION, [], MOVING, ["disconnect"])):
            if name in group:
                return rank, group.index(name)
        return 2, 0  # looks at the stopped worker

    return sorted(names, key=place)


def example(schema_part: dict[str, Any], known: dict[str, Any], name: str = "") -> Any:
    """A value the schema accepts: the worker's real ids where the property names one."""
    definitions = schema.definitions()
    if name in known:
        return known[name]
    if "$ref" in schema_part:
        return example(definitions[schema_part["$ref"].rsplit("/", 1)[-1]], known, name)
    if "allOf" in schema_part:
        merged: dict[str, Any] = {}
        for part in schema_part["allOf"]:
            merged.update(example(part, known, name))
        return merged
    if "enum" in schema_part:
        return schema_part["enum"][0]
    kind = schema_part.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        properties = schema_part.get("properties", {})
        required = schema_part.get("required", [])
        return {key: example(properties[key], known, key) for key in required}
    return {"array": [], "string": "x", "integer": 0, "number": 0, "boolean": False}.get(kind)


def arguments_for(command: str, known: dict[str, Any]) -> Any:
    definition = schema.definitions()[command[:1].upper() + command[1:] + "Request"]
    for part in definition.get("allOf", []):
        argument = part.get("properties", {}).get("arguments")
        if argument is not None:
            return example(argument, known)
    return None


@pytest.fixture
async def held() -> AsyncIterator[tuple[int, subprocess.Popen[str]]]:
    """The debuggee held by a real Upstream, behind a listener that knows both roles' tokens."""
    debuggee = start_debuggee(script=SCRIPT)
    process, port = debuggee.process, debuggee.port
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="w1", request_timeout=5)
    await upstream.handshake()
    auth = Authenticator(list(TOKENS.values()))

    async def resolve(arguments: dict[str, Any], grant: object) -> WorkerFeed:
        return SingleWorker(Worker("w1", upstream))

    def authorize(arguments: dict[str, Any]) -> Token:
        found = auth.check(arguments.get("token"))
        assert found is not None
        return found

    listener = DapListener(
        resolve, lambda: bridge_capabilities(upstream.capabilities), authorize=authorize
    )
    _, dap_port = await listener.start("127.0.0.1", 0)
    yield dap_port, process
    await listener.close()
    await upstream.detach()
    debuggee.stop()


async def ask(client: DapClient, command: str, arguments: Any) -> Response:
    try:
        return await client.request(command, arguments, timeout=ANSWER_WITHIN, check=False)
    except asyncio.TimeoutError:
        pytest.fail(f"{command!r} was not answered within {ANSWER_WITHIN:g} s")


async def stops_again(client: DapClient, seen: int) -> None:
    """Until a ``stopped`` event comes after the first ``seen`` events."""
    while not any(e.event == "stopped" for e in client.events[seen:]):
        await client.wait_more(len(client.events), timeout=5)


async def stopped_ids(client: DapClient) -> dict[str, Any]:
    """The ids of the worker's current stop, as this session sees them."""
    threads = (await client.request("threads")).body["threads"]
    thread = threads[0]["id"]
    frames = (await client.request("stackTrace", {"threadId": thread})).body["stackFrames"]
    scopes = (await client.request("scopes", {"frameId": frames[0]["id"]})).body["scopes"]
    return {"threadId": thread, "frameId": frames[0]["id"],
            "variablesReference": scopes[0]["variablesReference"], "expression": "i",
            "source": {"path": str(SCRIPT)}, "sourceReference": 0, "name": "i", "value": "0",
            "text": "i", "column": 1, "line": 13}  # fmt: skip


def test_the_package_ships_the_official_schema() -> None:
    if not SHARED.exists():
        pytest.skip("no ../shared/dap beside this checkout")
    assert schema.SCHEMA.read_bytes() == SHARED.read_bytes()


@pytest.mark.parametrize("role", ["view", "debug"])
async def test_every_request_is_answered_and_the_worker_still_debugs(
    role: str, held: tuple[int, subprocess.Popen[str]]
) -> None:
    port, process = held
    client = await DapClient.connect("127.0.0.1", port)
    known: dict[str, Any] = {"token": TOKENS[role].secret, "breakpoint": "w1"}
    requests = in_phase_order(client_requests())
    assert {"loadedSources", "breakpointLocations", "readMemory", "cancel"} <= set(requests)
    answered: dict[str, Response] = {}
    for command in requests:
        if command == "configurationDone":
            answered[command] = await ask(client, command, None)
            await client.wait_event("stopped", timeout=5)
            known.update(await stopped_ids(client))
            continue
        if command == "disconnect":
            break  # the session must still work: checked below, then it disconnects
        arguments = arguments_for(command, known)
        if command == "attach":
            arguments = {**arguments, "token": known["token"], "breakpoint": "w1"}
        seen = len(client.events)
        answered[command] = await ask(client, command, arguments)
        if command in MOVING and answered[command].success:
            await stops_again(client, seen)  # the loop stops again at once
            known.update(await stopped_ids(client))
    assert answered["threads"].success and answered["stackTrace"].success
    assert not answered["loadedSources"].success
    assert "debugpy does not support" in str(answered["loadedSources"].message)
    assert not answered["launch"].success and not answered["terminate"].success
    if role == "view":
        assert not answered["evaluate"].success and not answered["continue"].success
    await client.close()

    debugger = await DapClient.connect("127.0.0.1", port)
    await debugger.attach(breakpoint="w1", token=TOKENS["debug"].secret)
    await debugger.wait_event("stopped", timeout=5)
    ids = await stopped_ids(debugger)
    value = await ask(debugger, "evaluate", {"expression": "i + 1000", "frameId": ids["frameId"]})
    assert value.success, value.message
    assert int(value.body["result"]) >= 1000
    seen = len(debugger.events)
    continued = await ask(debugger, "continue", {"threadId": ids["threadId"]})
    assert continued.success, continued.message
    await stops_again(debugger, seen)
    after = await stopped_ids(debugger)
    again = await ask(debugger, "evaluate", {"expression": "i + 1000", "frameId": after["frameId"]})
    assert again.success, again.message  # stopped anew (a goto may have moved it back)
    assert any(e.event == "continued" for e in debugger.events[seen:])
    await debugger.close()
    assert process.poll() is None
