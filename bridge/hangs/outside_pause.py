"""Pause a running worker that never reached a ``breakpoint()``: from outside, on its node.

A worker the bridge holds while it runs (``raydap.live``) is paused through its debugpy
instead, at once (:func:`.group.pause_held`).

A zero-CPU task pinned to the worker's node injects a pause into it (gdb, or
``sys.remote_exec`` on Python 3.14+; :func:`raydap.bridge.cluster.on_node.pause_in_place`),
which opens Ray's own debugpy listener, so discovery finds and holds the worker as it does any
``breakpoint()``. The request ends when the worker is listed as paused, or with why not, within
:data:`ANSWER_WITHIN` seconds: a main thread blocked in native code (a collective waiting in
gloo or NCCL, some extensions) pauses only when that call returns to Python, so the answer is
then :class:`PausePending`, naming where it waits, and the pause stays requested.
"""

from __future__ import annotations

import asyncio
import logging
import time

from raydap.adapter import State, UpstreamError
from raydap.adapter.errors import Kind, WorkerError
from raydap.bridge.cluster import on_node
from raydap.bridge.cluster.dashboard import DashboardClient, DashboardError
from raydap.bridge.cluster.driver import DriverUnavailable, RayDriver
from raydap.bridge.cluster.pyspy import main_thread
from raydap.bridge.cluster.remote_stacks import Reading, RemoteStacks, Target
from raydap.bridge.hangs.frames import wait_of
from raydap.bridge.hangs.stacks import running_record
from raydap.bridge.workers.group import pause_held
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.bridge.workers.registry import LookupFailed

log = logging.getLogger(__name__)


class AlreadyPaused(WorkerError):
    """A pause of a worker that is paused already."""

    default_kind = Kind.ALREADY_PAUSED


class PauseFailed(WorkerError):
    """The worker could not be paused; the message says what to install or allow."""


class PausePending(WorkerError):
    """Requested, not yet paused: the worker waits in native code. ``reason`` says where."""

    default_kind = Kind.PENDING

    def __init__(self, rid: str, reason: str) -> None:
        super().__init__(reason, worker=rid)
        self.rid = rid
        self.reason = reason


#: A pause answers within this many seconds: paused, failed, or pending. Of them, the last
#: :data:`READ_WITHIN` go to reading where a worker that did not pause waits.
ANSWER_WITHIN, READ_WITHIN = 5.0, 1.5


class OutsidePause:
    def __init__(
        self,
        holder: Holder,
        dashboard: DashboardClient,
        driver: RayDriver,
        wait: float = ANSWER_WITHIN - READ_WITHIN,
        remote_stacks: RemoteStacks | None = None,
    ) -> None:
        """``remote_stacks`` reads where a worker that did not pause in time waits."""
        self.holder = holder
        self.dashboard = dashboard
        self.driver = driver
        self.wait = wait
        self.remote_stacks = remote_stacks
        self._injections: set[asyncio.Future[object]] = set()

    async def _running_worker(self, wanted: str) -> BreakpointRecord:
        try:
            rows = await self.dashboard.running_tasks()
        except DashboardError as exc:
            raise PauseFailed(f"cannot list running workers: {exc}", Kind.UNREACHABLE) from None
        found = {
            r.id: r for r in (running_record(t, w) for t, w in rows) if r.id.startswith(wanted)
        }
        if len(found) > 1:
            raise LookupFailed(f"{wanted!r} names {len(found)} workers: give more of the id")
        if not found:
            raise LookupFailed(
                f"no worker {wanted!r} is running a task (`raydap stacks` lists them)"
            )
        return next(iter(found.values()))

    async def pause(self, wanted: str) -> BreakpointRecord:
        if not wanted or len(wanted) > 64:
            raise LookupFailed("give a worker id (or its first characters)")
        held = [r for r in self.holder.registry.records() if r.id.startswith(wanted)]
        if any(r.state == RecordState.PAUSED for r in held):
            raise AlreadyPaused(f"{held[0].id} is already paused: attach to it")
        started = time.monotonic()
        upstream = self.holder.upstreams.get(held[0].id) if len(held) == 1 else None
        if upstream is not None and upstream.state is State.RUNNING:
            try:
                await pause_held(upstream)
            except UpstreamError as exc:
                raise PauseFailed(f"{held[0].label} did not pause: {exc}") from None
            return await self._until_paused(held[0], started)
        target = await self._running_worker(wanted)
        try:
            injection = await self.driver.start_on_node(
                target.node_id or "", on_node.pause_in_place, target.pid
            )
        except DriverUnavailable as exc:
            raise PauseFailed(str(exc)) from None
        self._injections.add(injection)
        injection.add_done_callback(self._ended)
        return await self._until_paused(target, started, injection)

    async def _until_paused(
        self,
        target: BreakpointRecord,
        started: float,
        injection: asyncio.Future[object] | None = None,
    ) -> BreakpointRecord:
        """The record once it is listed as paused, with where; PauseFailed saying why not;
        or, after :attr:`wait` seconds, PausePending saying where it waits."""
        while time.monotonic() - started < self.wait:
            record = self.holder.registry.get(target.id)
            if (
                record is not None
                and record.state == RecordState.PAUSED
                and record.location is not None
            ):
                return record
            if (
                injection
                and injection.done()
                and (why := injection.exception() or injection.result())
            ):
                raise PauseFailed(str(why))
            await asyncio.sleep(0.02)
        later = "it pauses when that call returns to Python (the pause stays requested)"
        try:
            where = await asyncio.wait_for(self._where_blocked(target), READ_WITHIN)
        except asyncio.TimeoutError:
            where = None
        raise PausePending(target.id, f"{where or 'it runs native code'}; {later}")

    async def _where_blocked(self, target: BreakpointRecord) -> str | None:
        """Where a worker that did not pause in time waits, read with py-spy."""
        if self.remote_stacks is None or not target.node_id or not target.pid:
            return None
        read = await self.remote_stacks.read({target.id: Target(target.node_id, target.pid)})
        reading = read.get(target.id)
        if not isinstance(reading, Reading):
            return None
        frames = main_thread(reading.threads, target.pid).frames
        wait = wait_of(frames)
        frame = wait.frame if wait else next((f for f in frames if not f.native), None)
        if frame is None:
            return None
        where = f"{frame.function.split('.')[-1]} in {frame.path}:{frame.line}"
        return f"blocked in {where}, in native code"

    def _ended(self, injection: asyncio.Future[object]) -> None:
        self._injections.discard(injection)
        if not injection.cancelled() and (injection.exception() or injection.result()):
            log.info("outside pause: %s", injection.exception() or injection.result())

    async def close(self) -> None:
        for injection in list(self._injections):
            injection.cancel()
