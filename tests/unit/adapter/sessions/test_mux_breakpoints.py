"""Breakpoints through a session's mux, with a scripted debugpy: the orders of events that a
real worker cannot be made to produce on demand."""

from __future__ import annotations

import asyncio

from raydap.adapter import SingleWorker, Worker, WorkerMux
from raydap.adapter.sessions.paths import PathMapper
from raydap.protocol import Event, Request, Response
from tests.unit.adapter.peer import PKG, held_peer
from tests.waiting import until


async def test_a_breakpoint_set_while_a_worker_joins_reaches_it() -> None:
    async with held_peer() as (peer, upstream):
        sent: list[Request | Response | Event] = []
        mux = WorkerMux(
            SingleWorker(Worker("w1", upstream)), sent.append, PathMapper.from_attach({})
        )
        filters = Request(
            seq=1, command="setExceptionBreakpoints", arguments={"filters": ["uncaught"]}
        )
        await mux.handle(filters)  # configuration the worker is given when it joins
        peer.holding["setExceptionBreakpoints"] = release = asyncio.Event()
        mux.start()
        await until(lambda: peer.received.count("setExceptionBreakpoints") == 2)  # the join's
        arguments = {"source": {"path": f"{PKG}/train.py"}, "breakpoints": [{"line": 3}]}
        setting = asyncio.create_task(
            mux.handle(Request(seq=2, command="setBreakpoints", arguments=arguments))
        )
        await until(lambda: mux.book.lists())  # under way while the worker is still joining
        release.set()
        given = (await setting).body["breakpoints"][0]

        await until(lambda: bool(upstream.clients))  # joined
        requested = {"source": {"path": f"{PKG}/train.py"}, "breakpoints": [{"line": 3}]}
        assert peer.breakpoint_requests[-1] == requested
        assert given["verified"] is True  # the joining worker answered for it
        mux.close()


async def test_a_stop_names_the_breakpoints_by_the_ids_the_session_gave() -> None:
    async with held_peer() as (peer, upstream):
        sent: list[Request | Response | Event] = []
        mux = WorkerMux(
            SingleWorker(Worker("w1", upstream)), sent.append, PathMapper.from_attach({})
        )
        mux.start()
        await until(lambda: bool(upstream.clients))
        arguments = {
            "source": {"path": f"{PKG}/train.py"},
            "breakpoints": [{"line": 3}, {"line": 8}],
        }
        answer = await mux.handle(Request(seq=1, command="setBreakpoints", arguments=arguments))
        ids = [b["id"] for b in answer.body["breakpoints"]]
        peer.write(
            Event(
                event="stopped",
                body={"reason": "breakpoint", "threadId": 1, "hitBreakpointIds": [102]},
            )
        )
        await asyncio.sleep(0)
        await until(
            lambda: any(
                isinstance(m, Event)
                and m.event == "stopped"
                and (m.body or {}).get("hitBreakpointIds")
                for m in sent
            )
        )
        stop = next(
            m
            for m in sent
            if isinstance(m, Event)
            and m.event == "stopped"
            and (m.body or {}).get("hitBreakpointIds")
        )
        assert stop.body["hitBreakpointIds"] == [ids[1]]  # the worker's 102 is line 8
        mux.close()
