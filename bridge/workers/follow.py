"""What an attach request names: one worker, or every worker a follow filter matches."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import ValidationError

from raydap.adapter import AttachError, SingleWorker, State, Upstream, Worker, WorkerFeed
from raydap.adapter.errors import Kind, invalid_fields
from raydap.bridge.cluster.dashboard import DashboardError
from raydap.bridge.workers.filters import BadFilter, WorkerFilter, parse_filter
from raydap.bridge.workers.group_timeouts import Follows
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Resync, Subscription

#: A job's status as the dashboard reports it (``RUNNING``, ``SUCCEEDED`` ...), or None.
JobStatus = Callable[[str], Awaitable[str | None]]
JOB_ENDED = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})


class FollowFeed:
    """Every held worker that matches a filter, now and as they pause later.

    A worker joins once it is held, stopped, and matches (its task name arrives a moment after it is
    held, so a filter on the task may match on a later update); once it leaves the registry
    it may join again at its next pause.
    """

    follows = True

    def __init__(
        self,
        holder: Holder,
        where: WorkerFilter,
        job_status: JobStatus | None = None,
        every: float = 1.0,
        follows: Follows | None = None,
    ) -> None:
        """With ``job_status`` (the dashboard's), following one job ends when the job does;
        ``follows`` is told of the filter for as long as the session follows it."""
        self.holder = holder
        self.where = where
        self._follows = follows
        self._unfollow: Callable[[], None] = lambda: None
        self._job_status = job_status
        self._every = every
        self._joined: set[str] = set()
        self._join: Callable[[Worker], None] = lambda worker: None
        self._changes: Subscription | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, join: Callable[[Worker], None], end: Callable[[str], None]) -> None:
        self._join = join
        if self._follows is not None:
            self._unfollow = self._follows.add(self.where)
        self._changes = self.holder.registry.subscribe()
        self._tasks.append(asyncio.create_task(self._watch(self._changes)))
        if self.where.job is not None and self._job_status is not None:
            self._tasks.append(asyncio.create_task(self._until_job_ends(self.where.job, end)))
        for record in self.holder.registry.records():
            self._offer(record)

    def stop(self) -> None:
        self._unfollow()
        if self._changes is not None:
            self.holder.registry.unsubscribe(self._changes)
        for task in self._tasks:
            task.cancel()

    async def _until_job_ends(self, job: str, end: Callable[[str], None]) -> None:
        """Ask the dashboard until the job has ended and none of its workers is held."""
        assert self._job_status is not None
        while True:
            await asyncio.sleep(self._every)
            try:
                status = await self._job_status(job)
            except DashboardError:
                continue
            held = any(r.job_id == job for r in self.holder.registry.records())
            if status in JOB_ENDED and not held:
                end(f"job {job} has ended ({status.lower()}); nothing more stops in it")
                return

    async def _watch(self, changes: Subscription) -> None:
        while True:
            change = await changes.get()
            if isinstance(change, Resync):  # changes were lost: what is there now counts
                records = self.holder.registry.records()
                self._joined &= {record.id for record in records}
                for record in records:
                    self._offer(record)
            elif change.kind == "removed":
                self._joined.discard(change.record.id)
            else:
                self._offer(change.record)

    def _offer(self, record: BreakpointRecord) -> None:
        """A stopped worker joins, and a live one that runs. One continued a moment ago is
        still held (the detach grace) but has nothing to show until it stops again, and then
        it is offered again."""
        upstream = self.holder.upstreams.get(record.id)
        if record.id in self._joined or upstream is None:
            return
        shown = upstream.state is State.STOPPED or (record.live and upstream.state is State.RUNNING)
        if shown and self.where.matches(record):
            self._joined.add(record.id)
            self._join(worker_of(record, upstream))


class AttachedWorker(SingleWorker):
    """A session attached to one worker: its job counts as debugged while the session lasts
    (:mod:`.group_timeouts`), as a followed job does."""

    def __init__(self, worker: Worker, job: str | None, follows: Follows | None) -> None:
        super().__init__(worker)
        self._job, self._follows = job, follows
        self._unfollow: Callable[[], None] = lambda: None

    def start(self, join: Callable[[Worker], None], end: Callable[[str], None]) -> None:
        if self._job is not None and self._follows is not None:
            self._unfollow = self._follows.add(WorkerFilter(job=self._job))
        super().start(join, end)

    def stop(self) -> None:
        self._unfollow()
        super().stop()


def worker_of(record: BreakpointRecord, upstream: Upstream) -> Worker:
    return Worker(
        record.id,
        upstream,
        live=record.live,
        working_dir=record.working_dir,
        task=record.task_name,
        pid=record.pid,
        node=record.node_ip,
        rank=record.rank,
        role=record.role,
        parent=record.parent,
    )


def follow_filter(arguments: dict[str, Any]) -> WorkerFilter:
    """The ``follow`` attach argument: ``true``, absent, a filter object, or a filter as text
    (``"job=02000000,task=train*"``, for editors whose configurations hold only strings)."""
    follow = arguments.get("follow", True)
    if follow is True:
        return WorkerFilter()
    if isinstance(follow, str):
        try:
            return parse_filter(follow)
        except BadFilter as exc:
            raise AttachError(f'bad "follow": {exc}', Kind.INVALID) from None
    if isinstance(follow, dict):
        try:
            return WorkerFilter.model_validate(follow)
        except ValidationError as exc:
            problems = "; ".join(invalid_fields(exc, whole="follow"))
            raise AttachError(
                f"bad follow filter ({problems}); it takes job, task (a glob), actor and node",
                Kind.INVALID,
            ) from None
    raise AttachError(
        '"follow" is true or a filter such as {"job": "02000000", "task": "train*"}', Kind.INVALID
    )


async def resolve(
    holder: Holder,
    arguments: dict[str, Any],
    job_status: JobStatus | None = None,
    follows: Follows | None = None,
    *,
    looks: bool = False,
) -> WorkerFeed:
    """``breakpoint`` attaches to one worker; ``follow`` (or neither) follows many. ``looks``:
    the session only looks, so attaching counts against no ``--hold-timeout``."""
    wanted = arguments.get("breakpoint")
    if wanted is not None:
        if not isinstance(wanted, str) or not wanted:
            raise AttachError(
                '"breakpoint" is a worker id or its prefix (`raydap list`)', Kind.INVALID
            )
        record_id, upstream = await holder.held_worker(wanted, touch=not looks)
        record = holder.registry.get(record_id)
        if record is None:
            raise AttachError(f"worker {record_id} has just left")
        return AttachedWorker(worker_of(record, upstream), record.job_id, follows)
    return FollowFeed(holder, follow_filter(arguments), job_status, follows=follows)
