"""Holds paused workers: the bridge is each one's single debugpy client.

Holding keeps the worker paused with the bridge attached, so editors attach instantly and
successive breakpoints arrive on the same connection. This module connects and hands out the
connections; the record of each worker is kept by :mod:`.keeper`, and when to let go by
:mod:`.policy`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from raydap.adapter import (
    AttachError,
    Carried,
    Channel,
    State,
    Upstream,
    UpstreamError,
    open_tcp_channel,
)
from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.upstream import handover
from raydap.adapter.upstream.breakpoints import Gate
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.cluster.live_marks import LiveMark
from raydap.bridge.workers.holds import Hold, Holds, Step
from raydap.bridge.workers.keeper import RecordKeeper
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
#: How long a child waits for its parent's job to be known (Ray lists a task about a second
#: after it starts).
NAME_CHILD_WITHIN = 30.0


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


def child_record_id(parent: BreakpointRecord, pid: int) -> str:
    """A child process's id: as short as a worker's, and not a prefix-mate of its parent's
    (``raydap attach <parent prefix>`` must still name the parent alone). A pid is unique
    among a worker's children while they run; a grandchild is its child's child."""
    return hashlib.sha256(f"{parent.worker_id or parent.id}/{pid}".encode()).hexdigest()[:12]


class PortRefused(UpstreamError):
    """The worker's debug port refuses connections: its debugpy adapter has exited."""


class Holder:
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
        self._observe_request = observe_request
        self.handshake_timeout = handshake_timeout
        self.request_timeout = request_timeout
        self.keeper = RecordKeeper(registry, ray_state)
        self.policy = HoldPolicy(hold_timeout=hold_timeout, detach_grace=detach_grace)
        self.task_end = TaskEndWatch(registry, task_state) if task_state else None
        self.upstreams: dict[str, Upstream] = {}
        #: Each live worker's torch.distributed rank and groups, as it reports them.
        self.process_groups = ProcessGroups(registry)
        #: Each worker's hold (:mod:`.holds`): the one place its phase is kept.
        self.holds = Holds(time.monotonic)
        #: Who waits for a worker being held: its connection, or why it could not be had.
        self._holding: dict[str, asyncio.Future[Upstream]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.live_hooks: LiveHooks | None = None
        #: Why no worker is handed out: set while the workers are lent to a new bridge (the
        #: holder's mode; each worker's phase is in :attr:`holds`).
        self.handing_over = ""
        #: Told of every change of a held worker, once its record is current.
        self.watchers: list[Callable[[str, Upstream], None]] = []
        #: Told of each capture event a worker sends: ``(record id, body)`` (:mod:`.captures`).
        self.on_capture: Callable[[str, object], None] | None = None
        #: What each capture point given to a worker carries (the bridge's ``--redact``).
        self.capture_settings: dict[str, Any] = {}
        #: The gate of each live worker held: what a stop of it passes first
        #: (:mod:`.collective_gate`; None: stops go through at once).
        self.gate_for: Callable[[str], Gate] | None = None
        #: Told of a paused worker whose debug port refuses (see :mod:`.rescue`).
        self.on_refused: Callable[[BreakpointRecord], object] | None = None

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
        self.holds.step(record.id, Step.FOUND)
        self._holding[record.id] = asyncio.get_running_loop().create_future()
        self._spawn(self._hold(record, live))

    def hold_child(self, parent_id: str, pid: int) -> None:
        """Start holding a child process of a held worker, which waits for a client on its
        parent's debugpy adapter (returns at once). It runs on once held, like a live
        worker, and is let go with its parent."""
        parent = self.registry.get(parent_id)
        if parent is None:
            return  # the parent left: debugpy lets an unclaimed child run on
        record = BreakpointRecord(
            id=child_record_id(parent, pid),
            node_id=parent.node_id,
            node_ip=parent.node_ip,
            pid=pid,
            worker_type=parent.worker_type,
            debugger_port=parent.debugger_port,
            paused_since=time.time(),
            live=True,
            working_dir=parent.working_dir,
            job_id=parent.job_id,
            task_name=f"{parent.task_name} child" if parent.task_name else None,
            parent=parent.id,
        )
        if record.id in self.registry or self.holds.of(record.id) is not None:
            return
        self.registry.put(record)
        if parent.job_id is None:  # a live worker is named once Ray lists its task
            self._spawn(self._name_child_after(parent.id, record.id))
        self.holds.step(record.id, Step.FOUND)
        self._holding[record.id] = asyncio.get_running_loop().create_future()
        self._spawn(self._hold(record, None))

    async def _name_child_after(self, parent_id: str, child_id: str) -> None:
        """Give a child its parent's job (and a name, until it names itself at a stop) once
        the parent has them; follow sessions of the job then show it."""
        deadline = time.monotonic() + NAME_CHILD_WITHIN
        while time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            parent, child = self.registry.get(parent_id), self.registry.get(child_id)
            if parent is None or child is None:
                return
            if parent.job_id is not None:
                update: dict[str, Any] = {"job_id": parent.job_id}
                if child.task_name is None and parent.task_name:
                    update["task_name"] = f"{parent.task_name} child"
                named = child.model_copy(update=update)
                self.registry.put(named)
                if (upstream := self.upstreams.get(child_id)) is not None:
                    upstream.name = named.label  # what clients' messages call it
                return

    def children_of(self, parent_id: str) -> list[BreakpointRecord]:
        return [r for r in self.registry.records() if r.parent == parent_id]

    async def _hold(self, record: BreakpointRecord, live: LiveMark | None) -> None:
        assert record.debugger_port is not None
        waiter = self._holding[record.id]
        try:
            upstream = await self._connect(record, live.stops_in_ray_hook if live else None)
        except UpstreamError as exc:
            if record.parent is not None:  # a child that exited before it was held
                log.info("could not hold child %s: %s", record.label, exc)
                self.holds.step(record.id, Step.RELEASED)
                self.registry.remove(record.id)
                waiter.set_exception(AttachError(f"could not attach to {record.label}: {exc}"))
                waiter.exception()
                return
            log.warning("could not hold %s: %s", record.label, exc)
            self.holds.step(record.id, Step.FAILED)
            failed = self.registry.get(record.id) or record
            self.registry.put(
                failed.model_copy(update={"state": RecordState.FAILED, "error": str(exc)})
            )
            if isinstance(exc, PortRefused) and self.on_refused is not None and not record.live:
                self.on_refused(failed)
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

    async def _connect(
        self, record: BreakpointRecord, stops_in_ray_hook: bool | None = None
    ) -> Upstream:
        """Connect to the worker's debugpy and finish the handshake, or raise UpstreamError
        saying what a person can do about it. ``stops_in_ray_hook``: what the worker's Python
        says of its ``breakpoint()`` stops, where known."""
        assert record.debugger_port is not None
        try:
            channel = await open_tcp_channel(record.node_ip, record.debugger_port)
        except ConnectionRefusedError:
            raise PortRefused(
                f"its debugpy port {record.debugger_port} refuses connections: debugpy's "
                "adapter has exited, so no debugger can attach and the worker waits "
                "forever; restart the worker or its job"
            ) from None
        except (OSError, asyncio.TimeoutError) as exc:
            raise UpstreamError(f"cannot connect to its debugpy: {exc!r}") from None
        child_pid = record.pid if record.parent is not None else None
        options = self._options(record)
        upstream = Upstream(channel, name=record.label, child_pid=child_pid, **options)
        upstream.stops_in_ray_hook = stops_in_ray_hook
        # Before the handshake: debugpy names waiting children as soon as it is done, and a
        # live worker is given its job's kept breakpoints during it.
        self._wire(record, upstream)
        if (on_capture := self.on_capture) is not None:  # restored capture points fire at once
            upstream.news.on_capture = lambda body: on_capture(record.id, body)
        try:
            hooks = self.live_hooks if record.live else None
            await upstream.handshake(
                timeout=self.handshake_timeout,
                expect_stop=not record.live,
                configure=(lambda: hooks.configure(record.id, upstream)) if hooks else None,
            )
        except asyncio.TimeoutError:
            await upstream.close("handshake failed")
            raise UpstreamError(
                f"its debugpy did not finish the handshake within {self.handshake_timeout:g} s"
                " (another debugger, or another raydap bridge, may be attached to it)"
            ) from None
        except BaseException:
            await upstream.close("handshake failed")
            raise
        return upstream

    def _wire(self, record: BreakpointRecord, upstream: Upstream) -> None:
        """What every held worker's connection is given, new or adopted."""
        upstream.breakpoints.capture_settings = self.capture_settings
        upstream.news.on_child = lambda pid: self.hold_child(record.id, pid)
        if record.live and self.gate_for is not None:
            upstream.gate = self.gate_for(record.id)

    def _options(self, record: BreakpointRecord) -> dict[str, Any]:
        return {
            "request_timeout": self.request_timeout,
            "on_change": lambda upstream: self._changed(record.id, upstream),
            "observe": self._observe_request,
        }

    def _changed(self, rid: str, upstream: Upstream) -> None:
        if self.upstreams.get(rid) is not upstream:
            return  # still in the handshake: _hold reports once it is done
        if upstream.state is State.CLOSED:
            self.upstreams.pop(rid, None)
            self.holds.step(rid, Step.RELEASED)
            self.policy.forget(rid)
            self.process_groups.forget(rid)
            record = self.registry.get(rid)
            self.registry.remove(rid)
            if record is not None and record.live and self.live_hooks is not None:
                self.live_hooks.released(record)
            for child in self.children_of(rid):  # a worker's children go with it
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

    # -- a new bridge takes over (:mod:`raydap.bridge.server.handover`) ---------------------

    async def lend_all(
        self, why: str, *, within: float = 10.0
    ) -> list[tuple[BreakpointRecord, int, Carried]]:
        """Stop handing workers out, wait until nothing is under way with any of them, and
        lend every connection (record, socket descriptor, state); raises UpstreamError, with
        every connection taken back, if that cannot be done within ``within`` seconds."""
        self.handing_over = why
        lent: list[tuple[BreakpointRecord, int, Carried]] = []
        try:
            deadline = time.monotonic() + within
            while self.holds.in_phase(Hold.HOLDING) or not all(
                u.quiet for u in self.upstreams.values()
            ):
                if time.monotonic() > deadline:
                    busy = [rid for rid, u in self.upstreams.items() if not u.quiet]
                    raise UpstreamError(
                        f"workers still busy after {within:g} s: "
                        f"{', '.join(busy + self.holds.in_phase(Hold.HOLDING))}"
                    )
                await asyncio.sleep(0.02)
            for rid, upstream in list(self.upstreams.items()):
                record = self.registry.get(rid)
                if record is None or upstream.state is State.CLOSED:
                    continue
                descriptor, carried = await handover.lend(upstream)
                self.holds.step(rid, Step.LENT)
                lent.append((record, descriptor, carried))
        except BaseException:
            self.take_back_all()
            raise
        return lent

    def take_back_all(self) -> None:
        """The hand-over failed: read every lent connection again and hand workers out."""
        for rid, upstream in list(self.upstreams.items()):
            handover.take_back(upstream)
            if self.holds.of(rid) is Hold.LENT:
                self.holds.step(rid, Step.TAKEN_BACK)
        self.handing_over = ""

    async def abandon_all(self, why: str) -> None:
        """The new bridge holds every connection now: close ours, which it keeps open, and
        forget them without the side effects of a worker leaving."""
        for rid, upstream in list(self.upstreams.items()):
            del self.upstreams[rid]
            if self.holds.of(rid) is not None:
                self.holds.step(rid, Step.RELEASED)
            self.policy.forget(rid)
            self.process_groups.forget(rid)
            await handover.abandon(upstream, why)

    def adopt(self, record: BreakpointRecord, channel: Channel, carried: Carried) -> None:
        """Hold a worker whose connection an earlier bridge held, as it stood there."""
        upstream = Upstream.adopt(channel, carried, name=record.label, **self._options(record))
        self._wire(record, upstream)
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
