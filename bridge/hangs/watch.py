"""Samples watched jobs' ranks every few seconds and keeps their hang verdicts (:mod:`.hangs`).

Which jobs: every job with a live worker by default (``--hang-watch live``), every job
running a task (``all``), plus any job asked for (``POST /api/v1/hangs/watch``). A sample is
one py-spy read of each running rank, on its node (one pinned task per node, as
``raydap stacks``), without locals: nothing is paused and a rank pays one ptrace snapshot.
A job with a paused worker is left out of the sample: a person is debugging it, and its other
ranks waiting on it is expected, not a hang.

A job with a rank that died while its peers live on is a suspected hang at once, and its
verdict names the dead rank first (:mod:`.dead_ranks`). A suspected hang of a job with
torch.distributed ranks is then judged by the ranks' Flight Recorders too
(:mod:`.collective_reader`), once per hang and again when its stragglers change, and each new
such verdict is written to a report that outlives the job (:mod:`.hang_reports`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from raydap.bridge.cluster.pyspy import main_thread
from raydap.bridge.cluster.remote_stacks import Reading, RemoteStacks, Target
from raydap.bridge.hangs.async_waits import async_waits, said
from raydap.bridge.hangs.collective_reader import CollectiveReader, Finding
from raydap.bridge.hangs.dead_ranks import DeadRanks, as_hang, with_dead
from raydap.bridge.hangs.frames import fold
from raydap.bridge.hangs.grid import Grid
from raydap.bridge.hangs.grid import build as build_grid
from raydap.bridge.hangs.live_stacks import read_running
from raydap.bridge.hangs.reports import HangReports
from raydap.bridge.hangs.stacks import StackOptions, running_workers, stacks
from raydap.bridge.hangs.verdicts import (
    HangJudge,
    HangMemory,
    RankSample,
    Verdict,
    news,
    own_frame,
)
from raydap.bridge.workers import meshes
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.ranks import rank_from_environment
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.live import IDENTITY_VARIABLES
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor

log = logging.getLogger(__name__)

#: Verdicts a slow events client may have waiting; older ones are dropped (the latest counts).
MAX_QUEUED = 100
#: Jobs asked for by hand, at most.
MAX_WATCHED = 1_000
#: Reads of a hung job's recorders while some rank stays unread, at most.
MAX_READS = 3
#: py-spy's flags for a sample.
SAMPLE_FLAGS = ("--nonblocking",)


@dataclass
class _Found:
    """A hung job's collective finding, and what it was read for."""

    finding: Finding | None
    #: The stack verdict's stragglers when it was read: new ones mean reading again.
    stragglers: tuple[str, ...]
    reads: int = 1


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
        reports: HangReports | None = None,
        redactor: Redactor = DEFAULT_REDACTOR,
        dead_ranks: DeadRanks | None = None,
    ) -> None:
        """``redactor``: what the reports' locals hide; ``dead_ranks``: who died, and why Ray
        says (by default, without asking Ray)."""
        self.holder = holder
        self.redactor = redactor
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
        self.collectives = CollectiveReader(holder)
        self.dead_ranks = dead_ranks or DeadRanks(holder.process_groups, None)
        self.reports = reports
        self._found: dict[str, _Found] = {}
        #: What the doors show: each job's verdict as a whole sample concluded it (the judge's
        #: own is a stack verdict until the sample has read the recorders and the report).
        self._published: dict[str, Verdict] = {}

    def watch(self, job: str) -> None:
        if len(self.asked) >= MAX_WATCHED and job not in self.asked:
            raise ValueError(f"already watching {MAX_WATCHED} jobs by request")
        self.asked.add(job)

    def remember(self) -> HangMemory:
        """What the watch knows, for the bridge process that replaces this one."""
        return self.judge.remember().model_copy(update={"asked": sorted(self.asked)})

    def recall(self, memory: HangMemory) -> None:
        """Go on from what a replaced bridge's watch knew."""
        self.judge.recall(memory)
        self._published = dict(self.judge.verdicts)
        self.asked = set(memory.asked[:MAX_WATCHED])

    def verdicts(self) -> list[Verdict]:
        return sorted(self._published.values(), key=lambda v: (v.state != "suspected_hang", v.job))

    def grid(self, job: str) -> Grid | None:
        """``job``'s collectives as a grid (:mod:`.grid`), while it is a suspected hang whose
        recorders disagree (None otherwise)."""
        found = self._found.get(job)
        finding = found.finding if found is not None else None
        if finding is None or finding.collective is None:
            return None
        return build_grid(job, finding.collective, finding.dumps)

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
        debugged = {
            r.job_id for r in self.holder.registry.records() if r.state == RecordState.PAUSED
        }
        by_job = defaultdict(list)
        for record in running:
            job = record.job_id
            if job and job not in debugged and (wanted is None or job in wanted):
                by_job[job].append(record)
        for job in self.dead_ranks.jobs() - debugged - set(by_job):
            # A job whose rank died may run no task any more (its peers failed at once): its
            # live ranks are sampled all the same, so that the death is said.
            idle = [r for r in self._ranks_of(job) if wanted is None or job in wanted]
            if idle:
                by_job[job] = idle
        targets = {r.id: Target(r.node_id or "", r.pid or 0) for rs in by_job.values() for r in rs}
        # Not stopped while read (py-spy's --nonblocking): a sample every few seconds of every
        # rank must cost the job nothing, and a hang's stacks stand still to be read anyway.
        readings = await read_running(
            self.holder, self.remote, targets, SAMPLE_FLAGS, IDENTITY_VARIABLES
        )
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
                    self._last[record.id] = RankSample(
                        record.id, rank, record.role, tuple(frames), meshes.coords(record.mesh)
                    )
                elif record.id in last:  # listed, not read this time: as it was (not moved)
                    self._last[record.id] = last[record.id]
                if record.id in self._last:
                    samples.append(self._last[record.id])
            before = self.judge.verdicts.get(job)
            ranks = self.collectives.ranks_of(job)
            dead = await self.dead_ranks.of(job, ranks) if ranks else []
            verdict = self.judge.observe(job, samples, now, collective=bool(ranks))
            if not dead and await self._progresses(job, now):
                verdict = self.judge.moved(job, samples, now, collective=bool(ranks))
            verdict = await self._with_collectives(as_hang(verdict, dead))
            verdict = with_dead(verdict, dead)
            if news(before, verdict):
                if verdict.state == "suspected_hang" and self.reports is not None:
                    verdict = await self._report(verdict)
                announced.append(verdict)
                self._announce(verdict)
            elif before is not None and verdict.state == before.state == "suspected_hang":
                verdict = verdict.model_copy(update={"report": before.report})  # the same hang
            self.judge.verdicts[job] = self._published[job] = verdict
        for job in set(self.judge.jobs()) - set(by_job):
            self.judge.forget(job)  # ended, or a person is debugging it
            self._published.pop(job, None)
            self._found.pop(job, None)
            self.collectives.forget(job)
        return announced

    def _ranks_of(self, job: str) -> list[BreakpointRecord]:
        """The job's live ranks the bridge holds, running a task or not."""
        ranks = self.collectives.ranks_of(job)
        return [
            r
            for r in self.holder.registry.records()
            if r.id in ranks and r.state == RecordState.RUNNING
        ]

    async def _progresses(self, job: str, now: float) -> bool:
        """Whether a job whose stacks stood still for half of --hang-after goes on all the
        same: its recorders count later collectives than when last asked (asked from then on,
        as long as its stacks stand still)."""
        half = self.judge.hang_after / 2
        if self.judge.stacks_still_for(job, now) < half:
            self.collectives.forget(job)  # its stacks move: the count starts afresh later
            return False
        if self.judge.still_for(job, now) < half:
            return False
        if not self.collectives.ranks_of(job):
            return False
        return bool(await self.collectives.moved(job))

    async def _with_collectives(self, verdict: Verdict) -> Verdict:
        """A suspected hang with what its ranks' recorders say (read once per hang, again
        when its stragglers change or while a rank stays unread)."""
        job = verdict.job
        if verdict.state != "suspected_hang":
            self._found.pop(job, None)
            return verdict
        stragglers = tuple(s.worker for s in verdict.stragglers)
        found = self._found.get(job)
        if (
            found is None
            or found.stragglers != stragglers
            or (found.finding is not None and found.finding.unread and found.reads < MAX_READS)
        ):
            finding = await self.collectives.find(job, self._whereabouts)
            reads = found.reads + 1 if found is not None and found.stragglers == stragglers else 1
            found = self._found[job] = _Found(finding, stragglers, reads)
        return merged(verdict, found.finding, self._last)

    def _whereabouts(self, worker: str) -> tuple[str, str, int] | None:
        sample = self._last.get(worker)
        frame = own_frame(sample.frames) if sample is not None else None
        return (frame.function, frame.path, frame.line) if frame is not None else None

    async def _report(self, verdict: Verdict) -> Verdict:
        """Write the verdict, the job's stacks with locals and its ranks' recorders to a new
        report; the verdict names it. A report that cannot be written is logged, never
        fatal."""
        assert self.reports is not None
        found = self._found.get(verdict.job)
        finding = found.finding if found is not None else None
        try:
            merged_stacks = await stacks(
                self.holder,
                WorkerFilter(job=verdict.job),
                self.remote,
                StackOptions(locals=True, redactor=self.redactor),
            )
        except Exception as exc:  # the stacks are a part of the report, not a condition of it
            log.warning("job %s: its stacks could not be read for the report: %s", verdict.job, exc)
            merged_stacks = None
        body = verdict.model_dump(mode="json")
        if finding is not None:
            body["other_collectives"] = [c.model_dump(mode="json") for c in finding.others]
        world = finding.collective.world if finding and finding.collective else None
        try:
            folder = await asyncio.to_thread(
                self.reports.write, verdict.job, body, merged_stacks,
                finding.dumps if finding else [], world,
            )  # fmt: skip
        except OSError as exc:
            log.warning("job %s: could not write its hang report: %s", verdict.job, exc)
            return verdict
        log.warning("job %s: hang report written to %s", verdict.job, folder)
        return verdict.model_copy(update={"report": str(folder)})

    def read_seconds(self) -> dict[str, tuple[float, float]]:
        """By job: how long its latest recorder read took (entries, then call sites)."""
        return {
            job: (found.finding.read_seconds, found.finding.frames_seconds)
            for job, found in self._found.items()
            if found.finding is not None
        }

    def reread(self, job: str) -> None:
        """Read a job's recorders again at the next sample."""
        self._found.pop(job, None)

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


def merged(
    verdict: Verdict, finding: Finding | None, samples: Mapping[str, RankSample] | None = None
) -> Verdict:
    """A stack verdict with its collective finding: the ranks at fault first among the
    stragglers, the collective said first in the summary, and last the ranks that wait for
    a collective they issued, blocked elsewhere (by ``samples``, each worker's latest)."""
    if finding is None:
        return verdict
    waits = async_waits(finding.dumps, samples or {})
    blamed = {s.worker for s in finding.stragglers}
    stragglers = [*finding.stragglers, *(s for s in verdict.stragglers if s.worker not in blamed)]
    summary = verdict.summary
    if finding.collective is not None:
        stacks_said = summary.removeprefix("no progress: ")
        summary = f"no progress: {finding.collective.summary}; {stacks_said}"
    if waits:
        summary = f"{summary}; {said(waits)}"
    return verdict.model_copy(update={
        "collective": finding.collective, "unread": finding.unread,
        "stragglers": stragglers, "summary": summary, "waits": waits,
    })  # fmt: skip
