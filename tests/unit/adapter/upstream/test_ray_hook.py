"""Which stops are moved out of Ray's breakpoint hook (frames as debugpy 1.8.22 reported them
on Python 3.12.1 and 3.13.0; the moves themselves run in the e2e tests on each Python)."""

from __future__ import annotations

import asyncio
from typing import Any

from raydap.adapter import State, Upstream, open_tcp_channel
from raydap.adapter.upstream.ray_hook import (
    REARM_STATEMENT,
    Settle,
    may_stop_in_hook,
    settle_action,
)
from raydap.protocol import Decoder, Request, encode, event, response_to

SITE = "/venv/lib/python3.12/site-packages"


def frame(name: str, path: str, line: int = 1) -> dict[str, Any]:
    return {"id": line, "name": name, "line": line, "source": {"path": path}}


USER = frame("square", "/job/task_breakpoint.py", 10)


def test_a_breakpoint_shown_in_rays_rpdb_is_stepped_out_of_it() -> None:
    frames = [frame("set_trace", f"{SITE}/ray/util/rpdb.py", 299), USER]
    assert settle_action(frames) is Settle.STEP
    assert settle_action([frame("set_trace", f"{SITE}/ray/util/debugpy.py", 98)]) is (Settle.STEP)


def test_the_users_own_line_is_shown_as_it_is() -> None:
    assert settle_action([USER, frame("main_loop", f"{SITE}/ray/_private/worker.py")]) is (
        Settle.SHOW
    )
    assert settle_action([]) is Settle.SHOW


def test_pydevds_nested_post_mortem_stop_is_rearmed() -> None:
    nested = [
        frame("helper", "/usr/lib/python3.12/contextlib.py", 301),
        frame("_debugpy_excepthook", f"{SITE}/ray/util/debugpy.py", 126),
    ]
    assert settle_action(nested) is Settle.REARM
    # contextlib over user code is an ordinary stop in a user's context manager
    assert settle_action([nested[0], USER]) is Settle.SHOW


def test_only_stops_ray_may_have_made_are_looked_at() -> None:
    assert may_stop_in_hook({"reason": "breakpoint", "threadId": 1})
    assert may_stop_in_hook({"reason": "exception", "threadId": 1})
    assert not may_stop_in_hook({"reason": "breakpoint", "hitBreakpointIds": [3]})
    assert not may_stop_in_hook({"reason": "step"})
    assert not may_stop_in_hook({"reason": "pause"})


def test_the_rearm_statement_is_one_expression_a_worker_can_run() -> None:
    compile(REARM_STATEMENT, "<evaluate>", "eval")


async def test_a_stop_the_bridge_cannot_settle_is_shown_where_it_is() -> None:
    """A worker whose answers make no sense (here a frame without an id where the nested
    post-mortem stop would be re-armed) still gets its stop shown, never hidden."""
    nonsense = [
        {"name": "helper", "line": 1, "source": {"path": "/usr/lib/python3.12/contextlib.py"}},
        {
            "name": "_debugpy_excepthook",
            "line": 2,
            "source": {"path": f"{SITE}/ray/util/debugpy.py"},
        },
    ]

    async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder, seq, attach = Decoder(), 0, None
        stopped = event("stopped", {"reason": "exception", "threadId": 1})
        while data := await reader.read(65536):
            for request in decoder.feed(data):
                assert isinstance(request, Request)
                seq += 1
                if request.command == "attach":
                    attach = request
                    writer.write(encode(event("initialized"), seq))
                elif request.command == "configurationDone":
                    assert attach is not None
                    answers = [response_to(request), response_to(attach), stopped]
                    writer.write(b"".join(encode(a, seq + i) for i, a in enumerate(answers)))
                    seq += len(answers)
                elif request.command == "stackTrace":
                    writer.write(encode(response_to(request, {"stackFrames": nonsense}), seq))
                else:
                    writer.write(encode(response_to(request, {}), seq))
            await writer.drain()

    server = await asyncio.start_server(worker, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    upstream = Upstream(await open_tcp_channel("127.0.0.1", port), name="nonsense")
    try:
        await upstream.handshake(timeout=5)
        assert upstream.state is State.STOPPED
        assert upstream.stops.top() is not None
    finally:
        await upstream.close("test over")
        server.close()
