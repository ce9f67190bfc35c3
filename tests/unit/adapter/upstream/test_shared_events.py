"""One worker, several sessions: what the worker sends is shared, and no session may change
what another one (or the upstream itself) sees."""

from __future__ import annotations

import copy
from typing import Any

from raydap.adapter import SingleWorker, State, Worker, WorkerMux
from raydap.adapter.sessions.paths import PathMapper
from raydap.protocol import Event, Request, Response, event
from tests.unit.adapter.peer import PKG, held_peer
from tests.waiting import until


async def test_sessions_on_one_worker_each_get_their_own_ids_and_paths() -> None:
    async with held_peer() as (peer, upstream):
        sent: dict[str, list[Request | Response | Event]] = {"alice": [], "bob": []}
        muxes = [
            WorkerMux(
                SingleWorker(Worker("w1", upstream)),
                sent[name].append,
                PathMapper.from_attach({"localRoot": f"/home/{name}/proj"}),
            )
            for name in sent
        ]

        def shown(name: str, kind: str) -> dict[str, Any]:
            found = [m for m in sent[name] if isinstance(m, Event) and m.event == kind]
            return dict(found[-1].body) if found else {}

        muxes[1]._ids.threads.to_client("w0", 1)  # bob's session numbers its ids differently
        for mux in muxes:
            mux.start()
        await until(lambda: len(upstream.clients) == 2)
        # Both set line 3 of their copy of train.py; bob also line 1, first.
        given = []
        for name, lines in (("alice", [3]), ("bob", [1, 3])):
            arguments = {"source": {"path": f"/home/{name}/proj/train.py"},
                         "breakpoints": [{"line": line} for line in lines]}  # fmt: skip
            request = Request(seq=1, command="setBreakpoints", arguments=arguments)
            given.append((await muxes[len(given)].handle(request)).body["breakpoints"])
        assert [[b["id"] for b in answer] for answer in given] == [[1], [1, 2]]
        # The worker has one list for the file: the union.
        assert peer.breakpoint_requests[-1] == {
            "source": {"path": f"{PKG}/train.py"}, "breakpoints": [{"line": 3}, {"line": 1}]
        }  # fmt: skip
        worker_id = 102  # the peer's id for line 3 in its last answer (101 was alice's alone)
        source = {"path": f"{PKG}/train.py"}
        changed: dict[str, Any] = {
            "reason": "changed",
            "breakpoint": {"id": worker_id, "verified": False, "line": 3, "source": source,
                           "message": "moved"},
        }  # fmt: skip
        pristine = copy.deepcopy(changed)
        peer.write(event("breakpoint", changed), event("output", {"output": "x", "source": source}))
        await until(lambda: all(len(shown(name, "output")) for name in sent))

        for name in sent:
            assert shown(name, "breakpoint")["breakpoint"]["source"]["path"] == (
                f"/home/{name}/proj/train.py"
            )
            assert shown(name, "breakpoint")["breakpoint"]["verified"] is False
            assert shown(name, "output")["source"]["path"] == f"/home/{name}/proj/train.py"
        assert shown("alice", "breakpoint")["breakpoint"]["id"] == 1
        assert shown("bob", "breakpoint")["breakpoint"]["id"] == 2
        # The upstream's own copy of its stop, replayed to clients that join later, is intact.
        stop = upstream.stops.top()
        assert stop is not None and stop.body == {"reason": "breakpoint", "threadId": 1}
        assert changed == pristine
        for mux in muxes:
            mux.close()


async def test_a_thread_that_exits_takes_its_stop_with_it() -> None:
    async with held_peer() as (peer, upstream):
        peer.write(event("stopped", {"reason": "breakpoint", "threadId": 2}))
        await until(lambda: 2 in upstream.stops)
        top = upstream.stops.top()
        assert top is not None and top.body["threadId"] == 2
        peer.write(event("thread", {"reason": "exited", "threadId": 2}))
        await until(lambda: 2 not in upstream.stops)
        top = upstream.stops.top()
        assert top is not None and top.body["threadId"] == 1  # a thread that still exists
        assert upstream.state is State.STOPPED
