"""Finds workers paused in a debugger by polling the dashboard, and keeps polling through
outages: while the dashboard is down it backs off and reports why, and it picks up where it
left off when the dashboard returns."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from raydap.bridge.cluster.dashboard import DashboardClient, DashboardError, WorkerRow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PausedWorker:
    """A worker waiting for a debugger, as discovery saw it."""

    worker: WorkerRow
    seen_at: float


class Discovery:
    def __init__(
        self,
        dashboard: DashboardClient,
        *,
        on_paused: Callable[[PausedWorker], None],
        is_known: Callable[[str], bool],
        on_poll: Callable[[set[str]], None] = lambda worker_ids: None,
        interval: float = 0.1,
        max_backoff: float = 5.0,
        observe: Callable[[float, bool], None] = lambda seconds, ok: None,
    ) -> None:
        self._observe = observe
        self.dashboard = dashboard
        self.interval = interval
        self.max_backoff = max_backoff
        self.healthy = False
        self.problem = "not polled yet"
        self._on_paused = on_paused
        self._is_known = is_known
        self._on_poll = on_poll

    async def run(self) -> None:
        delay = self.interval
        while True:
            started = time.perf_counter()
            try:
                await self.poll_once()
            except DashboardError as exc:
                self._observe(time.perf_counter() - started, False)
                if self.healthy or self.problem != str(exc):
                    log.warning("discovery degraded: %s (retrying, backing off)", exc)
                self.healthy, self.problem = False, str(exc)
                delay = min(max(delay * 2, self.interval), self.max_backoff)
            else:
                self._observe(time.perf_counter() - started, True)
                if not self.healthy:
                    log.info("discovery ok: polling %s", self.dashboard.base_url)
                self.healthy, self.problem = True, ""
                delay = self.interval
            await asyncio.sleep(delay)

    async def poll_once(self) -> None:
        workers = await self.dashboard.paused_workers()
        for worker in workers:
            if not self._is_known(worker.worker_id):
                self._on_paused(PausedWorker(worker, time.time()))
        self._on_poll({w.worker_id for w in workers})
