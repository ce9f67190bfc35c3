"""Client sessions relayed to a real debugpy: sharing, late join, bad input, worker loss."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from typing import Any

from raydap.adapter import State, bridge_capabilities
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.server.dap_listener import DapListener
from raydap.protocol import Decoder
from tests.conftest import Connect
from tests.integration.adapter.conftest import Debuggee, Relay, any_attach, relay_resolver
from tests.waiting import until


async def top_frame(client: DapClient, thread_id: int) -> dict:  # type: ignore[type-arg]
    response = await client.request("stackTrace", {"threadId": thread_id})
    return response.body["stackFrames"][0]  # type: ignore[no-any-return]


async def evaluate(client: DapClient, frame_id: int, expression: str) -> str:
    response = await client.request(
        "evaluate", {"expression": expression, "frameId": frame_id, "context": "repl"}
    )
    return str(response.body["result"])


async def test_the_hold_learns_where_the_worker_stopped(relay: Relay) -> None:
    stop = relay.upstream.stops.top()
    assert stop is not None and stop.body["reason"] == "breakpoint"
    assert relay.upstream.state is State.STOPPED


async def test_two_clients_share_a_worker_and_both_see_its_next_stop(
    relay: Relay, dap_connect: Connect, debuggee: Debuggee
) -> None:
    alice = await dap_connect(relay.host, relay.port)
    bob = await dap_connect(relay.host, relay.port)
    await alice.attach(breakpoint="w1")
    await bob.attach(breakpoint="w1")
    thread_id = (await alice.wait_event("stopped")).body["threadId"]
    assert (await bob.wait_event("stopped")).body["threadId"] == thread_id  # replayed to bob

    frame = await top_frame(alice, thread_id)  # ids are per session, as DAP intends
    assert frame["name"] == "work"
    assert await evaluate(alice, frame["id"], "total") == "40"
    assert await evaluate(bob, (await top_frame(bob, thread_id))["id"], "total") == "40"

    await alice.request("continue", {"threadId": thread_id})
    continued = await bob.wait_event("continued")
    assert continued.body["threadId"] == thread_id
    await alice.wait_event("stopped")
    await bob.wait_event("stopped")  # the second breakpoint, with no reattach
    first_line = frame["line"]
    frame = await top_frame(alice, thread_id)
    assert frame["line"] == first_line + 2
    assert await evaluate(alice, frame["id"], "total") == "41"
    await bob.request("continue", {"threadId": thread_id})
    assert debuggee.result_line() == "result 41"


async def test_a_client_that_disconnects_leaves_the_worker_paused_for_the_next(
    relay: Relay, dap_connect: Connect
) -> None:
    first = await dap_connect(relay.host, relay.port)
    await first.attach(breakpoint="w1")
    thread_id = (await first.wait_event("stopped")).body["threadId"]
    line = (await top_frame(first, thread_id))["line"]
    await first.close()
    await until(lambda: not relay.upstream.clients, what="the bridge noticed the client left")
    assert relay.upstream.state is State.STOPPED

    late = await dap_connect(relay.host, relay.port)
    await late.attach(breakpoint="w1")
    stopped = await late.wait_event("stopped")
    assert stopped.body["threadId"] == thread_id
    assert (await top_frame(late, thread_id))["line"] == line


async def test_bad_bytes_close_only_that_connection(relay: Relay, dap_connect: Connect) -> None:
    good = await dap_connect(relay.host, relay.port)
    await good.attach(breakpoint="w1")
    thread_id = (await good.wait_event("stopped")).body["threadId"]

    reader, writer = await asyncio.open_connection(relay.host, relay.port)
    body = b'{"seq": 3, "type": "request", "command": 1}'
    writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    answer = await asyncio.wait_for(reader.read(), 5)  # read until the bridge closes
    assert b'"request_seq":3' in answer and b'"success":false' in answer
    writer.close()

    reader, writer = await asyncio.open_connection(relay.host, relay.port)
    writer.write(b"Content-Length: nope\r\n\r\n")
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()

    frame = await top_frame(good, thread_id)
    assert await evaluate(good, frame["id"], "n") == "20"


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


async def read_until(
    reader: asyncio.StreamReader, done: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """Messages the bridge sends, until ``done`` says enough or the bridge closes."""
    decoder, seen = Decoder(), []
    while not done(seen) and (data := await asyncio.wait_for(reader.read(65536), 15)):
        seen += [message.to_dict() for message in decoder.feed(data)]
    return seen


async def test_a_first_request_numbered_0_is_answered_as_debugpy_does(relay: Relay) -> None:
    """nvim-dap for Neovim 0.7 (Debian 12) numbers its first request 0."""
    reader, writer = await asyncio.open_connection(relay.host, relay.port)
    handshake = [
        {"seq": 0, "type": "request", "command": "initialize", "arguments": {"adapterID": "x"}},
        {"seq": 1, "type": "request", "command": "attach", "arguments": {"breakpoint": "w1"}},
        {"seq": 2, "type": "request", "command": "configurationDone"},
    ]
    writer.write(b"".join(frame(m) for m in handshake))
    seen = await read_until(reader, lambda seen: any(m.get("event") == "stopped" for m in seen))
    writer.close()
    answered = {m["request_seq"]: m["success"] for m in seen if m["type"] == "response"}
    assert answered == {0: True, 1: True, 2: True}
    assert seen[0]["command"] == "initialize"
    assert seen[0]["body"]["supportsConfigurationDoneRequest"]


async def test_a_client_that_never_attaches_is_told_why_it_is_closed(relay: Relay) -> None:
    listener = DapListener(
        relay_resolver(relay),
        lambda: bridge_capabilities(None),
        authorize=any_attach,
        handshake_timeout=0.5,
    )
    host, port = await listener.start("127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(frame({"seq": 1, "type": "request", "command": "initialize"}))
        seen = await read_until(reader, lambda seen: False)  # until the bridge closes
        writer.close()
    finally:
        await listener.close()
    said = [m["body"]["output"] for m in seen if m.get("event") == "output"]
    assert said and "did not attach within 0.5 s" in said[0]
    assert seen[-1].get("event") == "terminated"


async def test_requests_out_of_order_get_errors_that_say_what_to_do(
    relay: Relay, dap_connect: Connect
) -> None:
    client = await dap_connect(relay.host, relay.port)
    early = await client.request("threads", check=False)
    assert not early.success and "initialize" in (early.message or "")
    await client.request("initialize", {"adapterID": "test"})
    launch = await client.request("launch", {}, check=False)
    assert not launch.success and '"request": "attach"' in (launch.message or "")
    unknown = await client.request("attach", {"breakpoint": "nope"}, check=False)
    assert not unknown.success and "'nope'" in (unknown.message or "")
    await client.request("attach", {"breakpoint": "w1"})
    again = await client.request("attach", {"breakpoint": "w1"}, check=False)
    assert not again.success and "already attached" in (again.message or "")
    terminate = await client.request("terminate", check=False)
    assert not terminate.success and "does not kill" in (terminate.message or "")
    await client.request("configurationDone")
    bad_id = await client.request("stackTrace", {"threadId": "main"}, check=False)
    assert not bad_id.success and "threadId: must be integer" in (bad_id.message or "")
    stale = await client.request("scopes", {"frameId": 999}, check=False)
    assert not stale.success and "resumed or left" in (stale.message or "")
    assert (await client.request("threads")).body["threads"]  # the session lives on


async def test_arguments_that_would_crash_debugpy_never_reach_the_worker(
    relay: Relay, dap_connect: Connect
) -> None:
    """Found by the session fuzzer: pydevd drops its connection (for every session sharing the
    worker) on a ``setBreakpoints`` whose path is not a string, or ``source`` whose
    ``sourceReference`` is not a number."""
    client = await dap_connect(relay.host, relay.port)
    await client.attach(breakpoint="w1")
    for command, arguments in (
        ("setBreakpoints", {"source": {"path": 5}, "breakpoints": [{"line": 3}]}),
        ("setBreakpoints", {"source": {"path": "x.py"}, "breakpoints": "all"}),
        ("stackTrace", {"threadId": 1, "levels": "x"}),
        ("source", {"source": {"sourceReference": "x"}, "sourceReference": 1.5}),
    ):
        answer = await client.request(command, arguments, check=False)
        assert not answer.success and f"bad {command!r} arguments" in (answer.message or "")
    # Valid DAP (a source named by reference only), but pydevd cannot take it either.
    by_reference = {"source": {"sourceReference": 5}, "breakpoints": [{"line": 3}]}
    answer = await client.request("setBreakpoints", by_reference, check=False)
    assert not answer.success and "source.path is required" in (answer.message or "")
    assert relay.upstream.state is State.STOPPED  # still held, for everyone
    thread_id = (await client.wait_event("stopped")).body["threadId"]
    trace = await client.request("stackTrace", {"threadId": thread_id})
    assert trace.body["stackFrames"][0]["name"] == "work"


async def test_worker_exit_ends_the_session_with_terminated(
    relay: Relay, dap_connect: Connect, debuggee: Debuggee
) -> None:
    client = await dap_connect(relay.host, relay.port)
    await client.attach(breakpoint="w1")
    await client.wait_event("stopped")
    debuggee.process.kill()
    await client.wait_event("terminated", timeout=10)
    output = await client.wait_event("output")
    assert "w1" in output.body["output"]
    assert relay.upstream.state is State.CLOSED


async def test_a_worker_that_stops_answering_fails_the_request_not_the_session(
    relay: Relay, dap_connect: Connect, debuggee: Debuggee
) -> None:
    client = await dap_connect(relay.host, relay.port)
    await client.attach(breakpoint="w1")
    thread_id = (await client.wait_event("stopped")).body["threadId"]
    frame = await top_frame(client, thread_id)
    os.kill(debuggee.process.pid, signal.SIGSTOP)
    try:
        # What this stop already answered still shows (from the bridge's cache) ...
        assert (await top_frame(client, thread_id))["name"] == "work"
        # ... and a question only the frozen worker can answer fails alone, in time.
        frozen = await client.request(
            "evaluate", {"expression": "n", "frameId": frame["id"], "context": "repl"},
            check=False, timeout=10,
        )  # fmt: skip
        assert not frozen.success
        assert "did not answer 'evaluate' within 2 s" in (frozen.message or "")
    finally:
        os.kill(debuggee.process.pid, signal.SIGCONT)
    assert await evaluate(client, frame["id"], "n") == "20"


async def test_an_evaluate_that_runs_long_is_timed_out_and_every_session_is_told(
    relay: Relay, dap_connect: Connect
) -> None:
    """debugpy answers one request at a time: a debug token's long evaluate holds the worker
    for every session, so each one hears why its worker stopped answering."""
    alice = await dap_connect(relay.host, relay.port)
    bob = await dap_connect(relay.host, relay.port)
    await alice.attach(breakpoint="w1")
    await bob.attach(breakpoint="w1")
    thread_id = (await alice.wait_event("stopped")).body["threadId"]
    frame = await top_frame(alice, thread_id)
    slow = await alice.request(
        "evaluate", {"expression": "__import__('time').sleep(2.3)", "frameId": frame["id"],
                     "context": "repl"}, check=False, timeout=10,
    )  # fmt: skip
    assert not slow.success and "did not answer 'evaluate' within 2 s" in str(slow.message)
    told = await bob.wait_event("output", where=lambda e: "evaluate" in e.body["output"])
    assert told.body["category"] == "important"
    assert "answers no other request" in told.body["output"]
    # Once the sleep ends the worker answers again (this waits its turn behind it).
    assert await evaluate(bob, (await top_frame(bob, thread_id))["id"], "n") == "20"
