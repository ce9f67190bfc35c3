"""The prompt's loop: what is on screen when the prompt is drawn."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from raydap.bridge.client.pdb import console as console_module
from raydap.bridge.client.pdb.console import Console, LoopThread
from raydap.bridge.client.pdb.debugger import Debugger
from raydap.protocol import Event, Response

#: A frame in a file on this machine, as on a one-node cluster: shown with no request.
FRAME = {"id": 1, "name": "rank", "line": 10, "source": {"path": __file__}}


def following(label: str) -> Event:
    return Event(seq=0, event="output", body={"category": "console", "output": label + "\n"})


def stopped(thread: int) -> Event:
    return Event(seq=0, event="stopped", body={"reason": "breakpoint", "threadId": thread})


class ArrivingClient:
    """A DAP client whose second worker's announcement arrives while the first stop is shown,
    as it does over a busy connection: after the first drain, before the stop's answers."""

    def __init__(self) -> None:
        self.events: list[Event] = [following("raydap: following rank A"), stopped(1)]
        self.closed = False
        self._late = [following("raydap: following rank B"), stopped(2)]

    async def request(self, command: str, arguments: Any = None, **_: Any) -> Response:
        self.events.extend(self._late)
        self._late = []
        body: dict[str, Any] = {}
        if command == "stackTrace":
            body = {"stackFrames": [FRAME]}
        elif command == "threads":
            body = {"threads": [{"id": 1, "name": "A", "worker": {"label": "rank A"}}]}
        return Response(seq=0, request_seq=0, success=True, command=command, body=body)

    async def wait_more(self, seen: int, timeout: float | None = None) -> None:
        await asyncio.sleep(0)


def test_a_join_announced_while_the_first_stop_is_shown_is_printed_before_the_prompt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    screen: list[str] = []
    at_prompt: list[list[str]] = []

    def read(self: Console, prompt: str) -> None:
        at_prompt.append(list(screen))
        return None  # Ctrl-D

    monkeypatch.setattr(Console, "read", read)
    monkeypatch.setattr(console_module, "readline", None)
    loop = LoopThread()
    try:
        debugger = Debugger(ArrivingClient(), out=screen.append, follow=True)  # type: ignore[arg-type]
        assert Console(loop, debugger).run() == 0
    finally:
        loop.stop()
    [first_prompt] = at_prompt
    assert [line for line in first_prompt if line.startswith("raydap: following")] == [
        "raydap: following rank A",
        "raydap: following rank B",
    ]
    assert set(debugger.paused) == {1, 2}
