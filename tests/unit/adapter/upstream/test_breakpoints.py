"""The one owner of a worker's breakpoints, against a worker that answers as debugpy does: one
list per file, the last request wins, a fresh id for every breakpoint it is given."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from raydap.adapter.upstream.books import spec_of
from raydap.adapter.upstream.breakpoints import KEPT, WorkerBreakpoints
from raydap.protocol import Response

PATH = "/job/train.py"
KEY = ("setBreakpoints", PATH)


class Debugpy:
    """A worker's lists as debugpy keeps them; ``refusing`` makes it refuse every request."""

    def __init__(self) -> None:
        self.lists: dict[str, list[int]] = {}
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.refusing: str | None = None
        self._ids = itertools.count(1)

    async def ask(self, command: str, arguments: dict[str, Any]) -> Response:
        self.sent.append((command, arguments))
        if self.refusing:
            return Response(request_seq=1, success=False, command=command, message=self.refusing)
        lines = [b["line"] for b in arguments["breakpoints"]]
        self.lists[arguments["source"]["path"]] = lines
        answers = [{"id": next(self._ids), "verified": True, "line": line} for line in lines]
        return Response(request_seq=1, success=True, command=command,
                        body={"breakpoints": answers})  # fmt: skip


def specs(*lines: int) -> list[str]:
    return [spec_of({"line": line}) for line in lines]


async def test_two_sessions_share_a_file_and_each_is_answered_for_its_own() -> None:
    worker = Debugpy()
    owner = WorkerBreakpoints(worker.ask)
    base = {"source": {"path": PATH}}

    editor = await owner.give("editor", KEY, specs(10, 20), base)
    agent = await owner.give("agent", KEY, specs(20, 30), base)

    assert worker.lists[PATH] == [10, 20, 30]  # the agent's list did not erase the editor's
    assert [share["line"] for share in editor.shares] == [10, 20]
    assert [share["line"] for share in agent.shares] == [20, 30]
    assert editor.refused is None and agent.refused is None
    hit = agent.shares[1]["id"]
    assert owner.spec_of_id(hit) == (KEY, spec_of({"line": 30}))


async def test_a_session_that_leaves_a_running_worker_takes_back_only_its_share() -> None:
    worker = Debugpy()
    owner = WorkerBreakpoints(worker.ask)
    await owner.give("editor", KEY, specs(10), {})
    await owner.give("agent", KEY, specs(30), {})

    owner.take_back("editor", resend=True)
    await asyncio.sleep(0)  # the list goes out in the background: one turn of the loop
    assert worker.lists[PATH] == [30]

    sent = len(worker.sent)
    owner.take_back("agent", resend=False)  # a paused worker keeps its list for its next stop
    await asyncio.sleep(0)
    assert len(worker.sent) == sent and worker.lists[PATH] == [30]
    await owner.give("editor", KEY, [], {})
    assert worker.lists[PATH] == []  # the next change sends the union, the agent's gone


async def test_a_refused_list_says_why_for_each_breakpoint_of_the_session() -> None:
    worker = Debugpy()
    worker.refusing = "worker w1 is gone (exited)"
    owner = WorkerBreakpoints(worker.ask)

    given = await owner.give("editor", KEY, specs(10, 20), {})

    assert given.refused == "worker w1 is gone (exited)"
    assert given.shares == [{"verified": False, "message": "worker w1 is gone (exited)"}] * 2


async def test_kept_breakpoints_stay_beside_capture_points_until_a_session_sets_the_file() -> None:
    """A restarted bridge gives a live worker its kept list first; a capture point set outside
    any session joins it, and a session's own list replaces it, as it would in debugpy."""
    worker = Debugpy()
    owner = WorkerBreakpoints(worker.ask)
    base = {"source": {"path": PATH}}

    await owner.give(KEPT, KEY, specs(10), base)
    point = spec_of({"line": 30, "mode": "capture", "capture": {"id": "cp-0123456789"}})
    await owner.give("ci (HTTP)", KEY, [point], base, beside_kept=True)
    assert worker.lists[PATH] == [10, 30]

    await owner.give("editor", KEY, specs(20), base)
    assert worker.lists[PATH] == [30, 20]  # the kept line 10 is the editor's to keep or drop


async def test_a_handed_over_workers_kept_list_is_claimed_not_sent_and_points_join_it() -> None:
    worker = Debugpy()
    owner = WorkerBreakpoints(worker.ask)
    base = {"source": {"path": PATH}}

    owner.claim(KEPT, KEY, specs(10))  # it holds line 10 already: nothing is sent
    assert worker.sent == []
    point = spec_of({"line": 30, "mode": "capture", "capture": {"id": "cp-0123456789"}})
    await owner.give("ci (HTTP)", KEY, [point], base, beside_kept=True)
    assert worker.lists[PATH] == [10, 30]


async def test_a_list_that_can_stop_the_worker_passes_its_gate_first_and_a_capture_never() -> None:
    """Whatever door gives it, a list with a breakpoint that stops waits for the bridge's
    gate (the peers' collective timeouts raised) before the worker has it; capture points and
    log points never stop the worker, so they never wait, and never count as breakpoints."""
    worker = Debugpy()
    opened: list[int] = []

    async def gate() -> list[str]:
        opened.append(len(worker.sent))  # what the worker had been sent by then
        return ["Rank.train (rank 3)"]

    owner = WorkerBreakpoints(worker.ask, gate=gate)
    base = {"source": {"path": PATH}}
    point = spec_of({"line": 30, "mode": "capture", "capture": {"id": "cp-0123456789"}})
    logs = spec_of({"line": 31, "logMessage": "loss={loss}"})
    given = await owner.give("ci (HTTP)", KEY, [point, logs], base)
    assert opened == [] and given.unprotected == () and not owner.book.stops()

    given = await owner.give("editor", KEY, specs(12), base)
    assert opened == [1]  # before the worker was sent the list with line 12
    assert given.unprotected == ("Rank.train (rank 3)",) and owner.book.stops()
    assert worker.lists[PATH] == [30, 31, 12]
