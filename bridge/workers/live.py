"""Live workers: ``raydap.live`` workers held while they run, for their whole life.

Such a worker has its debugpy port open from the start. This finds the ones that are running
(their open port, and the mark :mod:`raydap.live` left in GCS beside it), has the holder attach
to each without pausing it, and keeps the breakpoints they were given, per job: every live
worker of the job held later gets them too (through the same gate as any stop:
:mod:`.collective_gate`), and they are kept in GCS so a bridge that restarts gives them back.
Another job's workers never get them.
A live worker's ``breakpoint()`` then arrives on the held connection at once, as a stop.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from raydap.adapter import Upstream, UpstreamError
from raydap.adapter.captures.points import unmerge
from raydap.adapter.upstream.books import BOOK_COMMANDS, set_arguments, spec_of
from raydap.adapter.upstream.breakpoints import KEPT
from raydap.bridge.cluster.dashboard import TaskRow, WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.cluster.live_marks import Marks
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.naming import from_task
from raydap.bridge.workers.ranked_breakpoints import Ranked, RankedBreakpoints
from raydap.bridge.workers.records import BreakpointRecord, RecordState

log = logging.getLogger(__name__)

#: Each kept configuration, by what a later one of the same kind replaces: ``(job, command,
#: path)``. DAP sets breakpoints per source file, and function and exception breakpoints as a
#: whole; each job has its own ("": workers of no known job).
ConfigurationKey = tuple[str, str, str]


def configuration_key(command: str, arguments: dict[str, Any], job: str = "") -> ConfigurationKey:
    source = arguments.get("source")
    path = source.get("path") if isinstance(source, dict) else None
    return job, command, str(path or "")


def clears(command: str, arguments: dict[str, Any]) -> bool:
    """Whether this configuration removes everything of its kind (nothing left to keep)."""
    if command == "setExceptionBreakpoints":
        return False  # an empty filter list is a choice to keep, unlike no breakpoints
    return not any(arguments.get(k) for k in ("breakpoints", "lines", "filters"))


def unranked(upstream: Upstream, command: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A breakpoint list as the job keeps it: without the shares given to a rank set only
    (:mod:`.ranked_breakpoints`), which its other ranks must never get."""
    if command not in BOOK_COMMANDS:
        return arguments
    source = arguments.get("source")
    path = str(source.get("path") or "") if isinstance(source, dict) else ""
    book = upstream.breakpoints.book
    key = (command, path)
    union = book.union(key, owners=lambda owner: not isinstance(owner, Ranked))
    if union == book.union(key):
        return arguments
    base = {k: v for k, v in arguments.items() if k != "breakpoints"}
    kept, _ = set_arguments(base, path, union, upstream.breakpoints.capture_settings)
    return kept


class LiveWorkers:
    """Finds live workers for the holder, and keeps the breakpoints they have."""

    def __init__(
        self,
        holder: Holder,
        listeners: Callable[[], Awaitable[list[WorkerRow]]],
        marks: Marks,
        *,
        running_tasks: Callable[[], Awaitable[list[tuple[TaskRow, WorkerRow]]]] | None = None,
        save_after: float = 0.2,
    ) -> None:
        """``listeners`` are running workers with an open debugger port, ``running_tasks``
        every running task with its worker (the dashboard's)."""
        self.holder = holder
        self._running_tasks = running_tasks
        self._listeners = listeners
        self._marks = marks
        self._save_after = save_after
        #: Workers with an open port and no mark (they paused once, then ran on): asked once.
        self._unmarked: set[str] = set()
        self.configuration: dict[ConfigurationKey, dict[str, Any]] = {}
        self._restored = False
        self._saving: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Breakpoints on rank sets: saved and taken back with the kept ones.
        self.ranked: RankedBreakpoints | None = None
        #: Told of each live worker held, after its kept breakpoints were given.
        self.also_held: list[Callable[[str, Upstream], None]] = []
        #: The job each live worker's mark names, by record id: its kept breakpoints are that
        #: job's. Not its record's job: a worker Ray started ahead for the job runs none of
        #: its tasks yet, and is listed under no job until it does.
        self._marked_jobs: dict[str, str] = {}
        holder.live_hooks = self

    async def restore_once(self) -> None:
        """:meth:`restore`, the first time only; a failure is said and started without."""
        if self._restored:
            return
        self._restored = True
        try:
            await self.restore()
        except Exception as exc:  # Ray's RPC errors: start without them, and say so
            log.warning("could not restore live breakpoints: %s", exc)

    async def restore(self) -> None:
        """Take back the breakpoints a previous bridge kept (before any worker is held)."""
        loaded = await self._marks.load_breakpoints()
        if self.ranked is not None:  # (items a bridge before rank sets ignores)
            taken = self.ranked.recall(i.get("ranked") for i in loaded if isinstance(i, dict))
            if taken:
                log.info("restored %d breakpoint settings on rank sets", taken)
        for item in loaded:
            command, arguments, job = item.get("command"), item.get("arguments"), item.get("job")
            if isinstance(command, str) and isinstance(arguments, dict):
                key = configuration_key(command, arguments, job if isinstance(job, str) else "")
                self.configuration[key] = arguments
        if self.configuration:
            log.info("restored %d live breakpoint settings", len(self.configuration))

    async def run(self, interval: float = 0.5) -> None:
        """Restore, then look for live workers every ``interval`` seconds, through outages."""
        await self.restore_once()
        problem = ""
        while True:
            try:
                await self.poll_once()
                problem = ""
            except Exception as exc:  # the dashboard's or GCS's; discovery reports outages
                if str(exc) != problem:
                    log.info("live discovery: %s (retrying)", exc)
                problem = str(exc)
            await asyncio.sleep(interval)

    async def poll_once(self) -> None:
        """Hold every running live worker not held yet, and name the ones that run a task."""
        await self._hold_new()
        await self._name_running()

    async def _name_running(self) -> None:
        """Name live workers that run, by their task: one listing for all of them (a paused
        worker is named when it stops, by :mod:`.keeper`)."""
        unnamed = {
            r.worker_id: r
            for r in self.holder.registry.records()
            if r.live and r.state == RecordState.RUNNING and r.task_id is None and r.worker_id
        }
        if not unnamed or self._running_tasks is None:
            return
        for task, worker in await self._running_tasks():
            record = unnamed.get(worker.worker_id)
            current = self.holder.registry.get(record.id) if record else None
            if current is not None and current.state == RecordState.RUNNING:
                named = current.model_copy(update=from_task(task))
                self.holder.registry.put(named)
                if (upstream := self.holder.upstreams.get(named.id)) is not None:
                    upstream.name = named.label  # what clients' messages call it

    async def _hold_new(self) -> None:
        rows = await self._listeners()
        present = {row.worker_id for row in rows}
        self._unmarked &= present  # forget workers that exited
        fresh = [r for r in rows if r.worker_id not in self._unmarked]
        fresh = [r for r in fresh if not self.holder.is_known(r.worker_id)]
        if not fresh:
            return
        marks = await self._marks.read([r.worker_id for r in fresh])
        now = time.time()
        for row in fresh:
            mark = marks.get(row.worker_id)
            if mark is None:
                self._unmarked.add(row.worker_id)
            elif not self.holder.is_known(row.worker_id):
                if mark.job:
                    self._marked_jobs[record_id(row.worker_id)] = mark.job
                self.holder.hold(PausedWorker(row, now), live=mark)

    # -- the holder's hooks -----------------------------------------------------------------

    def _job_of(self, rid: str) -> str:
        record = self.holder.registry.get(rid)
        return (record.job_id if record is not None else None) or self._marked_jobs.get(rid, "")

    def _kept_lists(self, job: str) -> list[tuple[tuple[str, str], list[str], dict[str, Any]]]:
        """The job's kept breakpoint lists: (key, the breakpoints as asked, the other
        arguments)."""
        return [
            (
                (command, path),
                [spec_of(b) for b in unmerge(arguments.get("breakpoints") or [])],
                {k: v for k, v in arguments.items() if k not in ("breakpoints", "lines")},
            )
            for (kept_for, command, path), arguments in list(self.configuration.items())
            if command in BOOK_COMMANDS and kept_for == job
        ]

    async def configure(self, rid: str, upstream: Upstream) -> None:
        """A live worker being attached gets its job's kept breakpoints before it runs on. Its
        breakpoint lists go through its one owner of breakpoints, as kept (:data:`KEPT`), so
        that capture points given it later join them rather than replace them, and a list
        that can stop it passes its gate first, as any other."""
        job = self._job_of(rid)
        for key, kept, base in self._kept_lists(job):
            given = await upstream.breakpoints.give(KEPT, key, kept, base)
            if given.refused:
                log.info("%s refused %s: %s", rid, key[0], given.refused)
        for (kept_for, command, _), arguments in list(self.configuration.items()):
            if command in BOOK_COMMANDS or kept_for != job:
                continue
            try:
                response = await upstream.request(command, arguments)
            except UpstreamError as exc:
                log.info("%s: could not restore %s: %s", rid, command, exc)
                return
            if not response.success:
                log.info("%s refused %s: %s", rid, command, response.message)

    def held(self, rid: str, upstream: Upstream) -> None:
        """A live worker is attached: what it is given from now on is kept. One a replaced
        bridge handed over holds the kept lists already: they are its :data:`KEPT` share."""
        for key, kept, _ in self._kept_lists(self._job_of(rid)):
            upstream.breakpoints.claim(KEPT, key, kept)
        upstream.on_configured = lambda command, arguments: self.keep(
            command, unranked(upstream, command, arguments), self._job_of(rid)
        )
        for hook in self.also_held:
            hook(rid, upstream)

    def released(self, record: BreakpointRecord) -> None:
        """A live worker is gone: its mark goes too."""
        self._marked_jobs.pop(record.id, None)
        if record.worker_id:
            self._spawn(self._forget(record.worker_id))

    def keep(self, command: str, arguments: dict[str, Any], job: str = "") -> None:
        """What a worker of ``job`` accepted, kept for the job's workers held later."""
        key = configuration_key(command, arguments, job)
        if clears(command, arguments):
            if self.configuration.pop(key, None) is None:
                return
        elif self.configuration.get(key) == arguments:
            return
        else:
            self.configuration[key] = arguments
        self.save_soon()

    def save_soon(self) -> None:
        """Save what is kept, once for a burst of changes."""
        if self._saving is None or self._saving.done():
            self._saving = asyncio.create_task(self._save())

    async def _save(self) -> None:
        await asyncio.sleep(self._save_after)  # one write for a burst of changes
        kept: list[dict[str, Any]] = [
            {"job": job, "command": command, "arguments": arguments}
            for (job, command, _), arguments in self.configuration.items()
        ]
        if self.ranked is not None:
            kept += [{"ranked": lines} for lines in self.ranked.remember()]
        try:
            await self._marks.save_breakpoints(kept)
        except Exception as exc:  # Ray raises its own RPC errors; kept in memory regardless
            log.warning("could not keep live breakpoints in GCS: %s", exc)

    async def _forget(self, worker_id: str) -> None:
        try:
            await self._marks.forget(worker_id)
        except Exception as exc:  # as above
            log.debug("could not remove the live mark of %s: %s", worker_id[:12], exc)

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in [*self._tasks, *([self._saving] if self._saving else [])]:
            task.cancel()
