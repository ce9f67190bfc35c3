"""``raydap attach``: debug one paused worker from a terminal, through the bridge.

A pdb-like prompt over DAP. Quitting disconnects and leaves the worker paused and held; only
``c`` lets it run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from raydap.bridge.client.dap_client import DapClient, DapRequestFailed

HELP = """commands:
  bt            the stack            up / down     move between frames
  l             locals of the frame  c             continue the worker
  n / s / r     step over / in / out q             quit (the worker stays paused)
  anything else is evaluated in the current frame"""


async def run_terminal(host: str, port: int, record_id: str, token: str | None) -> int:
    client = await DapClient.connect(host, port)
    try:
        arguments: dict[str, Any] = {"breakpoint": record_id}
        if token:
            arguments["token"] = token
        try:
            await client.attach(**arguments)
        except DapRequestFailed as exc:
            print(f"raydap: {exc}")
            return 1
        return await _repl(client)
    finally:
        await client.close()


async def _repl(client: DapClient) -> int:
    print(HELP)
    frame_index = 0
    while True:
        stopped = await client.wait_event("stopped", timeout=24 * 3600)
        body = stopped.body or {}
        thread_id = int(body.get("threadId", 0))
        frames = (await client.request("stackTrace", {"threadId": thread_id})).body["stackFrames"]
        frame_index = 0
        detail = " ".join(str(body.get(key) or "") for key in ("text", "description"))
        print(f"stopped ({body.get('reason')}) {detail}")
        _show(frames[frame_index])
        while True:
            line = (await asyncio.to_thread(input, "(raydap) ")).strip()
            if line in ("q", "quit", "exit"):
                return 0
            if line in ("c", "n", "s", "r"):
                command = {"c": "continue", "n": "next", "s": "stepIn", "r": "stepOut"}[line]
                await client.request(command, {"threadId": thread_id})
                print("running ... (waiting for the next stop; Ctrl-C to quit)")
                break
            if line == "bt":
                for i, frame in enumerate(frames):
                    print(("> " if i == frame_index else "  ") + _where(frame))
            elif line in ("up", "down"):
                frame_index = max(
                    0, min(len(frames) - 1, frame_index + (1 if line == "up" else -1))
                )
                _show(frames[frame_index])
            elif line == "l":
                await _locals(client, frames[frame_index]["id"])
            elif line in ("h", "help", "?"):
                print(HELP)
            elif line:
                response = await client.request(
                    "evaluate",
                    {"expression": line, "frameId": frames[frame_index]["id"], "context": "repl"},
                    check=False,
                )
                print((response.body or {}).get("result") if response.success else response.message)


def _where(frame: dict[str, Any]) -> str:
    path = (frame.get("source") or {}).get("path", "?")
    return f"{frame.get('name')} at {path}:{frame.get('line')}"


def _show(frame: dict[str, Any]) -> None:
    print("> " + _where(frame))


async def _locals(client: DapClient, frame_id: int) -> None:
    scopes = (await client.request("scopes", {"frameId": frame_id})).body["scopes"]
    if not scopes:
        return
    ref = scopes[0]["variablesReference"]
    variables = (await client.request("variables", {"variablesReference": ref})).body["variables"]
    for variable in variables:
        print(f"  {variable['name']} = {variable['value']}")
