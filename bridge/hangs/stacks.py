"""Every rank's stack at once, merged (:mod:`.stack_tree`), with what each rank holds.

Held workers that are paused tell their stack and locals over their debugpy connection, and
so do held live workers that run (:mod:`.live_stacks`), without pausing; every other worker
running a task, and every held child process of one that runs, is read on its node with py-spy
(:mod:`raydap.bridge.cluster.remote_stacks`), which reads locals without pausing it. Ray's
and Python's own frames are folded unless asked for (:func:`.frames.fold`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from raydap.adapter import State, Upstream, UpstreamError
from raydap.adapter.errors import Kind
from raydap.bridge.cluster.dashboard import DashboardError, TaskRow, WorkerRow
from raydap.bridge.cluster.pyspy import Frame, main_thread, short
from raydap.bridge.cluster.remote_stacks import Reading, RemoteStacks, Target
from raydap.bridge.hangs.frames import fold
from raydap.bridge.hangs.live_stacks import read_running
from raydap.bridge.hangs.stack_groups import by_coordinate
from raydap.bridge.hangs.stack_tree import MAX_FRAMES, innermost_first, merge
from raydap.bridge.workers import meshes, ranks
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.naming import from_task
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.live import IDENTITY_VARIABLES
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor

#: How long one worker may take to report its stack.
PER_WORKER_TIMEOUT = 5.0
#: A paused worker's locals are read for this many of its innermost shown frames.
LOCALS_FRAMES = 8
MAX_LOCALS = 64


@dataclass(frozen=True)
class StackOptions:
    """What ``/api/v1/stacks`` was asked for besides the filter."""

    all_threads: bool = False
    #: Each frame's local variables (py-spy ``--locals``; debugpy for paused workers).
    locals: bool = False
    #: Native frames of running workers (py-spy ``--native``).
    native: bool = False
    #: Ray's and Python's own frames too.
    all_frames: bool = False
    #: What locals hide, for every role (py-spy's reprs hold what the program holds).
    redactor: Redactor = DEFAULT_REDACTOR
    #: A mesh dimension (``pp``): the stacks merged apart for each coordinate along it too.
    by: str | None = None

    @property
    def py_spy_flags(self) -> tuple[str, ...]:
        return (*(["--locals"] if self.locals else []), *(["--native"] if self.native else []))


async def _held_stack(holder: Holder, rid: str, options: StackOptions) -> list[Frame]:
    upstream = holder.upstreams.get(rid)
    if upstream is None or upstream.state is not State.STOPPED:
        raise UpstreamError(
            "not paused: its stack can be read only while it is stopped", Kind.NOT_PAUSED
        )
    _, listed = await asyncio.wait_for(upstream.stack(levels=MAX_FRAMES), PER_WORKER_TIMEOUT)
    frames = innermost_first([
        Frame(
            function=str(f.get("name") or "?"),
            path=str((f.get("source") or {}).get("path") or "<unknown>"),
            line=int(f.get("line") or 0),
        )
        for f in listed
    ])  # fmt: skip
    shown = frames if options.all_frames else fold(frames)
    if not options.locals:
        return shown
    ids = {(f.get("name"), f.get("line")): f["id"] for f in listed if "id" in f}
    nearest = shown[:LOCALS_FRAMES]
    read = await asyncio.gather(
        *(_frame_locals(upstream, ids.get((f.function, f.line))) for f in nearest)
    )
    with_locals = [
        f if found is None else f.model_copy(update={"locals": found})
        for f, found in zip(nearest, read, strict=True)
    ]
    return [*with_locals, *shown[LOCALS_FRAMES:]]


async def _frame_locals(upstream: Upstream, frame_id: Any) -> dict[str, str] | None:
    """A paused frame's locals through debugpy (its first scope), reprs cut short; None
    where they could not be read (the stack is still shown)."""
    if frame_id is None:
        return None
    try:
        return await _read_locals(upstream, frame_id)
    except UpstreamError:
        return None


async def _read_locals(upstream: Upstream, frame_id: Any) -> dict[str, str] | None:
    scopes = await upstream.request("scopes", {"frameId": frame_id})
    found = (scopes.body or {}).get("scopes") or [] if scopes.success else []
    if not found or not found[0].get("variablesReference"):
        return None
    answer = await upstream.request(
        "variables", {"variablesReference": found[0]["variablesReference"], "count": MAX_LOCALS}
    )
    if not answer.success:
        return None
    return {
        str(v.get("name")): short(str(v.get("value")))
        for v in ((answer.body or {}).get("variables") or [])[:MAX_LOCALS]
        if not str(v.get("name", "")).startswith("(")  # debugpy's "(return)" and groups
        and v.get("presentationHint", {}).get("kind") not in ("class", "method")
        and str(v.get("name")) not in ("special variables", "function variables")
    }


def running_record(task: TaskRow, worker: WorkerRow) -> BreakpointRecord:
    """A worker running a task, named with the same id and fields as a paused one."""
    return BreakpointRecord(
        id=record_id(worker.worker_id), state=RecordState.RUNNING, node_id=worker.node_id,
        node_ip=worker.ip, pid=worker.pid, worker_id=worker.worker_id,
        worker_type=worker.worker_type, paused_since=0.0, **from_task(task),
    )  # fmt: skip


async def running_workers(
    holder: Holder, where: WorkerFilter, remote: RemoteStacks
) -> tuple[list[BreakpointRecord], str | None]:
    """The workers running a task that are not paused (a held live worker's rank taken from
    its record), or why they could not be listed."""
    try:
        rows = await remote.dashboard.running_tasks()
    except DashboardError as exc:
        return [], str(exc)
    paused = _paused(holder)
    verl_ranks = await _verl_ranks(remote, rows)
    records = []
    for task, worker in rows:
        record = running_record(task, worker)
        held = holder.registry.get(record.id)
        rank = held.rank if held is not None else None
        rank = verl_ranks.get(task.actor_id or "") if rank is None else rank
        if rank is not None:
            record = record.model_copy(update={"rank": rank})
        if (
            record.id not in paused
            and where.matches(record)
            and not (record.task_name or "").startswith("raydap.")  # our own pinned tasks
        ):
            records.append(record)
    return records, None


async def _verl_ranks(
    remote: RemoteStacks, rows: list[tuple[TaskRow, WorkerRow]]
) -> dict[str, int]:
    """The ranks of verl's worker group actors among the running tasks, by actor id, from
    their names (one dashboard query, only where such actors run)."""
    classes = {
        (t.name or "").split(".", 1)[0] for t, _ in rows
        if t.actor_id and (t.name or "").split(".", 1)[0].endswith(ranks.VERL_CLASS_SUFFIX)
    }  # fmt: skip
    found: dict[str, int] = {}
    for class_name in classes:
        try:
            actors = await remote.dashboard.alive_actors(class_name)
        except DashboardError:
            continue
        for actor in actors:
            if (rank := ranks.rank_from_actor_name(actor.name)) is not None:
                found[actor.actor_id] = rank
    return found


def _running_children(
    holder: Holder, where: WorkerFilter, paused: set[str]
) -> list[BreakpointRecord]:
    """Held children of workers that run: read with py-spy like the workers (Ray lists no
    task for them)."""
    return [
        r for r in holder.registry.records()
        if r.parent is not None and r.id not in paused and r.pid and where.matches(r)
    ]  # fmt: skip


def _paused(holder: Holder) -> set[str]:
    """Held workers that are stopped: they tell their stack over debugpy (a held worker that
    runs is read like any other)."""
    return {rid for rid, up in holder.upstreams.items() if up.state is State.STOPPED}


async def stacks(
    holder: Holder,
    where: WorkerFilter,
    remote: RemoteStacks | None = None,
    options: StackOptions = StackOptions(),
) -> dict[str, Any]:
    """``{"tree", "workers", "failed", "all_frames"}`` for the held workers the filter
    matches and (with ``remote``) every other worker running a task, read in parallel; a
    worker that cannot be read is listed under ``failed`` with the reason. With
    ``all_threads``, each thread of a running worker is its own stack, named ``ID/thread``.
    With ``by``, also ``"groups"``: the trees of each coordinate along that dimension."""
    paused = _paused(holder)
    held = [r for r in holder.registry.records() if r.id in paused and where.matches(r)]
    running, unlisted = await running_workers(holder, where, remote) if remote else ([], None)
    if remote:
        running += _running_children(holder, where, paused)
    targets = {r.id: Target(r.node_id or "", r.pid or 0) for r in running}
    outcomes, remote_outcomes = await asyncio.gather(
        asyncio.gather(*(_held_stack(holder, r.id, options) for r in held), return_exceptions=True),
        read_running(holder, remote, targets, options.py_spy_flags, IDENTITY_VARIABLES)
        if remote
        else asyncio.sleep(0, {}),
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
    shown_running = []
    for record in running:
        found = remote_outcomes.get(record.id, "no answer")
        if isinstance(found, str):
            failed.append({"id": record.id, "reason": found})
            continue
        shown_running.append(_with_rank(record, found))
        main = [main_thread(found.threads, record.pid or 0)]
        threads = found.threads if options.all_threads else main
        for thread in threads:
            key = f"{record.id}/{thread.name}" if options.all_threads else record.id
            read[key] = thread.frames if options.all_frames else fold(thread.frames)
    shown = {key.split("/", 1)[0] for key in read}
    if options.locals:
        read = {key: _redacted(frames, options.redactor) for key, frames in read.items()}
    workers = [r for r in (*held, *shown_running) if r.id in shown]
    answer: dict[str, Any] = {
        "tree": merge(read).model_dump(exclude_none=True),
        "workers": [r.model_dump(mode="json") for r in workers],
        "failed": failed,
        "all_frames": options.all_frames,
    }
    if options.by is not None:
        coords = {r.id: meshes.coordinate(r.mesh, options.by) for r in workers}
        answer["by"] = options.by
        answer["groups"] = [g.model_dump(exclude_none=True) for g in by_coordinate(read, coords)]
    return answer


def _redacted(frames: list[Frame], redactor: Redactor) -> list[Frame]:
    return [
        f if f.locals is None else f.model_copy(update={"locals": redactor.mapping(f.locals)})
        for f in frames
    ]


def _with_rank(record: BreakpointRecord, reading: Reading) -> BreakpointRecord:
    """A running worker's rank from its environment, where its record had none."""
    if record.rank is not None:
        return record
    rank = ranks.rank_from_environment(reading.environment)
    return record if rank is None else record.model_copy(update={"rank": rank})
