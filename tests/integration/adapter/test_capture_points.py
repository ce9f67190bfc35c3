"""A capture point set by a real DAP client on a real running debugpy process: the worker
records its frame and runs on, the client never sees a stop, and the point's limits hold."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
from pathlib import Path
from typing import Any

from raydap.adapter import Upstream
from raydap.protocol.extension import CAPTURE
from tests.conftest import Connect
from tests.integration.adapter.conftest import LIVE_LOOP as LOOP
from tests.integration.adapter.conftest import LIVE_SCRIPT as SCRIPT
from tests.waiting import until

Live = tuple[Upstream, int, Path, subprocess.Popen[str]]


def listen(upstream: Upstream) -> list[dict[str, Any]]:
    said: list[dict[str, Any]] = []
    upstream.news.on_capture = lambda body: said.append(body) if isinstance(body, dict) else None
    return said


def stops(client: Any) -> list[Any]:
    return [e for e in client.events if e.event == "stopped"]


async def set_capture(client: Any, **settings: Any) -> dict[str, Any]:
    breakpoint = {"line": LOOP, "mode": "capture", "capture": settings}
    answer = await client.request(
        "setBreakpoints", {"source": {"path": str(SCRIPT)}, "breakpoints": [breakpoint]}
    )
    return dict(answer.body["breakpoints"][0])


async def test_captures_arrive_and_the_worker_never_stops(live: Live, dap_connect: Connect) -> None:
    upstream, port, flag, process = live
    captures = listen(upstream)
    client = await dap_connect("127.0.0.1", port)
    await client.attach(breakpoint="w1")

    shown = await set_capture(client, interval=0.2, most=3)

    assert shown["verified"] is True
    await until(lambda: len(captures) >= 3, timeout=10)
    await asyncio.sleep(0.5)  # time for a fourth, which "most" forbids
    assert len(captures) == 3
    top = captures[0]["frames"][0]
    assert (top["line"], Path(top["path"]).name) == (LOOP, SCRIPT.name)
    count = next(v for v in top["locals"] if v["name"] == "count")
    assert count["type"] == "int" and int(count["value"]) >= 0
    assert top["source"]["lines"][LOOP - top["source"]["first"]].strip().startswith("count += 1")
    hits = [c["hit"] for c in captures]
    assert hits == sorted(hits) and hits[-1] - hits[0] >= 2  # the line ran on between them
    times = [c["time"] for c in captures]
    assert all(b - a >= 0.19 for a, b in itertools.pairwise(times))
    assert stops(client) == [] and not upstream.stops
    assert CAPTURE not in {e.event for e in client.events}  # the bridge's alone

    flag.touch()
    assert process.wait(timeout=10) == 0


async def test_a_point_over_its_budget_turns_itself_off(live: Live, dap_connect: Connect) -> None:
    upstream, port, flag, _ = live
    captures = listen(upstream)
    client = await dap_connect("127.0.0.1", port)
    await client.attach(breakpoint="w1")

    shown = await set_capture(client, interval=0, budget_ms=0)

    await until(lambda: bool(captures), timeout=10)
    await asyncio.sleep(0.5)
    # Two that cost too much (one alone may be the node's doing), and no other
    assert len(captures) == 2 and "disabled" not in captures[0]
    off = "2 captures in a row took more CPU than the point's budget of 0 ms"
    assert off in captures[1]["disabled"]
    # The client that set it is told on the breakpoint itself: off, where and why; in the
    # answer to its request when the first hit came first, else in a breakpoint event.
    if "message" not in shown:
        told = await client.wait_event("breakpoint", timeout=10)
        assert told.body["reason"] == "changed"
        shown = told.body["breakpoint"]
    assert shown["verified"] is False and shown["message"].startswith("turned itself off in ")
    assert "the point's budget of 0 ms" in shown["message"]
    assert stops(client) == []
    flag.touch()


async def test_a_point_and_a_breakpoint_on_one_line_both_work(
    live: Live, dap_connect: Connect
) -> None:
    """debugpy keeps one breakpoint a line: the two are given as one, which captures and then
    stops as the plain breakpoint asks (here once ``count`` passes 50)."""
    upstream, port, flag, _ = live
    captures = listen(upstream)
    client = await dap_connect("127.0.0.1", port)
    await client.attach(breakpoint="w1")

    both = [{"line": LOOP, "mode": "capture", "capture": {"interval": 0}},
            {"line": LOOP, "condition": "count > 50"}]  # fmt: skip
    answer = await client.request(
        "setBreakpoints", {"source": {"path": str(SCRIPT)}, "breakpoints": both}
    )
    shown = answer.body["breakpoints"]

    stop = (await client.wait_event("stopped", timeout=10)).body
    assert stop["hitBreakpointIds"] == [shown[1]["id"]]  # the plain one's, not the point's
    value = await client.request("evaluate", {"expression": "count", "frameId": await top(client)})
    assert int(value.body["result"]) > 50
    assert captures and captures[0]["frames"][0]["line"] == LOOP  # captured before, each hit
    await client.request("setBreakpoints", {"source": {"path": str(SCRIPT)}, "breakpoints": []})
    await client.request("continue", {"threadId": stop["threadId"]})
    flag.touch()


async def top(client: Any) -> int:
    threads = (await client.request("threads")).body["threads"]
    trace = await client.request("stackTrace", {"threadId": threads[0]["id"]})
    return int(trace.body["stackFrames"][0]["id"])
