"""A client session driven with plain messages through an in-memory channel: every request
gets exactly one answer, whatever its handler raises."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from raydap.adapter import AttachError, ClientSession, SingleWorker, Upstream, Worker, WorkerMux
from raydap.adapter.channel import Message
from raydap.protocol import Request, Response
from tests.waiting import until


class MemoryChannel:
    """Both ends of a DAP connection in one process: what the test sends, what it reads."""

    peer = "memory"

    def __init__(self) -> None:
        self.incoming: asyncio.Queue[Message | None] = asyncio.Queue()
        self.sent: list[Message] = []

    async def receive(self) -> Message | None:
        return await self.incoming.get()

    async def send(self, message: Message, seq: int) -> None:
        self.sent.append(message)

    async def close(self) -> None:
        self.incoming.put_nowait(None)

    def answers(self) -> dict[int, list[Response]]:
        found: dict[int, list[Response]] = {}
        for message in self.sent:
            if isinstance(message, Response):
                found.setdefault(message.request_seq, []).append(message)
        return found


class DebugGrant:
    name = "debug"
    debugs = True

    def allows(self, command: str) -> bool:
        return True


async def serve(resolve: Any, *after_attach: Request) -> dict[int, list[Response]]:
    """Serve ``initialize`` (seq 1), ``attach`` (seq 2) and then ``after_attach`` until each
    is answered; every answer, by request."""
    channel = MemoryChannel()
    session = ClientSession(
        channel, resolve, capabilities=dict, authorize=lambda arguments: DebugGrant()
    )
    running = asyncio.create_task(session.run())
    requests = [
        Request(seq=1, command="initialize", arguments={}),
        Request(seq=2, command="attach", arguments={"breakpoint": "w1"}),
        *after_attach,
    ]
    for request in requests:
        channel.incoming.put_nowait(request)
    # 5 s for what takes milliseconds: a request left unanswered fails here.
    await until(lambda: len(channel.answers()) == len(requests), timeout=5, what="every answer")
    channel.incoming.put_nowait(None)
    await asyncio.wait_for(running, 5)
    return channel.answers()


@pytest.mark.parametrize(
    ("raised", "told"),
    [
        (RuntimeError("a bug"), "raydap failed on 'attach' (see the bridge log)"),
        (AttachError("no paused worker with id 'w1'"), "no paused worker with id 'w1'"),
    ],
)
async def test_a_failed_attach_is_answered_once_and_the_session_serves_on(
    raised: Exception, told: str
) -> None:
    async def resolve(arguments: dict[str, Any], grant: object) -> SingleWorker:
        raise raised

    answers = await serve(resolve, Request(seq=3, command="disconnect"))
    assert [len(answers[seq]) for seq in (1, 2, 3)] == [1, 1, 1]
    assert not answers[2][0].success and answers[2][0].message == told
    assert answers[3][0].success  # still INITIALIZED: the failed attach changed nothing


async def test_a_bug_while_relaying_is_one_error_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(self: WorkerMux, request: Request) -> Response:
        raise KeyError("threadId")

    monkeypatch.setattr(WorkerMux, "handle", broken)
    upstream = Upstream(MemoryChannel(), name="w1")  # never started: nothing reaches it

    async def resolve(arguments: dict[str, Any], grant: object) -> SingleWorker:
        return SingleWorker(Worker("w1", upstream))

    answers = await serve(
        resolve,
        Request(seq=3, command="evaluate", arguments={"expression": "1"}),
        Request(seq=4, command="threads"),
    )
    assert [len(answers[seq]) for seq in (1, 2, 3, 4)] == [1, 1, 1, 1]
    assert answers[3][0].message == "raydap failed on 'evaluate' (see the bridge log)"
