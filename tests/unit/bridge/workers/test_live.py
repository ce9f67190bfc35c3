"""Finding live workers and keeping their breakpoints (marks in memory, no Ray)."""

from __future__ import annotations

from typing import Any

from raydap.adapter.upstream.breakpoints import WorkerBreakpoints
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.cluster.live_marks import LiveMark
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.live import LiveWorkers
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.protocol import Response
from tests.unit.bridge.workers.marks import MemoryMarks
from tests.waiting import until


class CountingMarks(MemoryMarks):
    def __init__(self, marks: dict[str, LiveMark]) -> None:
        super().__init__(marks)
        self.asked: list[list[str]] = []

    async def read(self, worker_ids: list[str]) -> dict[str, LiveMark]:
        self.asked.append(worker_ids)
        return await super().read(worker_ids)


class RecordingHolder(Holder):
    """Records what it is asked to hold instead of connecting."""

    def __init__(self) -> None:
        super().__init__(Registry())
        self.held: list[tuple[str, LiveMark | None]] = []

    def hold(self, paused: PausedWorker, live: LiveMark | None = None) -> None:
        self.held.append((paused.worker.worker_id, live))


def row(worker_id: str) -> WorkerRow:
    return WorkerRow(worker_id=worker_id, ip="127.0.0.1", pid=7, debugger_port=5678)


async def test_marked_workers_are_held_live_and_unmarked_ones_are_asked_about_once() -> None:
    holder = RecordingHolder()
    marks = CountingMarks({"a" * 56: LiveMark(pid=7, cwd="/srv/job")})
    rows = [row("a" * 56), row("b" * 56)]

    async def listeners() -> list[WorkerRow]:
        return rows

    live = LiveWorkers(holder, listeners, marks)
    await live.poll_once()
    assert holder.held == [("a" * 56, LiveMark(pid=7, cwd="/srv/job"))]
    assert holder.live_hooks is live
    rows = [row("b" * 56)]
    await live.poll_once()
    await live.poll_once()
    assert marks.asked == [["a" * 56, "b" * 56]]  # b paused once and ran on: not a live one
    rows = []
    await live.poll_once()
    rows = [row("b" * 56)]  # the same id again would be a new process: asked again
    await live.poll_once()
    assert marks.asked[-1] == ["b" * 56]


async def test_breakpoints_are_kept_per_file_saved_once_per_burst_and_given_back() -> None:
    marks = MemoryMarks()
    first = LiveWorkers(RecordingHolder(), listeners=_none, marks=marks, save_after=0.01)
    line = {"source": {"path": "/srv/job/train.py"}, "breakpoints": [{"line": 12}]}
    other = {"source": {"path": "/srv/job/data.py"}, "breakpoints": [{"line": 3}]}
    first.keep("setBreakpoints", line)
    first.keep("setBreakpoints", other)
    first.keep("setFunctionBreakpoints", {"breakpoints": [{"name": "step"}]})
    first.keep("setExceptionBreakpoints", {"filters": []})  # kept: a choice, not a clearing
    await until(lambda: len(marks.breakpoints) == 4, what="four lists saved")

    first.keep("setBreakpoints", {"source": {"path": "/srv/job/data.py"}, "breakpoints": []})
    first.keep("setFunctionBreakpoints", {"breakpoints": []})

    def kept() -> set[tuple[str, str]]:
        return {(b["command"], str(b["arguments"].get("source"))) for b in marks.breakpoints}

    await until(lambda: len(marks.breakpoints) == 2, what="the cleared lists dropped")
    assert kept() == {
        ("setBreakpoints", str(line["source"])),
        ("setExceptionBreakpoints", "None"),
    }

    restarted = LiveWorkers(RecordingHolder(), listeners=_none, marks=marks)
    await restarted.restore()
    assert restarted.configuration == first.configuration


async def test_kept_breakpoints_that_are_not_json_objects_are_ignored() -> None:
    marks = MemoryMarks()
    marks.breakpoints = [{"command": 3}, {"command": "setBreakpoints", "arguments": []}]
    live = LiveWorkers(RecordingHolder(), listeners=_none, marks=marks)
    await live.restore()
    assert live.configuration == {}


class LaterWorker:
    """A live worker being held: its one owner of breakpoints, with a gate that records."""

    def __init__(self) -> None:
        self.lists: list[list[int]] = []
        self.gated = 0
        self.breakpoints = WorkerBreakpoints(self._debugpy, gate=self._gate)

    async def _gate(self) -> list[str]:
        self.gated += 1
        return []

    async def _debugpy(self, command: str, arguments: dict[str, Any]) -> Response:
        self.lists.append([b["line"] for b in arguments["breakpoints"]])
        answers = [{"id": 1, "verified": True} for _ in arguments["breakpoints"]]
        return Response(request_seq=1, success=True, command=command,
                        body={"breakpoints": answers})  # fmt: skip

    async def request(self, command: str, arguments: dict[str, Any]) -> Response:
        return Response(request_seq=1, success=True, command=command)


async def test_a_worker_held_later_gets_its_own_jobs_breakpoints_through_the_gate() -> None:
    """Issue "fleet": kept breakpoints were one list for every job, so a later worker of any
    job was given every job's, and a stop could reach it without its peers raised."""
    holder = RecordingHolder()
    live = LiveWorkers(holder, listeners=_none, marks=MemoryMarks(), save_after=0.01)
    line = {"source": {"path": "/srv/job/train.py"}, "breakpoints": [{"line": 12}]}
    live.keep("setBreakpoints", line, "01")
    for job in ("01", "02"):
        holder.registry.put(BreakpointRecord(id=f"{job}w", node_ip="10.0.0.1", paused_since=0,
                                             live=True, job_id=job))  # fmt: skip
    ours, theirs = LaterWorker(), LaterWorker()
    await live.configure("01w", ours)  # type: ignore[arg-type]
    await live.configure("02w", theirs)  # type: ignore[arg-type]
    assert (ours.lists, ours.gated) == ([[12]], 1)
    assert (theirs.lists, theirs.gated) == ([], 0)

    # A worker Ray started ahead for job 01 is listed under no job until it runs a task of it:
    # its mark names the job, and the job's breakpoints are its own
    rows = [row("c" * 56)]

    async def listeners() -> list[WorkerRow]:
        return rows

    marked = LiveWorkers(holder, listeners, MemoryMarks({"c" * 56: LiveMark(pid=7, job="01")}))
    marked.configuration = live.configuration
    await marked.poll_once()
    ahead = LaterWorker()
    await marked.configure(record_id("c" * 56), ahead)  # type: ignore[arg-type]
    assert ahead.lists == [[12]]


async def _none() -> list[Any]:
    return []
