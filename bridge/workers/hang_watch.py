"""Samples watched jobs' ranks every few seconds and keeps their hang verdicts (:mod:`.hangs`).

Which jobs: every job with a live worker by default (``--hang-watch live``), every job
running a task (``all``), plus any job asked for (``POST /api/v1/hangs/watch``). A sample is
one py-spy read of each running rank, on its node (one pinned task per node, as
``raydap stacks``), without locals: nothing is paused and a rank pays one ptrace snapshot.
A job with a paused worker is left out of the sample: a person is debugging it, and its other
ranks waiting on it is expected, not a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable

from raydap.bridge.cluster.pyspy import main_thread
from raydap.bridge.cluster.remote_stacks import Reading, RemoteStacks, Target
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.frames import fold
from raydap.bridge.workers.hangs import HangJudge, RankSample, Verdict, news
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.ranks import rank_from_environment
from raydap.bridge.workers.stacks import running_workers
from raydap.live import IDENTITY_VARIABLES

log = logging.getLogger(__name__)

#: Verdicts a slow events client may have waiting; older ones are dropped (the latest counts).
MAX_QUEUED = 100
#: Jobs asked for by hand, at most.
MAX_WATCHED = 1_000


class HangWatch:
    def __init__(
        self,
        holder: Holder,
        remote: RemoteStacks,
        *,
        hang_after: float,
        interval: float,
        scope: str = "live",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.holder = holder
        self.remote = remote
        self.judge = HangJudge(hang_after)
        self.interval = interval
        self.scope = scope
        self.clock = clock
        self.asked: set[str] = set()
        self.last_error: str | None = None
        #: Each running rank's latest stack read, standing in for a read that failed.
        self._last: dict[str, RankSample] = {}
        self._subscribers: set[asyncio.Queue[Verdict]] = set()

    def watch(self, job: str) -> None:
        if len(self.asked) >= MAX_WATCHED and job not in self.asked:
            raise ValueError(f"already watching {MAX_WATCHED} jobs by request")
        self.asked.add(job)

    def verdicts(self) -> list[Verdict]:
        return sorted(
            self.judge.verdicts.values(), key=lambda v: (v.state != "suspected_hang", v.job)
        )

    def subscribe(self) -> asyncio.Queue[Verdict]:
        queue: asyncio.Queue[Verdict] = asyncio.Queue(MAX_QUEUED)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[Verdict]) -> None:
        self._subscribers.discard(queue)

    async def run(self) -> None:
        while True:
            try:
                await self.sample()
            except Exception:  # a bug here must not end the watch
                log.exception("hang watch: a sample failed")
            await asyncio.sleep(self.interval)

    def _watched_jobs(self) -> set[str] | None:
        """The jobs to sample (None: every job running a task)."""
        if self.scope == "all":
            return None
        live = {r.job_id for r in self.holder.registry.records() if r.live and r.job_id}
        return self.asked | (live if self.scope == "live" else set())

    async def sample(self) -> list[Verdict]:
        """One sample of every watched job; returns the verdicts that are news."""
        wanted = self._watched_jobs()
        if wanted is not None and not wanted:
            return []
        running, unlisted = await running_workers(self.holder, WorkerFilter(), self.remote)
        self.last_error = unlisted
        if unlisted:
            return []
        debugged = {r.job_id for r in self.holder.registry.records() if r.state == "paused"}
        by_job = defaultdict(list)
        for record in running:
            job = record.job_id
            if job and job not in debugged and (wanted is None or job in wanted):
                by_job[job].append(record)
        targets = {r.id: Target(r.node_id or "", r.pid or 0) for rs in by_job.values() for r in rs}
        readings = await self.remote.read(targets, (), IDENTITY_VARIABLES)
        now = self.clock()
        announced = []
        last, self._last = self._last, {}
        for job, records in by_job.items():
            samples = []
            for record in records:
                reading = readings.get(record.id)
                if isinstance(reading, Reading):
                    frames = fold(main_thread(reading.threads, record.pid or 0).frames)
                    rank = record.rank
                    if rank is None:
                        rank = rank_from_environment(reading.environment)
                    self._last[record.id] = RankSample(record.id, rank, record.role, tuple(frames))
                elif record.id in last:  # listed, not read this time: as it was (not moved)
                    self._last[record.id] = last[record.id]
                if record.id in self._last:
                    samples.append(self._last[record.id])
            before = self.judge.verdicts.get(job)
            verdict = self.judge.observe(job, samples, now)
            if news(before, verdict):
                announced.append(verdict)
                self._announce(verdict)
        for job in set(self.judge.jobs()) - set(by_job):
            self.judge.forget(job)  # ended, or a person is debugging it
        return announced

    def _announce(self, verdict: Verdict) -> None:
        log.log(
            logging.WARNING if verdict.state == "suspected_hang" else logging.INFO,
            "job %s: %s (%s)", verdict.job, verdict.state, verdict.summary,
        )  # fmt: skip
        for queue in self._subscribers:
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()
            queue.put_nowait(verdict)
