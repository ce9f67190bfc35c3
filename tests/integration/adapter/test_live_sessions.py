"""A session on a live worker (one that runs, held without a stop): a real debugpy process
that runs untraced until the session's breakpoint reaches it."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

from raydap.adapter import (
    State,
    Upstream,
)
from raydap.bridge.client.dap_client import DapClient
from tests.conftest import Connect
from tests.integration.adapter.conftest import LIVE_LOOP as LOOP
from tests.integration.adapter.conftest import LIVE_SCRIPT as SCRIPT
from tests.waiting import until


async def test_a_breakpoint_reaches_a_running_worker_and_leaves_with_its_client(
    live: tuple[Upstream, int, Path, subprocess.Popen[str]], dap_connect: Connect
) -> None:
    upstream, port, flag, process = live
    assert upstream.state is State.RUNNING and not upstream.stops  # held, not stopped

    client = await dap_connect("127.0.0.1", port)
    await client.attach(breakpoint="w1")
    started = await client.wait_event("thread", timeout=10)
    assert started.body["reason"] == "started"  # a running worker's thread, announced
    answer = await client.request(
        "setBreakpoints", {"source": {"path": str(SCRIPT)}, "breakpoints": [{"line": LOOP}]}
    )
    assert answer.body["breakpoints"][0]["verified"] is True
    stop = (await client.wait_event("stopped", timeout=10)).body
    assert stop["reason"] == "breakpoint" and stop["threadId"] == started.body["threadId"]
    trace = await client.request("stackTrace", {"threadId": stop["threadId"]})
    frame = trace.body["stackFrames"][0]
    assert frame["line"] == LOOP
    value = await client.request(
        "evaluate", {"expression": "count > 0", "frameId": frame["id"], "context": "repl"}
    )
    assert value.body["result"] == "True"

    # The client disconnects: the worker stays where it is, its breakpoint leaves the worker.
    await client.close()
    second = await dap_connect("127.0.0.1", port)
    await second.attach(breakpoint="w1")
    replayed = (await second.wait_event("stopped", timeout=10)).body  # the stop in force
    await second.request("continue", {"threadId": replayed["threadId"]})
    await until(lambda: upstream.state is State.RUNNING, what="the worker running again")
    await asyncio.sleep(1.0)  # nothing happens: about 200 turns of its loop pass no breakpoint
    assert upstream.state is State.RUNNING and not upstream.stops

    # Pause stops it where it is; it finishes once let go.
    await second.request("pause", {"threadId": replayed["threadId"]})
    paused = (await second.wait_event("stopped", timeout=10)).body
    assert paused["reason"] == "pause"
    flag.touch()
    await second.request("continue", {"threadId": paused["threadId"]})
    assert process.stdout is not None
    assert await asyncio.to_thread(process.stdout.readline) == "result True\n"


async def test_a_breakpoint_set_while_attaching_is_shown_verified_once_the_worker_has_it(
    live: tuple[Upstream, int, Path, subprocess.Popen[str]], dap_connect: Connect
) -> None:
    """As VS Code attaches: breakpoints come before configurationDone, when the session has no
    worker yet; the gutter must not stay hollow once the worker verified them."""
    _, port, flag, _ = live
    client = await dap_connect("127.0.0.1", port)
    given: list[dict[str, object]] = []

    async def configure() -> None:
        answer = await client.request(
            "setBreakpoints", {"source": {"path": str(SCRIPT)}, "breakpoints": [{"line": LOOP}]}
        )
        given.extend(answer.body["breakpoints"])

    await client.attach(breakpoint="w1", configure=configure)
    assert given[0]["verified"] is False and given[0]["message"] == "no worker in this session yet"
    changed = (await client.wait_event("breakpoint", timeout=10)).body
    assert changed["reason"] == "changed"
    assert changed["breakpoint"]["id"] == given[0]["id"]
    assert changed["breakpoint"]["verified"] is True and changed["breakpoint"]["line"] == LOOP
    stop = (await client.wait_event("stopped", timeout=10)).body
    assert stop["hitBreakpointIds"] == [given[0]["id"]]  # the id this session was given
    flag.touch()
    await client.request("setBreakpoints", {"source": {"path": str(SCRIPT)}, "breakpoints": []})
    await client.request("continue", {"threadId": stop["threadId"]})


async def test_sessions_share_a_file_and_one_leaving_takes_only_its_own(
    live: tuple[Upstream, int, Path, subprocess.Popen[str]], dap_connect: Connect
) -> None:
    """debugpy keeps one list per file: two sessions' breakpoints in one file both stay in the
    worker, and a session that disconnects takes back only the ones it set."""
    upstream, port, flag, process = live
    alice = await dap_connect("127.0.0.1", port)
    bob = await dap_connect("127.0.0.1", port)
    for client in (alice, bob):
        await client.attach(breakpoint="w1")
        await client.wait_event("thread", timeout=10)  # joined: the worker has its lists
    source = {"path": str(SCRIPT)}
    mine = await alice.request(
        "setBreakpoints", {"source": source, "breakpoints": [{"line": LOOP}]}
    )
    theirs = await bob.request(
        "setBreakpoints", {"source": source, "breakpoints": [{"line": LOOP + 1}]}
    )

    async def next_stop(client: DapClient) -> tuple[int, list[int]]:
        stop = (await client.wait_event("stopped", timeout=10)).body
        trace = await client.request("stackTrace", {"threadId": stop["threadId"]})
        return trace.body["stackFrames"][0]["line"], stop["hitBreakpointIds"]

    alice_id = mine.body["breakpoints"][0]["id"]
    bob_id = theirs.body["breakpoints"][0]["id"]
    assert await next_stop(alice) == (LOOP, [alice_id])
    assert await next_stop(bob) == (LOOP, [])  # the same stop: not one of bob's breakpoints
    thread_id = upstream.stops.top().body["threadId"]  # type: ignore[union-attr]
    await alice.request("continue", {"threadId": thread_id})
    assert await next_stop(alice) == (LOOP + 1, [])
    assert await next_stop(bob) == (LOOP + 1, [bob_id])

    await alice.close()  # alice's breakpoint leaves; bob's stays
    await bob.request("continue", {"threadId": thread_id})
    assert (await next_stop(bob))[0] == LOOP + 1
    flag.touch()
    await bob.request("setBreakpoints", {"source": source, "breakpoints": []})
    await bob.request("continue", {"threadId": thread_id})
    assert process.stdout is not None
    assert await asyncio.to_thread(process.stdout.readline) == "result True\n"
