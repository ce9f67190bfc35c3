"""A hung job's collective verdict: every rank's recorder read, matched, and the ranks at fault
named with their call sites (:mod:`.desync` decides; this reads and words it).

Every live worker of the job that reported a process group is a rank, whether it runs a task,
waits in one, or sits idle in Ray's task loop after it finished (the classic missing rank).
Recorders are read in parallel over the debug connections the bridge holds; then the call
sites of the ranks at fault only, since torch's first stack symbolization in a process costs
seconds (:mod:`raydap.live.collectives`).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from raydap.bridge.hangs.async_waits import waits_at
from raydap.bridge.hangs.desync import Collective, RankDump, call_site, judge, positions
from raydap.bridge.hangs.recorders import read_recorders
from raydap.bridge.hangs.verdicts import Straggler, Unread
from raydap.bridge.workers import meshes
from raydap.bridge.workers.holder import Holder
from raydap.protocol.collectives import Entry, Identity

#: Where a rank's stack was last seen (function, path, line): the fallback when a recorder
#: gave no call site.
Whereabouts = Callable[[str], tuple[str, str, int] | None]


@dataclass
class Finding:
    """What the recorders of one job said."""

    collective: Collective | None
    #: Disagreements in other groups or worlds (they go to the report).
    others: list[Collective] = field(default_factory=list)
    unread: list[Unread] = field(default_factory=list)
    dumps: list[RankDump] = field(default_factory=list)
    stragglers: list[Straggler] = field(default_factory=list)
    #: How long reading every rank's recorder took, and then the blamed ranks' call sites.
    read_seconds: float = 0.0
    frames_seconds: float = 0.0


#: How far each rank got (:func:`~.desync.positions`), by worker.
Positions = dict[str, frozenset[tuple[str, str, int, int]]]


class CollectiveReader:
    def __init__(self, holder: Holder) -> None:
        self.holder = holder
        self._positions: dict[str, Positions] = {}

    async def moved(self, job: str) -> bool | None:
        """Whether any rank of the job went on to a later collective since the last time this
        was asked (None: the first time, or nothing could be read). Stacks that stand still
        can belong to a job that progresses: ranks that spend their time waiting for a slower
        one in the same all_reduce look alike at every sample, and their recorders count on.
        So do a healthy GPU job's: its ranks stand at their ``.item()`` line in nearly every
        sample while NCCL's counters run. What counts: each backend's groups' last enqueued
        and completed numbers, and its last op recorded and done (point-to-point ops too)."""
        ranks = self.ranks_of(job)
        groups, upstreams = self.holder.process_groups, self.holder.upstreams
        outcomes = await asyncio.gather(*(
            read_recorders(groups, rid, upstreams.get(rid), status=True) for rid in ranks
        ))  # fmt: skip
        now: Positions = {}
        for outcome in outcomes:
            if isinstance(outcome, str):
                continue
            for dump in outcome:
                now[dump.worker] = now.get(dump.worker, frozenset()) | positions(dump)
        before = self._positions.get(job)
        self._positions[job] = now
        if before is None or not now:
            return None
        return any(now.get(worker, positions) != positions for worker, positions in before.items())

    def forget(self, job: str) -> None:
        self._positions.pop(job, None)

    def ranks_of(self, job: str) -> dict[str, Identity]:
        """The job's live workers that made a process group, by record id."""
        return {
            rid: found
            for rid, found in self.holder.process_groups.identified().items()
            if (record := self.holder.registry.get(rid)) is not None and record.job_id == job
        }

    async def find(
        self, job: str, whereabouts: Whereabouts = lambda worker: None
    ) -> Finding | None:
        """The job's collective verdict, or None for a job with no torch.distributed ranks."""
        ranks = self.ranks_of(job)
        if not ranks:
            return None
        started = time.perf_counter()
        dumps, unread = await self._read(ranks, frames=False)
        read_seconds = time.perf_counter() - started
        unread += _never_reported(ranks)
        verdicts = judge(dumps)
        framed_at = time.perf_counter()
        if verdicts:
            # Call sites: the ranks at fault's, and one waiting rank's (where the others
            # called the op they wait for; every rank's would cost seconds each).
            first = verdicts[0]
            asked = {w for r in first.at_fault() if (w := first.worker_of(r))}
            asked |= set(itertools.islice((d.worker for d in dumps if waits_at(d, first)), 1))
            framed, _ = await self._read({w: ranks[w] for w in asked if w in ranks}, frames=True)
            by_worker = {(d.worker, d.backend): d for d in (*dumps, *framed)}  # framed ones win
            dumps = [by_worker[d.worker, d.backend] for d in dumps]
            verdicts = judge(dumps)
        chosen = verdicts[0] if verdicts else None
        return Finding(
            collective=chosen,
            others=verdicts[1:],
            unread=sorted(unread, key=lambda u: (u.rank is None, u.rank or 0, u.worker or "")),
            dumps=dumps,
            stragglers=self._blamed(chosen, dumps, whereabouts) if chosen else [],
            read_seconds=read_seconds,
            frames_seconds=time.perf_counter() - framed_at,
        )

    async def _read(
        self, ranks: dict[str, Identity], *, frames: bool
    ) -> tuple[list[RankDump], list[Unread]]:
        groups, upstreams = self.holder.process_groups, self.holder.upstreams
        outcomes = await asyncio.gather(*(
            read_recorders(groups, rid, upstreams.get(rid), frames=frames) for rid in ranks
        ))  # fmt: skip
        dumps: list[RankDump] = []
        unread = []
        for (rid, found), outcome in zip(ranks.items(), outcomes, strict=True):
            if isinstance(outcome, str):
                unread.append(Unread(rank=found.rank, worker=rid, reason=outcome))
            else:
                dumps += outcome
        if dumps and not any(d.recorder.entries for d in dumps):
            # Ranks with groups and not one op recorded anywhere: none ran a collective yet,
            # or their backend keeps a recorder raydap does not read. Said, never "read".
            backends = ", ".join(sorted({d.backend for d in dumps}))
            why = f"no collective in any rank's Flight Recorder ({backends}) yet"
            unread += [Unread(rank=r.rank, worker=rid, reason=why) for rid, r in ranks.items()
                       if any(d.worker == rid for d in dumps)]  # fmt: skip
            dumps = []
        return dumps, unread

    def _blamed(
        self, collective: Collective, dumps: list[RankDump], whereabouts: Whereabouts
    ) -> list[Straggler]:
        """The ranks at fault, each where it is: a rank that never came, where its stack
        stands if it runs (``fetch_batch``), else where it last called a collective (a rank
        that finished has one); a rank that called something else, where it called it."""
        by_worker = {d.worker: d for d in dumps if d.backend == collective.backend}
        odd = {m.rank: m for m in collective.mismatch}
        last = {m.rank: m.last for m in collective.members}
        found = []
        for rank in collective.at_fault():
            worker = collective.worker_of(rank)
            dump = by_worker.get(worker or "")
            record = self.holder.registry.get(worker or "")
            if worker is None or dump is None or record is None:
                continue
            if rank in odd:
                seq = collective.seq
                why = f"called {odd[rank].op} at #{seq} where the others called {collective.op}"
            else:
                seq = last.get(rank) or -1
                why = f"never joined {collective.op} #{collective.seq}" + (
                    f" (its last: #{seq})" if seq >= 0 else " (no collective yet)"
                )
            entry = _entry(dump, collective, seq)
            site = call_site(entry.frames) if entry is not None else None
            called = (site.name, site.filename, site.line) if site else None
            running = whereabouts(worker)
            place = (called or running) if rank in odd else (running or called)
            function, path, line = place or ("?", "?", 0)
            found.append(Straggler(worker=worker, rank=record.rank, role=record.role,
                                   coords=meshes.coords(record.mesh),
                                   function=function, path=path, line=line, why=why))  # fmt: skip
        return found


def _entry(dump: RankDump, collective: Collective, seq: int) -> Entry | None:
    """The rank's entry at ``seq`` in the verdict's sequence, else its latest one there."""
    mine = [
        e for e in dump.recorder.entries
        if e.group == collective.group and e.is_p2p == collective.p2p
    ]  # fmt: skip
    return next((e for e in mine if e.seq == seq), mine[-1] if mine else None)


def _never_reported(ranks: dict[str, Identity]) -> list[Unread]:
    """Ranks of a world that no held worker says it is (it exited, or runs without
    ``raydap.live``)."""
    worlds: dict[str | None, tuple[int, set[int]]] = {}
    for found in ranks.values():
        _, seen = worlds.setdefault(found.world, (found.world_size, set()))
        seen.add(found.rank)
    return [
        Unread(rank=rank, worker=None,
               reason="no live worker of this job says it is this rank (gone, or not live)")
        for size, seen in worlds.values()
        for rank in range(size)
        if rank not in seen
    ][:64]  # fmt: skip
