"""Holds paused workers: the bridge is each one's single debugpy client.

Holding keeps the worker paused with the bridge attached, so editors attach instantly and
successive breakpoints arrive on the same connection. This module decides whom to hold and
hands out the connections; they are made by :mod:`.connector`, lent to a new bridge by
:mod:`.lending`, the record of each worker is kept by :mod:`.keeper`, and when to let go by
:mod:`.policy`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from raydap.adapter import AttachError, Carried, Channel, State, Upstream, UpstreamError
from raydap.adapter.errors import Kind, WorkerError
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.cluster.live_marks import LiveMark
from raydap.bridge.workers.children import child_record, children_of, name_after_parent
from raydap.bridge.workers.connector import Connector, PortRefused
from raydap.bridge.workers.holds import Hold, Holds, Step
from raydap.bridge.workers.keeper import RecordKeeper
from raydap.bridge.workers.lending import Lending
from raydap.bridge.workers.naming import RayState
from raydap.bridge.workers.policy import DETACH_GRACE, HoldPolicy
from raydap.bridge.workers.process_groups import ProcessGroups
from raydap.bridge.workers.ranks import rank_from_environment
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.bridge.workers.registry import LookupFailed, Registry
from raydap.bridge.workers.task_end import TaskEndWatch, TaskState

log = logging.getLogger(__name__)

#: How long an attach waits for a worker that is still being held (handshake in progress).
ATTACH_WAIT = 15.0


class ResumeFailed(WorkerError):
    """A held worker that could not be continued (already running, or debugpy said no)."""


class LiveHooks(Protocol):
    """What happens around a live worker's hold (:mod:`.live`)."""

    async def configure(self, rid: str, upstream: Upstream) -> None: ...

    def held(self, rid: str, upstream: Upstream) -> None: ...

    def released(self, record: BreakpointRecord) -> None: ...


def record_id(worker_id: str) -> str:
    """Short, stable and unique enough: 48 bits of the worker id (prefixes work too)."""
    return worker_id[:12]


class Holder:
    """Every worker the bridge holds: found by discovery (or a live mark, or as a held
    worker's child), connected once, handed out to sessions, and let go."""

    def __init__(
        self,
        registry: Registry,
        *,
        ray_state: RayState | None = None,
        handshake_timeout: float = 10.0,
        request_timeout: float = 30.0,
        hold_timeout: float | None = None,
        detach_grace: float = DETACH_GRACE,
        observe_request: Callable[[str, float, bool], None] | None = None,
        task_state: TaskState | None = None,
    ) -> None:
        """``task_state`` (the dashboard's) lets sessions end when their task returns."""
        self.registry = registry
        self.keeper = RecordKeeper(registry, ray_state)
        self.policy = HoldPolicy(hold_timeout=hold_timeout, detach_grace=detach_grace)
        self.task_end = TaskEndWatch(registry, task_state) if task_state else None
        self.upstreams: dict[str, Upstream] = {}
        #: Makes each held worker's connection (and carries what every one is given).
        self.connector = Connector(
            on_change=self._changed,
            on_child=self.hold_child,
            handshake_timeout=handshake_timeout,
            request_timeout=request_timeout,
            observe_request=observe_request,
        )
        #: The workers lent to a new bridge, taken back or left to it.
        self.lending = Lending(self)
        #: Each live worker's torch.distributed rank and groups, as it reports them.
        self.process_groups = ProcessGroups(registry)
        #: Each worker's hold (:mod:`.holds`): the one place its phase is kept.
        self.holds = Holds(time.monotonic)
        #: Who waits for a worker being held: its connection, or why it could not be had.
        self._holding: dict[str, asyncio.Future[Upstream]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.live_hooks: LiveHooks | None = None
        #: Told of every change of a held worker, once its record is current.
        self.watchers: list[Callable[[str, Upstream], None]] = []
        #: Told of a paused worker whose debug port refuses (see :mod:`.rescue`).
        self.on_refused: Callable[[BreakpointRecord], object] | None = None

    @property
    def handing_over(self) -> str:
        """Why no worker is handed out now ("" while they are)."""
        return self.lending.why

    def live_upstreams(self, job: str | None) -> list[tuple[BreakpointRecord, Upstream]]:
        """The live workers of ``job`` (of every job: None) held and reachable now, each with
        its upstream: those a breakpoint for the job is given to."""
        return [
            (r, u)
            for r in self.registry.records()
            if r.live
            and (job is None or r.job_id == job)
            and (u := self.upstreams.get(r.id)) is not None
            and u.state in (State.RUNNING, State.STOPPED)
        ]

    # -- discovery side ---------------------------------------------------------------------

    def is_known(self, worker_id: str) -> bool:
        """Whether discovery should leave this paused worker alone (held, being held, or
        failed a moment ago)."""
        rid = record_id(worker_id)
        record = self.registry.get(rid)
        if self.holds.of(rid) is None and record is not None:
            return True  # listed without a hold (a legacy pdb's)
        return not self.holds.may_try(rid)  # a failed one, listed as such, is tried again

    def still_paused(self, worker_ids: set[str]) -> None:
        """Forget failed workers that are no longer paused (discovery reports each poll)."""
        for record in self.registry.records():
            if self.holds.of(record.id) is not Hold.FAILED:
                continue  # (one tried again: its new client took it out of Ray's paused list)
            if record.worker_id not in worker_ids:
                self.registry.remove(record.id)
                self.holds.step(record.id, Step.RELEASED)

    def hold(self, paused: PausedWorker, live: LiveMark | None = None) -> None:
        """Start holding a newly discovered worker (returns at once): a paused one, or with
        ``live`` a ``raydap.live`` worker that runs, held without pausing it."""
        worker = paused.worker
        record = BreakpointRecord(
            id=record_id(worker.worker_id),
            node_id=worker.node_id,
            node_ip=worker.ip,
            pid=worker.pid,
            worker_id=worker.worker_id,
            worker_type=worker.worker_type,
            debugger_port=worker.debugger_port,
            paused_since=paused.seen_at,
            live=live is not None,
            working_dir=live.cwd if live else None,
            rank=rank_from_environment(live.env) if live else None,
            unsupported=list(live.unsupported) if live else [],
            answers=list(live.answers) if live else [],
        )
        listed = self.registry.get(record.id)
        if listed is None or listed.state != RecordState.FAILED:
            self.registry.put(record)
        elif listed.debugger_port != record.debugger_port:  # a listener reopened in it
            self.registry.put(listed.model_copy(update={"debugger_port": record.debugger_port}))
        # (a failed one stays listed as such while it is tried again)
        self._start_holding(record, live)

    def hold_child(self, parent_id: str, pid: int) -> None:
        """Start holding a child process of a held worker, which waits for a client on its
        parent's debugpy adapter (returns at once). It runs on once held, like a live
        worker, and is let go with its parent."""
        parent = self.registry.get(parent_id)
        if parent is None:
            return  # the parent left: debugpy lets an unclaimed child run on
        record = child_record(parent, pid)
        if record.id in self.registry or self.holds.of(record.id) is not None:
            return
        self.registry.put(record)
        if parent.job_id is None:  # a live worker is named once Ray lists its task
            self._spawn(name_after_parent(self.registry, self.upstreams, parent.id, record.id))
        self._start_holding(record, None)

    def _start_holding(self, record: BreakpointRecord, live: LiveMark | None) -> None:
        self.holds.step(record.id, Step.FOUND)
        self._holding[record.id] = asyncio.get_running_loop().create_future()
        self._spawn(self._hold(record, live))

    async def _hold(self, record: BreakpointRecord, live: LiveMark | None) -> None:
        waiter = self._holding[record.id]
        hooks = self.live_hooks if record.live else None
        try:
            upstream = await self.connector.connect(
                record,
                stops_in_ray_hook=live.stops_in_ray_hook if live else None,
                configure=(lambda u: hooks.configure(record.id, u)) if hooks else None,
            )
        except UpstreamError as exc:
            self._not_held(record, exc)
            waiter.set_exception(AttachError(f"could not attach to {record.label}: {exc}"))
            waiter.exception()  # retrieved: nobody may be waiting
            return
        finally:
            self._holding.pop(record.id, None)
        if record.parent is not None and record.parent not in self.registry:
            self.holds.step(record.id, Step.RELEASED)
            await upstream.detach(f"its parent {record.parent} is gone")  # while it was held
            self.registry.remove(record.id)
            waiter.set_exception(AttachError(f"{record.label} left with its parent"))
            waiter.exception()
            return
        self.holds.step(record.id, Step.CONNECTED)
        self._held(record, upstream)
        waiter.set_result(upstream)

    def _not_held(self, record: BreakpointRecord, exc: UpstreamError) -> None:
        """A worker could not be held: a child is forgotten (it exited before it was held), a
        worker listed as failed, and told to the rescuer if its port refuses."""
        if record.parent is not None:
            log.info("could not hold child %s: %s", record.label, exc)
            self.holds.step(record.id, Step.RELEASED)
            self.registry.remove(record.id)
            return
        log.warning("could not hold %s: %s", record.label, exc)
        self.holds.step(record.id, Step.FAILED)
        failed = self.registry.get(record.id) or record
        failed = failed.model_copy(update={"state": RecordState.FAILED, "error": str(exc)})
        self.registry.put(failed)
        if isinstance(exc, PortRefused) and self.on_refused is not None and not record.live:
            self.on_refused(failed)

    def _held(self, record: BreakpointRecord, upstream: Upstream) -> None:
        """A worker's connection is ready: hand it out from now on."""
        if record.live:
            self.policy.keep(record.id)
            if record.parent is None:
                self.process_groups.attach(record.id, upstream)
            if self.live_hooks is not None:
                self.live_hooks.held(record.id, upstream)
        self.upstreams[record.id] = upstream
        self.policy.touch(record.id)
        log.info("holding %s (%s)%s", record.id, record.label, " live" if record.live else "")
        self._changed(record.id, upstream)

    def _changed(self, rid: str, upstream: Upstream) -> None:
        if self.upstreams.get(rid) is not upstream:
            return  # still in the handshake: _hold reports once it is done
        if upstream.state is State.CLOSED:
            self.forget(rid)
            record = self.registry.get(rid)
            self.registry.remove(rid)
            if record is not None and record.live and self.live_hooks is not None:
                self.live_hooks.released(record)
            for child in children_of(self.registry, rid):  # a worker's children go with it
                if (held := self.upstreams.get(child.id)) is not None:
                    self._spawn(held.detach(f"its parent {rid} is gone"))
            log.info("released %s: %s", rid, upstream.close_reason)
            return
        self.policy.update(rid, upstream)
        self.keeper.update(rid, upstream)
        if self.task_end is not None:
            self.task_end.update(rid, upstream)
        for watcher in self.watchers:
            watcher(rid, upstream)

    def forget(self, rid: str) -> Upstream | None:
        """Stop holding a worker, without what its leaving sets off (its record's removal,
        its children let go): its connection, if it had one."""
        upstream = self.upstreams.pop(rid, None)
        if self.holds.of(rid) is not None:
            self.holds.step(rid, Step.RELEASED)
        self.policy.forget(rid)
        self.process_groups.forget(rid)
        return upstream

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- client side ------------------------------------------------------------------------

    async def held_worker(self, id_or_prefix: str, *, touch: bool = True) -> tuple[str, Upstream]:
        """The id and connection of the held worker an id or unique prefix names (waiting
        for one still in its handshake), or AttachError saying why there is none. ``touch``:
        someone debugs it, so ``--hold-timeout`` counts from now (one who only looks does not)."""
        if self.handing_over:
            raise AttachError(self.handing_over, Kind.UNAVAILABLE)
        try:
            record = self.registry.resolve(id_or_prefix)
        except LookupFailed as exc:
            raise AttachError(str(exc)) from None
        if record.kind == "legacy-pdb":
            raise AttachError(
                f"{record.id} is a legacy pdb breakpoint (RAY_DEBUG=legacy): use `ray debug`, "
                "or run the job with the default RAY_DEBUG=1 to debug it through raydap",
                Kind.REFUSED,
            )
        if record.state == RecordState.FAILED and self.holds.of(record.id) is not Hold.HOLDING:
            raise AttachError(f"cannot debug {record.id}: {record.error}", Kind.UNREACHABLE)
        upstream = self.upstreams.get(record.id)
        if upstream is None and self.holds.of(record.id) is Hold.HOLDING:
            with contextlib.suppress(asyncio.TimeoutError):
                upstream = await asyncio.wait_for(
                    asyncio.shield(self._holding[record.id]), ATTACH_WAIT
                )
        if upstream is None or upstream.state is State.CLOSED:
            raise AttachError(f"worker {record.id} is no longer paused")
        if touch:
            self.policy.touch(record.id)
        return record.id, upstream

    async def resume(self, id_or_prefix: str) -> str:
        """Continue every stopped thread of one held worker; returns its id. Raises
        AttachError for an id that names no held worker, ResumeFailed if it cannot run on."""
        rid, upstream = await self.held_worker(id_or_prefix)
        stop = upstream.stops.top()
        if stop is None:
            raise ResumeFailed(f"worker {rid} is already running", Kind.NOT_PAUSED)
        thread_id = (stop.body or {}).get("threadId", 0)
        response = await upstream.request("continue", {"threadId": thread_id})
        if not response.success:
            raise ResumeFailed(f"worker {rid} refused to continue: {response.message}")
        return rid

    def adopt(self, record: BreakpointRecord, channel: Channel, carried: Carried) -> None:
        """Hold a worker whose connection an earlier bridge held, as it stood there (a
        hand-over: :mod:`raydap.bridge.server.handover`)."""
        upstream = self.connector.adopt(record, channel, carried)
        self.registry.put(record.model_copy(update={"clients": 0}))
        self.holds.step(record.id, Step.ADOPTED)
        self._held(record, upstream)
        upstream.start()

    # -- upkeep -----------------------------------------------------------------------------

    async def expire(self) -> None:
        """Resume workers nobody touched for the hold timeout (if set)."""
        await self.policy.expire(self.upstreams, self.resume)

    async def close(self) -> None:
        """Detach from every worker (they resume) and stop background work."""
        await asyncio.gather(*(u.detach() for u in list(self.upstreams.values())))
        for task in list(self._tasks):
            task.cancel()
        await self.policy.close()
        await self.keeper.close()
        await self.process_groups.close()
        if self.task_end is not None:
            await self.task_end.close()
