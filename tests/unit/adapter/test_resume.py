"""A session resumed in the bridge that replaced its own: the client's ids and breakpoints come
back as they were, only what its token may set, and a resume that is not one is refused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from raydap.adapter import ClientSession, Phase, SingleWorker, Upstream, Worker, WorkerMux
from raydap.adapter.resume import MAX_ITEMS, Resume
from raydap.adapter.sessions.ids import IdMap
from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.upstream.books import SessionBook
from raydap.protocol import Event, Request, Response
from raydap.protocol.extension import REPLACED
from tests.unit.adapter.sessions.test_session import DebugGrant, MemoryChannel
from tests.waiting import until


class ViewGrant:
    name = "viewer"
    debugs = False

    def allows(self, command: str) -> bool:
        return command in ("threads", "stackTrace")


class NoWorkers:
    follows = True

    def start(self, join: Callable[[Worker], None], end: Callable[[str], None]) -> None:
        pass

    def stop(self) -> None:
        pass


BREAKPOINTS = {"source": {"path": "/job/train.py"}, "breakpoints": [{"line": 9}, {"line": 12}]}


def test_seeded_ids_map_as_before_and_new_ones_come_after() -> None:
    ids: IdMap[str] = IdMap()
    ids.seed([("w1", 1, 4), ("w2", 1, 7), ("w2", 5, 4)])  # the last clashes: skipped
    assert ids.to_worker(4) == ("w1", 1) and ids.to_worker(7) == ("w2", 1)
    assert ids.to_client("w1", 1) == 4
    assert ids.to_client("w3", 1) == 8
    assert ids.to_worker(4) == ("w1", 1)


def test_a_book_keeps_the_ids_the_client_knows() -> None:
    book = SessionBook()
    entries = book.set(("setBreakpoints", "/a.py"), [{"line": 1}, {"line": 2}], ids=[5, 9])
    assert [e.id for e in entries] == [5, 9]
    [other] = book.set(("setBreakpoints", "/b.py"), [{"line": 3}])
    assert other.id == 10
    mismatched = book.set(("setBreakpoints", "/c.py"), [{"line": 4}], ids=[5, 6])
    assert [e.id for e in mismatched] == [11]  # ids that do not fit the list are not used


async def test_a_mux_resumed_from_another_has_its_ids_breakpoints_and_configuration() -> None:
    old = WorkerMux(NoWorkers(), lambda message: None, PathMapper())
    await old.handle(Request(seq=1, command="setBreakpoints", arguments=BREAKPOINTS))
    filters = {"filters": ["uncaught"]}
    await old.handle(Request(seq=2, command="setExceptionBreakpoints", arguments=filters))
    old._ids.threads.to_client("w1", 1)
    frame = old._ids.frames.to_client("w1", 3)
    resume = old.resume_state()

    over_the_wire = Resume.model_validate_json(resume.model_dump_json())
    new = WorkerMux(NoWorkers(), lambda message: None, PathMapper())
    new.restore(over_the_wire)
    assert new._ids.frames.to_worker(frame) == ("w1", 3)
    assert new.resume_state() == resume
    book = new.book.entries(("setBreakpoints", "/job/train.py"))
    assert [e.id for e in book] == [1, 2]


async def attach(
    arguments: dict[str, Any], grant: Any = None
) -> tuple[ClientSession, MemoryChannel, Response]:
    channel = MemoryChannel()
    upstream = Upstream(MemoryChannel(), name="w1")  # never started: nothing reaches it

    async def resolve(arguments: dict[str, Any], grant: object) -> SingleWorker:
        return SingleWorker(Worker("w1", upstream))

    session = ClientSession(
        channel, resolve, capabilities=dict, authorize=lambda _: grant or DebugGrant()
    )
    running = asyncio.create_task(session.run())
    channel.incoming.put_nowait(Request(seq=1, command="initialize", arguments={}))
    channel.incoming.put_nowait(Request(seq=2, command="attach", arguments=arguments))
    await until(lambda: 2 in channel.answers(), what="the attach answered")
    [answer] = channel.answers()[2]
    channel.incoming.put_nowait(None)
    await asyncio.wait_for(running, 5)
    return session, channel, answer


def resume_with_breakpoints() -> dict[str, Any]:
    lists = [{"command": "setBreakpoints", "arguments": BREAKPOINTS, "ids": [3, 4]}]
    return {"version": 1, "breakpoints": lists, "ids": {"threads": [["w1", 1, 2]]}}


async def test_a_view_token_resumes_its_ids_but_no_breakpoint() -> None:
    session, _, answer = await attach(
        {"breakpoint": "w1", "resume": resume_with_breakpoints()}, ViewGrant()
    )
    assert answer.success
    assert session.mux is not None
    state = session.mux.resume_state()
    assert state.breakpoints == [] and state.ids.threads == [("w1", 1, 2)]


@pytest.mark.parametrize(
    ("resume", "told"),
    [
        ("abc", "resume is not one a raydap bridge gave: : Input should be"),
        ({"version": 2}, "version: Input should be 1"),
        ({"ids": {"threads": [["w1", "one", 2]]}}, "ids.threads.0.1: Input should be"),
        ({"ids": {"threads": [["w1", 1, 2]] * (MAX_ITEMS + 1)}}, "ids.threads: List should"),
        ({"breakpoints": [{"command": "evaluate", "arguments": {}, "ids": []}]}, "command"),
    ],
)
async def test_a_resume_that_is_not_one_is_refused_with_where(resume: Any, told: str) -> None:
    _, _, answer = await attach({"breakpoint": "w1", "resume": resume})
    assert not answer.success and told in (answer.message or ""), answer.message


async def test_a_replaced_bridge_tells_its_attached_client_how_to_resume() -> None:
    channel = MemoryChannel()
    session = ClientSession(channel, NoWorkersResolver(), capabilities=dict,
                            authorize=lambda _: DebugGrant())  # fmt: skip
    running = asyncio.create_task(session.run())
    for seq, command in enumerate(("initialize", "attach", "configurationDone"), 1):
        channel.incoming.put_nowait(Request(seq=seq, command=command, arguments={}))
    await until(lambda: session.phase is Phase.ATTACHED, what="the session attached")
    session.replaced(4242)
    assert await session.sent(timeout=5)
    [told] = [m for m in channel.sent if isinstance(m, Event) and m.event == REPLACED]
    assert told.body["pid"] == 4242
    assert Resume.model_validate(told.body["resume"]) == Resume()
    channel.incoming.put_nowait(None)
    await asyncio.wait_for(running, 5)


class NoWorkersResolver:
    async def __call__(self, arguments: dict[str, Any], grant: object) -> NoWorkers:
        return NoWorkers()
