"""Commands over many held workers at once: continue, pause, evaluate, snapshot.

SPMD jobs (FSDP ranks, NCCL collectives) hang when one rank runs while the others stay paused,
so these act on every matching worker concurrently rather than one after another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from raydap.adapter import State, Upstream, UpstreamError
from raydap.adapter.errors import Kind
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import Holder
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor

T = TypeVar("T")


def _stopped(holder: Holder, where: WorkerFilter) -> list[tuple[str, Upstream]]:
    chosen = []
    for record in holder.registry.records():
        upstream = holder.upstreams.get(record.id)
        if upstream and upstream.state is State.STOPPED and where.matches(record):
            chosen.append((record.id, upstream))
    return chosen


async def _each(
    chosen: list[tuple[str, Upstream]], ask: Callable[[Upstream], Awaitable[T]]
) -> list[tuple[str, T | UpstreamError]]:
    """Ask every chosen worker at once; a worker that fails gives its error, not the group's."""
    outcomes = await asyncio.gather(*(ask(u) for _, u in chosen), return_exceptions=True)
    answers: list[tuple[str, T | UpstreamError]] = []
    for (rid, _), outcome in zip(chosen, outcomes, strict=True):
        if isinstance(outcome, BaseException) and not isinstance(outcome, UpstreamError):
            raise outcome
        answers.append((rid, outcome))
    return answers


async def continue_all(holder: Holder, where: WorkerFilter) -> list[str]:
    """Resume every matching held worker at once; returns the ids resumed."""
    ids = [rid for rid, _ in _stopped(holder, where)]
    results = await asyncio.gather(*(holder.resume(rid) for rid in ids), return_exceptions=True)
    resumed = zip(ids, results, strict=True)
    return [rid for rid, result in resumed if not isinstance(result, BaseException)]


async def pause_held(upstream: Upstream) -> None:
    """Pause a held worker that runs (a live one) through its debugpy, at its current line:
    the ``stopped`` event then arrives on the held connection as any stop does."""
    threads = await upstream.request("threads")
    listed = (threads.body or {}).get("threads") or [] if threads.success else []
    main = next((t for t in listed if t.get("name") == "MainThread"), listed[0] if listed else {})
    response = await upstream.request("pause", {"threadId": main.get("id", 0)})
    if not response.success:
        raise UpstreamError(response.message or "debugpy refused to pause", Kind.REFUSED)


async def pause_all(holder: Holder, where: WorkerFilter) -> list[tuple[str, str | None]]:
    """Pause every matching held worker that runs, at once: each id, with why not if not."""
    chosen = [
        (record.id, upstream)
        for record in holder.registry.records()
        if (upstream := holder.upstreams.get(record.id)) is not None
        and upstream.state is State.RUNNING
        and where.matches(record)
    ]
    answers = await _each(chosen, pause_held)
    return [(rid, str(answer) if isinstance(answer, UpstreamError) else None)
            for rid, answer in answers]  # fmt: skip


async def frame_at(upstream: Upstream, index: int) -> dict[str, Any]:
    """Frame ``index`` (0: the innermost) of a paused worker's stopped thread."""
    _, frames = await upstream.stack(levels=index + 1)
    if index >= len(frames):
        raise UpstreamError(
            f"the stack has {len(frames)} frames: frame is 0 to {len(frames) - 1}", Kind.NOT_FOUND
        )
    return frames[index]


async def evaluate_in(
    upstream: Upstream, frame_id: int, expression: str, context: str = "repl"
) -> str:
    """``expression`` evaluated in a frame (debugpy's id) of a paused worker, as it shows it."""
    arguments = {"expression": expression, "frameId": frame_id, "context": context}
    response = await upstream.request("evaluate", arguments)
    if not response.success:
        raise UpstreamError(response.message or "evaluation failed", Kind.REFUSED)
    return str((response.body or {}).get("result", ""))


async def evaluate_one(upstream: Upstream, expression: str, frame: int = 0) -> str:
    """Evaluate in frame ``frame`` (0: the top) of a paused worker; UpstreamError if not."""
    return await evaluate_in(upstream, (await frame_at(upstream, frame))["id"], expression)


async def evaluate_all(
    holder: Holder, expression: str, where: WorkerFilter, frame: int = 0
) -> list[dict[str, str]]:
    """Evaluate in frame ``frame`` (0: the top) of every matching paused worker, side by side."""
    answers = await _each(_stopped(holder, where), lambda u: evaluate_one(u, expression, frame))
    return [
        {"id": rid, "error": str(a)} if isinstance(a, UpstreamError) else {"id": rid, "result": a}
        for rid, a in answers
    ]


async def _snapshot_one(upstream: Upstream, max_frames: int, redactor: Redactor) -> dict[str, Any]:
    thread_id, frames = await upstream.stack(levels=max_frames)
    scopes = await upstream.request("scopes", {"frameId": frames[0]["id"]})
    local_vars: dict[str, str] = {}
    for scope in (scopes.body or {}).get("scopes", [])[:1]:
        variables = await upstream.request(
            "variables", {"variablesReference": scope["variablesReference"]}
        )
        for var in (variables.body or {}).get("variables", []):
            local_vars[str(var.get("name"))] = str(var.get("value"))
    stack = [
        {
            "function": f.get("name"),
            "path": (f.get("source") or {}).get("path"),
            "line": f.get("line"),
        }
        for f in frames
    ]
    return {"thread_id": thread_id, "stack": stack, "locals": redactor.mapping(local_vars)}


async def snapshot(
    holder: Holder,
    where: WorkerFilter,
    max_frames: int = 50,
    redactor: Redactor = DEFAULT_REDACTOR,
) -> list[dict[str, Any]]:
    """Stacks and top-frame locals of every matching held worker (secrets hidden)."""
    answers = await _each(_stopped(holder, where), lambda u: _snapshot_one(u, max_frames, redactor))
    return [
        {"id": rid, "error": str(a)} if isinstance(a, UpstreamError) else {"id": rid, **a}
        for rid, a in answers
    ]
