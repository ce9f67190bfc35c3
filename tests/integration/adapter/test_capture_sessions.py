"""A capture served as a read-only stop to a real DAP client over a real socket: it starts
stopped, shows the captured stack, variables and source, reads paths over captured values for
a view token too, and refuses to continue, step or run anything."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from raydap.adapter import AttachError, bridge_capabilities
from raydap.adapter.captures.mux import CaptureFeed
from raydap.bridge.client.dap_client import DapRequestFailed
from raydap.bridge.server.auth import Token
from raydap.bridge.server.dap_listener import DapListener
from raydap.live.capture_values import Bounds, read_frames
from tests.conftest import Connect

CAPTURE = "cap-0123456789ab"


def captured_frames() -> list[dict[str, Any]]:
    def step() -> Any:
        cfg = {"lr": 0.1, "api_key": "hidden"}  # noqa: F841 (captured)
        losses = [0.5, 0.25]  # noqa: F841 (captured)
        return sys._getframe()

    frames, _ = read_frames(step(), Bounds())
    return frames


@pytest.fixture(params=["debug", "view"])
async def capture_port(request: pytest.FixtureRequest) -> AsyncIterator[int]:
    frames = captured_frames()

    async def resolve(arguments: dict[str, Any], grant: object) -> CaptureFeed:
        if arguments.get("capture") != CAPTURE:
            raise AttachError(f"no capture {arguments.get('capture')}")
        worker = {"capture": CAPTURE, "task": "step", "pid": 7, "rank": 3, "node": "h1"}
        return CaptureFeed(CAPTURE, "rank 3 step (pid 7 on h1)", frames,
                           description="capture point cp-1, hit 12", worker=worker)  # fmt: skip

    token = Token("someone", request.param, "x" * 32)
    listener = DapListener(resolve, lambda: bridge_capabilities(None), authorize=lambda _: token)
    _, port = await listener.start("127.0.0.1", 0)
    yield port
    await listener.close()


async def test_a_capture_is_a_stop_that_reads_and_never_runs(
    capture_port: int, dap_connect: Connect
) -> None:
    client = await dap_connect("127.0.0.1", capture_port)
    await client.attach(capture=CAPTURE)

    stop = (await client.wait_event("stopped", timeout=5)).body
    assert (stop["reason"], stop["description"]) == ("capture", "capture point cp-1, hit 12")
    threads = (await client.request("threads")).body["threads"]
    name = f"rank 3 step (pid 7 on h1) (capture {CAPTURE})"
    assert threads == [{"id": 1, "name": name, "worker": {  # as a live session's, as fields
        "label": name, "capture": CAPTURE, "task": "step", "pid": 7, "rank": 3, "node": "h1",
    }}]  # fmt: skip
    frames = (await client.request("stackTrace", {"threadId": 1})).body["stackFrames"]
    top = frames[0]
    assert top["name"].endswith("step") and top["source"]["path"] == __file__

    reference = top["source"]["sourceReference"]
    source = await client.request("source", {"source": top["source"], "sourceReference": reference})
    assert "return sys._getframe()" in source.body["content"].splitlines()[top["line"] - 1]
    [scope] = (await client.request("scopes", {"frameId": top["id"]})).body["scopes"]
    names = await client.request("variables", {"variablesReference": scope["variablesReference"]})
    shown = {v["name"]: v for v in names.body["variables"]}
    assert shown["losses"]["value"] == "list of 2" and shown["losses"]["variablesReference"] > 0
    inside = {"variablesReference": shown["cfg"]["variablesReference"]}
    cfg = await client.request("variables", inside)
    assert {v["name"]: v["value"] for v in cfg.body["variables"]} == {
        "lr": "0.1", "api_key": "<redacted>  (not captured: redacted)"
    }  # fmt: skip

    lr = await client.request("evaluate", {"expression": "cfg['lr']", "frameId": top["id"]})
    assert lr.body["result"] == "0.1"  # a view token may: nothing runs
    for asked in ("losses[0] + 1", "__import__('os').getpid()", "open('x')"):
        refused = await client.request(
            "evaluate", {"expression": asked, "frameId": top["id"]}, check=False
        )
        assert not refused.success and "read, never run" in (refused.message or "")
    for command in ("continue", "next", "stepIn", "setVariable", "pause"):
        with pytest.raises(DapRequestFailed, match="read-only"):
            await client.request(command, {"threadId": 1, "variablesReference": 1,
                                           "name": "lr", "value": "2"})  # fmt: skip
    threads_again = await client.request("threads")
    assert threads_again.success  # a refusal ends nothing
