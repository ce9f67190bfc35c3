"""A worker that stops again the moment it resumes (breakpoint() in a loop)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from raydap.adapter import State, Upstream, open_tcp_channel
from raydap.protocol import Event

LOOPS = 5


class Listener:
    debugs = True

    def __init__(self) -> None:
        self.stops: asyncio.Queue[Event] = asyncio.Queue()

    def upstream_event(self, upstream: Upstream, message: Event) -> None:
        if message.event == "stopped":
            self.stops.put_nowait(message)

    def upstream_closed(self, upstream: Upstream, reason: str) -> None:
        pass


async def test_a_stop_right_after_a_resume_is_kept() -> None:
    script = Path(__file__).with_name("looping_debuggee.py")
    process = subprocess.Popen(
        [sys.executable, "-Xfrozen_modules=off", str(script)],
        stdout=subprocess.PIPE, text=True,
        env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"),
    )  # fmt: skip
    assert process.stdout is not None
    channel = await open_tcp_channel("127.0.0.1", int(process.stdout.readline()))
    upstream = Upstream(channel, name="loop")
    try:
        await upstream.handshake()
        listener = Listener()
        upstream.audience.add(listener)
        for _ in range(LOOPS - 1):
            stop = upstream.stops.top()
            assert stop is not None
            await upstream.request("continue", {"threadId": stop.body["threadId"]})
            await asyncio.wait_for(listener.stops.get(), 10)
            # The new stop may have been read before the continue's requester ran again:
            # the upstream must still know the worker is stopped.
            assert upstream.state is State.STOPPED and upstream.stops.top() is not None
        last = upstream.stops.top()
        assert last is not None
        await upstream.request("continue", {"threadId": last.body["threadId"]})
        assert process.stdout.readline().strip() == f"result {LOOPS - 1}"
    finally:
        await upstream.close("test over")
        if process.poll() is None:
            process.kill()
        process.wait()
