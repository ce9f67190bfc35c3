"""Is a job progressing? A verdict from its ranks' stacks sampled over time (sans-I/O).

Like STAT's stack classes over time and Ray Train's hang detector: a job is a
``suspected_hang`` when none of its sampled ranks' stacks has changed for ``hang_after``
seconds and at least one of them waits (a collective, a lock, a queue, an event,
``ray.get``: :func:`.frames.wait_of`). Ranks whose stacks are alike form a group; the
stragglers are the ranks outside the largest waiting group: "ranks 0-2 wait in all_reduce,
rank 3 is in fetch_batch".

A stack counts as unchanged when every frame is where it was, the innermost one's line
aside: a rank that polls (``while not ready: sleep``) is not progressing, and a rank that
computes moves between functions from one sample to the next.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, Field

from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.desync import Collective
from raydap.bridge.hangs.frames import Wait, is_plumbing, wait_of

JobState = Literal["progressing", "suspected_hang"]
#: A group's frames are given up to this depth (innermost first).
GROUP_FRAMES = 12


@dataclass(frozen=True)
class RankSample:
    """One worker's stack at one sample: innermost frame first, plumbing folded."""

    worker: str
    rank: int | None
    role: str | None
    frames: tuple[Frame, ...]
    #: Its device-mesh coordinates, as rank sets name them (:func:`.meshes.coords`).
    coords: Mapping[str, int] = field(default_factory=dict)


class Place(BaseModel):
    function: str
    path: str
    line: int


class Group(BaseModel):
    """Ranks whose stacks are alike, with what they wait on (None: not a wait)."""

    frames: list[Place]
    ranks: list[int]
    workers: list[str]
    wait: str | None = None


class Straggler(BaseModel):
    worker: str
    rank: int | None
    role: str | None
    #: Its device-mesh coordinates (``{"dp": 1, "tp": 1}``), where its job built a mesh.
    coords: dict[str, int] = Field(default_factory=dict)
    function: str
    path: str
    line: int
    #: Why it holds the job up, where the recorders say (``never joined all_reduce #10``).
    why: str | None = None


class RankWait(BaseModel):
    """A rank that issued a collective, waits for it to complete, and blocks elsewhere."""

    worker: str
    rank: int | None
    backend: str
    group: str
    seq: int
    op: str
    #: Where the rank called it, where its recorder kept the call site.
    called_path: str | None = None
    called_line: int | None = None
    #: Where its stack stands: its innermost own frame.
    blocked_function: str
    blocked_path: str
    blocked_line: int
    #: The wait it blocks in where its stack names one (``synchronize``); None: native code
    #: under its own line (``.item()``).
    blocked_in: str | None = None


class Unread(BaseModel):
    """A rank whose Flight Recorder could not be read, and why (the rest of the verdict
    stands without it)."""

    rank: int | None
    worker: str | None
    reason: str


class DeadRank(BaseModel):
    """A rank whose worker went away while ranks of its world live on (:mod:`.dead_ranks`)."""

    rank: int
    world_size: int
    #: The record id it had, and what it was called.
    worker: str
    label: str
    node_ip: str
    node_id: str | None = None
    pid: int | None = None
    #: When its debug connection closed (seconds since the epoch).
    died_at: float
    #: Why, in Ray's words (a signal, the OOM killer, its node lost); None: Ray does not say.
    cause: str | None = None
    #: The collective its peers were in when the verdict was read (``all_reduce #78
    #: (default_pg)``), where their recorders say.
    peers_in: str | None = None


class Verdict(BaseModel):
    job: str
    state: JobState
    #: When its ranks last moved (a suspected hang: since then; progressing: the last sample).
    since: float
    groups: list[Group]
    stragglers: list[Straggler]
    #: A line a person reads: ``3 ranks wait in all_reduce; rank 3 in fetch_batch``.
    summary: str
    #: Where the ranks' Flight Recorders disagree (:mod:`.desync`), for a suspected hang of
    #: a job with process groups; None where no recorder could be read.
    collective: Collective | None = None
    #: Ranks whose recorder could not be read.
    unread: list[Unread] = []
    #: Ranks waiting for a collective they issued, blocked elsewhere (:mod:`.async_waits`).
    waits: list[RankWait] = []
    #: Ranks of the job that died while their peers live on: named at once, a hang or not.
    dead: list[DeadRank] = []
    #: The directory this verdict was written to (:mod:`.hang_reports`).
    report: str | None = None


Signature = tuple[tuple[str, str, int], ...]


def signature(frames: Sequence[Frame]) -> Signature:
    """Where a stack is, its innermost line left out (a polling loop stays put)."""
    return tuple(
        (f.path, f.function.split(".")[-1], 0 if i == 0 else f.line) for i, f in enumerate(frames)
    )


def _place(frame: Frame) -> Place:
    return Place(function=frame.function, path=frame.path, line=frame.line)


def own_frame(frames: Sequence[Frame]) -> Frame | None:
    """The innermost frame of the job's own (or its libraries') code."""
    return next((f for f in frames if not is_plumbing(f)), frames[0] if frames else None)


def _who(sample: RankSample) -> str:
    return f"rank {sample.rank}" if sample.rank is not None else f"worker {sample.worker}"


class JobWatch:
    """One job's ranks over time."""

    def __init__(self, job: str) -> None:
        self.job = job
        self._seen: dict[str, tuple[Signature, float]] = {}
        #: When its recorders last said it went on while its stacks stood still.
        self._counted_on = float("-inf")

    def remember(self) -> JobMemory:
        seen = [(worker, where, at) for worker, (where, at) in self._seen.items()]
        counted_on = None if self._counted_on == float("-inf") else self._counted_on
        return JobMemory(seen=seen, counted_on=counted_on)

    @classmethod
    def recall(cls, job: str, memory: JobMemory) -> JobWatch:
        watch = cls(job)
        watch._seen = {worker: (where, at) for worker, where, at in memory.seen}
        if memory.counted_on is not None:
            watch._counted_on = memory.counted_on
        return watch

    def _stacks_moved(self, now: float) -> float:
        return max((at for _, at in self._seen.values()), default=now)

    def _last_moved(self, now: float) -> float:
        """When something last moved: its ranks' stacks, or the collectives they count."""
        return max(self._stacks_moved(now), self._counted_on)

    def still_for(self, now: float) -> float:
        return now - self._last_moved(now)

    def stacks_still_for(self, now: float) -> float:
        return now - self._stacks_moved(now)

    def moved(self, now: float) -> None:
        """Its ranks progress although their stacks stand still (their recorders said so)."""
        self._counted_on = now

    def observe(
        self,
        samples: Sequence[RankSample],
        now: float,
        hang_after: float,
        *,
        collective: bool = False,
    ) -> Verdict:
        """``collective``: the job's ranks made torch.distributed groups, so stacks that stand
        still in the job's own code are suspected whatever they wait in: an NCCL rank waits in
        ``.item()`` or ``synchronize``, native code under its own line, and the recorders
        (asked before this is called hung, :meth:`moved`) tell a healthy one from a hung one.
        Ranks idle in Ray's task loop are not suspected."""
        seen: dict[str, tuple[Signature, float]] = {}
        for sample in samples:
            where = signature(sample.frames)
            before = self._seen.get(sample.worker)
            seen[sample.worker] = before if before and before[0] == where else (where, now)
        self._seen = seen  # a worker that left is forgotten
        last_moved = self._last_moved(now)
        groups = _groups(samples)
        waiting = [g for g in groups if g.wait is not None]
        # An idle rank (Ray's task loop alone) is no hang; one standing in its own code is.
        busy = collective and any(not is_plumbing(f) for s in samples for f in s.frames)
        stalled = bool(samples) and now - last_moved >= hang_after and bool(waiting or busy)
        stragglers: list[Straggler] = []
        if stalled:
            largest = set(max(waiting or groups, key=lambda g: len(g.workers)).workers)
            for sample in samples:
                frame = own_frame(sample.frames)
                if sample.worker not in largest and frame is not None:
                    stragglers.append(Straggler(
                        worker=sample.worker, rank=sample.rank, role=sample.role,
                        coords=dict(sample.coords), function=frame.function, path=frame.path,
                        line=frame.line,
                    ))  # fmt: skip
        return Verdict(
            job=self.job,
            state="suspected_hang" if stalled else "progressing",
            since=last_moved if stalled else now,
            groups=groups,
            stragglers=sorted(stragglers, key=lambda s: (s.rank is None, s.rank or 0, s.worker)),
            summary=_summary(groups, samples, stalled),
        )


def _groups(samples: Sequence[RankSample]) -> list[Group]:
    alike: dict[Signature, list[RankSample]] = {}
    for sample in samples:
        alike.setdefault(signature(sample.frames), []).append(sample)
    groups = []
    for members in alike.values():
        frames = members[0].frames
        wait = wait_of(frames)
        groups.append(Group(
            frames=[_place(f) for f in frames[:GROUP_FRAMES]],
            ranks=sorted(m.rank for m in members if m.rank is not None),
            workers=sorted(m.worker for m in members),
            wait=None if wait is None else wait.name,
        ))  # fmt: skip
    return sorted(groups, key=lambda g: (-len(g.workers), g.workers))


def _summary(groups: Sequence[Group], samples: Sequence[RankSample], stalled: bool) -> str:
    if not samples:
        return "no rank is running"
    by_worker = {s.worker: s for s in samples}
    parts = []
    for group in groups:
        members = [by_worker[w] for w in group.workers]
        who = _who(members[0]) if len(members) == 1 else f"{len(members)} ranks"
        wait = wait_of(members[0].frames)
        if wait is not None and wait.kind == "collective":
            parts.append(f"{who} {'wait' if len(members) > 1 else 'waits'} in {wait.name}")
            continue
        frame = own_frame(members[0].frames)
        where = frame.function if frame else "?"
        parts.append(f"{who} in {where}" + (f" ({waiting_on(wait)})" if wait else ""))
    return ("no progress: " if stalled else "") + "; ".join(parts)


def waiting_on(wait: Wait) -> str:
    """``waiting on an Event``: what a wait outside a collective is, in a person's words."""
    name = wait.frame.function
    if wait.kind == "lock or event":
        thing = (
            "an Event" if "Event" in name else "a Condition" if "Condition" in name
            else "a thread" if wait.name == "join" else "a lock" if wait.name == "acquire"
            else "a lock or an Event"
        )  # fmt: skip
        return f"waiting on {thing}"
    if wait.kind == "ray.get":
        return "waiting in ray.get"
    if wait.kind == "cuda sync":
        return f"waiting for the GPU ({wait.frame.function.split('.')[-1]})"
    return f"waiting on a {wait.kind}" if wait.kind in ("queue", "future") else f"in {wait.kind}"


class JobMemory(BaseModel):
    """What a :class:`JobWatch` remembers, as plain values (handed to a new bridge process)."""

    #: ``(worker, where its stack stands, since when)``.
    seen: list[tuple[str, Signature, float]] = Field(default_factory=list, max_length=100_000)
    #: When its recorders last said it went on (None: never).
    counted_on: float | None = None


class HangMemory(BaseModel):
    """Every watched job's memory and latest verdict: a replaced bridge's judge goes on
    from where this one stood rather than from nothing."""

    jobs: dict[str, JobMemory] = Field(default_factory=dict, max_length=10_000)
    verdicts: dict[str, Verdict] = Field(default_factory=dict, max_length=10_000)
    #: Jobs a person asked to watch (``POST /api/v1/hangs/watch``).
    asked: list[str] = Field(default_factory=list, max_length=10_000)


class HangJudge:
    """Every watched job's :class:`JobWatch`, and their latest verdicts."""

    def __init__(self, hang_after: float) -> None:
        self.hang_after = hang_after
        self._jobs: dict[str, JobWatch] = {}
        self.verdicts: dict[str, Verdict] = {}

    def observe(
        self, job: str, samples: Sequence[RankSample], now: float, *, collective: bool = False
    ) -> Verdict:
        watch = self._jobs.setdefault(job, JobWatch(job))
        verdict = watch.observe(samples, now, self.hang_after, collective=collective)
        self.verdicts[job] = verdict
        return verdict

    def forget(self, job: str) -> None:
        self._jobs.pop(job, None)
        self.verdicts.pop(job, None)

    def still_for(self, job: str, now: float) -> float:
        watch = self._jobs.get(job)
        return watch.still_for(now) if watch is not None else 0.0

    def stacks_still_for(self, job: str, now: float) -> float:
        watch = self._jobs.get(job)
        return watch.stacks_still_for(now) if watch is not None else 0.0

    def moved(
        self, job: str, samples: Sequence[RankSample], now: float, *, collective: bool = False
    ) -> Verdict:
        """A job its recorders say progresses: judged again from now on."""
        self._jobs.setdefault(job, JobWatch(job)).moved(now)
        return self.observe(job, samples, now, collective=collective)

    def jobs(self) -> list[str]:
        return list(self._jobs)

    def remember(self) -> HangMemory:
        return HangMemory(
            jobs={job: watch.remember() for job, watch in self._jobs.items()},
            verdicts=dict(self.verdicts),
        )

    def recall(self, memory: HangMemory) -> None:
        self._jobs = {job: JobWatch.recall(job, kept) for job, kept in memory.jobs.items()}
        self.verdicts = dict(memory.verdicts)


def news(before: Verdict | None, after: Verdict) -> bool:
    """Whether a verdict is worth announcing: the state, the stragglers, the dead ranks or
    the collective verdict changed."""
    if before is None:
        return after.state == "suspected_hang"
    stragglers = [s.worker for s in before.stragglers] != [s.worker for s in after.stragglers]
    dead = [d.worker for d in before.dead] != [d.worker for d in after.dead]
    return before.state != after.state or stragglers or dead or _where(before) != _where(after)


def _where(verdict: Verdict) -> object:
    found = verdict.collective
    if found is None:
        return None
    return (found.world, found.group, found.p2p, found.seq, found.at_fault())
