"""What the bridge's doors serve: the workers found, held, watched and captured, wired
together once, and the loops that keep them current.

The bridge (:mod:`.bridge`) owns the doors, the listeners and the hand-over; it builds one
:class:`Backend` and asks it to start, stop, lend or adopt its workers. The loops run while
this bridge works, and stop while its workers are lent to a bridge that replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from raydap.adapter import adopt_tcp_channel
from raydap.bridge.captures.points import Points
from raydap.bridge.captures.service import CaptureService
from raydap.bridge.captures.store import Captures
from raydap.bridge.cluster.dashboard import DashboardClient
from raydap.bridge.cluster.discovery import Discovery
from raydap.bridge.cluster.driver import RayDriver
from raydap.bridge.cluster.live_marks import GcsMarks, Marks
from raydap.bridge.cluster.locate import Cluster
from raydap.bridge.cluster.pdb_keys import LegacyPdbDiscovery
from raydap.bridge.cluster.remote_stacks import RemoteStacks
from raydap.bridge.hangs.dead_ranks import DeadRanks, dashboard_cause
from raydap.bridge.hangs.outside_pause import OutsidePause
from raydap.bridge.hangs.reports import HangReports
from raydap.bridge.hangs.watch import HangWatch
from raydap.bridge.server import handover
from raydap.bridge.server.metrics import Metrics
from raydap.bridge.server.settings import Settings
from raydap.bridge.service import Workers
from raydap.bridge.workers import pdb_records
from raydap.bridge.workers.collective_gate import CollectiveGate
from raydap.bridge.workers.group_timeouts import GroupTimeouts
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.live import LiveWorkers
from raydap.bridge.workers.post_mortem import PostMortems
from raydap.bridge.workers.registry import Registry
from raydap.bridge.workers.rescue import Rescuer

log = logging.getLogger(__name__)

Loop = Callable[[], Coroutine[Any, Any, None]]


class Backend:
    """The workers' side of one bridge, built from its settings: holder, discovery, live
    workers, stacks, hangs, captures, and the service the doors share."""

    def __init__(
        self,
        settings: Settings,
        cluster: Cluster,
        *,
        registry: Registry,
        dashboard: DashboardClient,
        metrics: Metrics,
        marks: Marks | None = None,
    ) -> None:
        """Live workers are found through ``marks`` (GCS's by default; none without a GCS
        address)."""
        self.settings = settings
        self.cluster = cluster
        self.registry = registry
        self.holder = Holder(
            registry,
            ray_state=dashboard,
            task_state=dashboard.task_state,
            request_timeout=settings.request_timeout,
            hold_timeout=settings.hold_timeout,
            observe_request=metrics.worker_request,
        )
        #: The one redactor: what captures, stacks and a view token's values hide.
        self.redactor = redactor = settings.redactor
        self.holder.connector.capture_settings = redactor.settings()
        self.discovery = Discovery(
            dashboard,
            on_paused=self.holder.hold,
            is_known=self.holder.is_known,
            on_poll=self.holder.still_paused,
            interval=settings.poll_interval,
            observe=metrics.discovery_poll,
        )
        if marks is None and cluster.gcs_address:
            marks = GcsMarks(cluster.gcs_address)
        self.live = (
            LiveWorkers(
                self.holder, dashboard.running_listeners, marks,
                running_tasks=dashboard.running_tasks,
            )
            if marks
            else None
        )  # fmt: skip
        # Reading stacks and pausing in place run on the workers' nodes (joined on first use).
        self.ray_driver = RayDriver(cluster.gcs_address)
        self.remote_stacks = RemoteStacks(
            dashboard, self.ray_driver, timeout=settings.request_timeout
        )
        self.rescuer = Rescuer(registry, self.ray_driver)
        self.holder.on_refused = self.rescuer.rescue
        self.outside_pause = OutsidePause(
            self.holder, dashboard, self.ray_driver, remote_stacks=self.remote_stacks
        )
        self.hangs = self._hang_watch(dashboard) if settings.hang_watch != "off" else None
        metrics.watch_hangs(self.hangs)
        self.captures = Captures(
            registry, settings.captures, most=settings.captures_kept,
            most_bytes=settings.captures_mb * 2**20, redactor=redactor,
        )  # fmt: skip
        self.holder.connector.on_capture = self.captures.told
        metrics.count_captures(self.captures)
        self.points = Points(self.holder, settings.captures)
        #: What a person can do to workers: the one service behind every door (DAP sessions
        #: find their workers through it; HTTP and MCP act through it).
        self.workers = Workers(
            self.holder, self.remote_stacks, self.outside_pause, self.hangs,
            job_status=dashboard.job_status,
            capturing=CaptureService(
                self.captures, self.points, self.live.configuration if self.live else {}
            ),
            redactor=redactor,
        )  # fmt: skip
        if self.live is not None:  # what is given to ranks is given to each one held later
            self.live.also_held += [self.points.held, self.workers.ranked.held]
            self.live.ranked = self.workers.ranked  # and kept as the job's breakpoints are
            self.workers.ranked.on_change = self.live.save_soon
        #: A failed task's post-mortem stop is captured, then let go unless someone looks.
        self.post_mortems = PostMortems(
            self.holder, self.workers.follows, hold=settings.post_mortem_hold
        )
        self.holder.watchers.append(self.post_mortems.changed)
        #: A rank stopped alone must not get its peers killed (live workers' ranks only).
        self.group_timeouts = (
            GroupTimeouts(self.holder, self.workers.follows, seconds=settings.debug_group_timeout)
            if self.live is not None and settings.debug_group_timeout > 0
            else None
        )
        if self.group_timeouts is not None:  # every stop of a live worker passes it first
            self.holder.connector.gate_for = CollectiveGate(self.group_timeouts).for_worker
        self._tasks: list[asyncio.Task[None]] = []

    def _hang_watch(self, dashboard: DashboardClient) -> HangWatch:
        settings = self.settings
        return HangWatch(
            self.holder,
            self.remote_stacks,
            hang_after=settings.hang_after,
            interval=settings.hang_sample_interval,
            scope=settings.hang_watch,
            reports=HangReports(
                settings.hang_reports,
                max_reports=settings.hang_reports_kept,
                max_bytes=settings.hang_reports_mb * 2**20,
            ),
            redactor=self.redactor,
            dead_ranks=DeadRanks(self.holder.process_groups, dashboard_cause(dashboard)),
        )

    def load(self) -> None:
        """Read back the captures and capture points kept on disk."""
        kept = self.captures.load(), self.points.load()
        if any(kept):
            log.info("read back %d captures and %d capture points", *kept)

    # -- the loops --------------------------------------------------------------------------

    def loops(self) -> dict[str, Loop]:
        """Discovery and the loops that watch workers, by name."""
        loops: dict[str, Loop] = {"discovery": self.discovery.run, "hold timeout": self._expire}
        if self.hangs is not None:
            loops["hang watch"] = self.hangs.run
        if self.live is not None:
            loops["live workers"] = functools.partial(
                self.live.run, self.settings.live_poll_interval
            )
        if self.group_timeouts is not None:
            loops["collective timeouts"] = self.group_timeouts.run
        if self.cluster.gcs_address:
            legacy = LegacyPdbDiscovery(
                self.cluster.gcs_address, functools.partial(pdb_records.reconcile, self.registry)
            )
            loops["legacy pdb discovery"] = legacy.run
        return loops

    def start_work(self, also: dict[str, Loop] | None = None) -> None:
        """Run the loops (and ``also``, the bridge's own), each a task."""
        every = {**self.loops(), **(also or {})}
        self._tasks = [asyncio.create_task(run(), name=name) for name, run in every.items()]

    async def stop_work(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _expire(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            await self.holder.expire()

    # -- a hand-over (:mod:`.handover`) -----------------------------------------------------

    async def adopt(self, received: handover.Received) -> None:
        """Hold the workers a replaced bridge handed over, as they stood there, and go on
        from its hang verdicts."""
        if self.live is not None:  # the kept lists, which the workers handed over hold
            await self.live.restore_once()
        for worker in received.offer.workers:
            record = worker.record
            channel = await adopt_tcp_channel(
                received.sockets[worker.descriptor],
                worker.carried.unread,
                peer=f"{record.node_ip}:{record.debugger_port}",
            )
            self.holder.adopt(record, channel, worker.carried)
        if received.offer.hangs is not None and self.hangs is not None:
            self.hangs.recall(received.offer.hangs)  # the same verdicts, going on

    async def close(self, *, replaced: bool) -> None:
        """Stop every loop and let every worker go; ``replaced``: a new bridge holds them,
        so the jobs' collective timeouts stay as they are for it."""
        await self.stop_work()
        await self.outside_pause.close()
        await self.rescuer.close()
        if self.live is not None:
            await self.live.close()
        await self.points.close()
        self.captures.close()
        await self.post_mortems.close()
        if self.group_timeouts is not None and not replaced:
            await self.group_timeouts.give_back()  # nobody debugs the jobs any more
        await self.holder.close()
        await self.ray_driver.close()
