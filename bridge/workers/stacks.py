"""Every rank's stack at once, merged, as parallel debuggers show a job: identical paths of
many workers collapse into one branch with the list of its workers, and where they diverge the
tree branches. The root's children are the outermost frames.

Held workers tell their stack over their debugpy connection; every other worker running a task
is read on its node with py-spy (:mod:`raydap.bridge.cluster.remote_stacks`)."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field

from raydap.adapter import State, UpstreamError
from raydap.bridge.cluster.dashboard import DashboardError, TaskRow, WorkerRow
from raydap.bridge.cluster.pyspy import Frame, main_thread
from raydap.bridge.cluster.remote_stacks import RemoteStacks, Target
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.records import BreakpointRecord

#: Stacks deeper than this are cut at the outermost end (the frames nearest the stop stay).
MAX_FRAMES = 200
#: How long one worker may take to report its stack.
PER_WORKER_TIMEOUT = 5.0


class StackNode(BaseModel):
    function: str
    path: str
    line: int
    workers: list[str] = Field(default_factory=list)
    children: list[StackNode] = Field(default_factory=list)


def merge(stacks: dict[str, list[Frame]]) -> StackNode:
    """One tree of many stacks, each given innermost frame first (as DAP reports them).
    Frames are the same where file and line are: debugpy names a method ``step`` and py-spy
    ``Worker.step``, and the fuller name is kept."""
    root = StackNode(function="", path="", line=0)
    for worker, frames in stacks.items():
        root.workers.append(worker)
        node = root
        for frame in reversed(frames[:MAX_FRAMES]):
            child = next(
                (c for c in node.children if (c.path, c.line) == (frame.path, frame.line)), None
            )
            if child is None:
                child = StackNode(function=frame.function, path=frame.path, line=frame.line)
                node.children.append(child)
            elif len(frame.function) > len(child.function):
                child.function = frame.function
            child.workers.append(worker)
            node = child
    _order(root)
    return root


def _order(node: StackNode) -> None:
    """Largest groups first, so the common path reads top to bottom."""
    node.children.sort(key=lambda c: (-len(c.workers), c.path, c.line))
    for child in node.children:
        _order(child)


async def _held_stack(holder: Holder, rid: str) -> list[Frame]:
    upstream = holder.upstreams.get(rid)
    if upstream is None or upstream.state is not State.STOPPED:
        raise UpstreamError("not paused: its stack can be read only while it is stopped")
    _, frames = await asyncio.wait_for(upstream.stack(levels=MAX_FRAMES), PER_WORKER_TIMEOUT)
    return innermost_first(
        [
            Frame(
                function=str(f.get("name") or "?"),
                path=str((f.get("source") or {}).get("path") or "<unknown>"),
                line=int(f.get("line") or 0),
            )
            for f in frames
        ]
    )


_POST_MORTEM = " (Current frame)"


def innermost_first(frames: list[Frame]) -> list[Frame]:
    """A stack innermost frame first. At a post-mortem stop debugpy lists the frame that
    caught the exception (named ``... (Current frame)``) and then the traceback, outermost
    first: turned round here, so the frame that raised is innermost, as everywhere else."""
    if not frames or not frames[0].function.endswith(_POST_MORTEM):
        return frames
    caught = frames[0].model_copy(
        update={"function": frames[0].function.removesuffix(_POST_MORTEM)}
    )
    return [*reversed(frames[1:]), caught]


def running_record(task: TaskRow, worker: WorkerRow) -> BreakpointRecord:
    """A worker running a task, named with the same id and fields as a paused one."""
    return BreakpointRecord(
        id=record_id(worker.worker_id), state="running", job_id=task.job_id,
        task_name=task.name or task.func_or_class_name, task_id=task.task_id,
        actor_id=task.actor_id, node_id=worker.node_id, node_ip=worker.ip, pid=worker.pid,
        worker_id=worker.worker_id, worker_type=worker.worker_type, paused_since=0.0,
    )  # fmt: skip


async def _running(
    holder: Holder, where: WorkerFilter, remote: RemoteStacks
) -> tuple[list[BreakpointRecord], str | None]:
    """The workers running a task that nobody holds, or why they could not be listed."""
    try:
        rows = await remote.dashboard.running_tasks()
    except DashboardError as exc:
        return [], str(exc)
    records = [running_record(task, worker) for task, worker in rows]
    return [
        r for r in records
        if r.id not in _paused(holder) and where.matches(r)
        and not (r.task_name or "").startswith("raydap.")  # our own pinned tasks
    ], None  # fmt: skip


def _paused(holder: Holder) -> set[str]:
    """Held workers that are stopped: they tell their stack over debugpy (a held worker that
    runs is read like any other)."""
    return {rid for rid, up in holder.upstreams.items() if up.state is State.STOPPED}


async def stacks(
    holder: Holder,
    where: WorkerFilter,
    remote: RemoteStacks | None = None,
    all_threads: bool = False,
) -> dict[str, Any]:
    """``{"tree", "workers", "failed"}`` for the held workers the filter matches and (with
    ``remote``) every other worker running a task, read in parallel; a worker that cannot be
    read is listed under ``failed`` with the reason. With ``all_threads``, each thread of a
    running worker is its own stack, named ``ID/thread``."""
    paused = _paused(holder)
    held = [r for r in holder.registry.records() if r.id in paused and where.matches(r)]
    running, unlisted = await _running(holder, where, remote) if remote else ([], None)
    targets = {r.id: Target(r.node_id or "", r.pid or 0) for r in running}
    outcomes, remote_outcomes = await asyncio.gather(
        asyncio.gather(*(_held_stack(holder, r.id) for r in held), return_exceptions=True),
        remote.read(targets) if remote else asyncio.sleep(0, {}),
    )
    read: dict[str, list[Frame]] = {}
    failed: list[dict[str, str]] = []
    if unlisted:
        failed.append({"id": "*", "reason": f"running workers could not be listed: {unlisted}"})
    for record, outcome in zip(held, outcomes, strict=True):
        if isinstance(outcome, list):
            read[record.id] = outcome
        elif isinstance(outcome, (UpstreamError, asyncio.TimeoutError)):
            reason = str(outcome) or f"no answer within {PER_WORKER_TIMEOUT:g} s"
            failed.append({"id": record.id, "reason": reason})
        else:
            raise outcome
    for record in running:
        found = remote_outcomes.get(record.id, "no answer")
        if isinstance(found, str):
            failed.append({"id": record.id, "reason": found})
        elif all_threads:
            read.update({f"{record.id}/{t.name}": t.frames for t in found})
        else:
            read[record.id] = main_thread(found, record.pid or 0).frames
    shown = {key.split("/", 1)[0] for key in read}
    return {
        "tree": merge(read).model_dump(),
        "workers": [r.model_dump(mode="json") for r in (*held, *running) if r.id in shown],
        "failed": failed,
    }
