"""Every rank's stack at once, merged, as parallel debuggers show a job: identical paths of
many workers collapse into one branch with the list of its workers, and where they diverge the
tree branches. The root's children are the outermost frames."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, Field

from raydap.adapter import State, UpstreamError
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import Holder

#: Stacks deeper than this are cut at the outermost end (the frames nearest the stop stay).
MAX_FRAMES = 200
#: How long one worker may take to report its stack.
PER_WORKER_TIMEOUT = 5.0


class Frame(BaseModel):
    function: str
    path: str
    line: int


class StackNode(BaseModel):
    function: str
    path: str
    line: int
    workers: list[str] = Field(default_factory=list)
    children: list[StackNode] = Field(default_factory=list)


def merge(stacks: dict[str, list[Frame]]) -> StackNode:
    """One tree of many stacks, each given innermost frame first (as DAP reports them)."""
    root = StackNode(function="", path="", line=0)
    for worker, frames in stacks.items():
        root.workers.append(worker)
        node = root
        for frame in reversed(frames[:MAX_FRAMES]):
            child = next(
                (c for c in node.children
                 if (c.function, c.path, c.line) == (frame.function, frame.path, frame.line)),
                None,
            )  # fmt: skip
            if child is None:
                child = StackNode(function=frame.function, path=frame.path, line=frame.line)
                node.children.append(child)
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
    return [
        Frame(
            function=str(f.get("name") or "?"),
            path=str((f.get("source") or {}).get("path") or "<unknown>"),
            line=int(f.get("line") or 0),
        )
        for f in frames
    ]


async def stacks(holder: Holder, where: WorkerFilter) -> dict[str, Any]:
    """``{"tree", "workers", "failed"}`` for the held workers the filter matches, read in
    parallel; a worker that cannot be read is listed under ``failed`` with the reason."""
    records = [
        r for r in holder.registry.records()
        if r.id in holder.upstreams and where.matches(r)
    ]  # fmt: skip
    outcomes = await asyncio.gather(
        *(_held_stack(holder, r.id) for r in records), return_exceptions=True
    )
    read: dict[str, list[Frame]] = {}
    failed: list[dict[str, str]] = []
    for record, outcome in zip(records, outcomes, strict=True):
        if isinstance(outcome, list):
            read[record.id] = outcome
        elif isinstance(outcome, (UpstreamError, asyncio.TimeoutError)):
            reason = str(outcome) or f"no answer within {PER_WORKER_TIMEOUT:g} s"
            failed.append({"id": record.id, "reason": reason})
        else:
            raise outcome
    return {
        "tree": merge(read).model_dump(),
        "workers": [r.model_dump(mode="json") for r in records if r.id in read],
        "failed": failed,
    }
