"""Breakpoints on a rank set: given to the live ranks of a job that the set names, only.

A person sets ``line 40 on tp=1`` before the job's ranks said their coordinates, or while some
are not held yet: the request is kept per job, and each live rank of the job gets it through
its one owner of breakpoints (and so through the gate of :mod:`.collective_gate`) once what is
known of it matches the set, whenever that is (its process groups reported, its role
learned, a worker held later), and loses it if it no longer does. The job's other ranks never
get it.

Each owner's ranked share is its own in a worker's book (:class:`Ranked`), beside what the same
owner set for every rank, so the job's kept breakpoints (:mod:`.live`), which every later
worker of the job is given, leave it out. What is kept here is saved beside them all the same
(:meth:`RankedBreakpoints.remember`), so a bridge that restarts or replaces this one keeps it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from raydap.adapter import Upstream
from raydap.adapter.upstream.books import Spec
from raydap.adapter.upstream.breakpoints import Given
from raydap.bridge.workers.filters import rank_set
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.rank_sets import RankSetError
from raydap.bridge.workers.records import BreakpointRecord

log = logging.getLogger(__name__)

#: Rank-set requests kept at most (then the oldest goes, and is said), and breakpoints each.
MAX_KEPT = 1000
MAX_SPECS = 1000
#: The longest job, owner, path or rank set taken back.
MAX_FIELD = 4096


@dataclass(frozen=True)
class Ranked:
    """Who owns a share of breakpoints given to a rank set only (a worker's book keeps it apart
    from the same owner's breakpoints for every rank)."""

    owner: str


@dataclass(frozen=True)
class RankedLines:
    """One owner's breakpoints in one file, for the ranks of ``job`` that ``ranks`` names."""

    job: str
    path: str
    ranks: str
    specs: tuple[Spec, ...]

    def for_rank(self, record: BreakpointRecord) -> tuple[Spec, ...]:
        """What this rank gets of them: all, or none."""
        return self.specs if rank_set(self.ranks).matches(record.rank_facts()) else ()


class RankedBreakpoints:
    def __init__(self, holder: Holder) -> None:
        self.holder = holder
        #: By ``(job, owner, path)``: what each owner asked, until it clears it.
        self.kept: dict[tuple[str, str, str], RankedLines] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        #: Told when what is kept changed: the bridge saves it (:meth:`remember`).
        self.on_change: Callable[[], None] | None = None
        holder.registry.on_rank_facts.append(self._identified)

    async def give(self, owner: str, lines: RankedLines) -> list[tuple[BreakpointRecord, Given]]:
        """``owner``'s breakpoints in ``lines.path`` for ``lines.ranks`` of ``lines.job`` (no
        specs: cleared): kept for ranks known later, and given to every live rank of the job
        held now (those outside the set lose any it had): each rank's record and answer."""
        key = (lines.job, owner, lines.path)
        self.kept.pop(key, None)
        if lines.specs:
            self.kept[key] = lines
            while len(self.kept) > MAX_KEPT:
                log.warning("rank-set breakpoints dropped (over %d kept): %s", MAX_KEPT,
                            self.kept.pop(next(iter(self.kept))))  # fmt: skip
        if self.on_change is not None:
            self.on_change()
        chosen = self.holder.live_upstreams(lines.job)
        given = await asyncio.gather(*(self._give(u, owner, lines, r) for r, u in chosen))
        return [(r, g) for (r, _), g in zip(chosen, given, strict=True) if g is not None]

    async def _give(
        self,
        upstream: Upstream,
        owner: str,
        lines: RankedLines,
        record: BreakpointRecord,
        *,
        again: bool = True,
    ) -> Given | None:
        """The rank's share, sent (None: the rank is outside the set and had none, or, unless
        ``again``, it has it already)."""
        key = ("setBreakpoints", lines.path)
        specs = lines.for_rank(record)
        had = upstream.breakpoints.book.share(Ranked(owner), key)
        if (not specs and not had) or (not again and specs == had):
            return None
        return await upstream.breakpoints.give(
            Ranked(owner), key, specs, {"source": {"path": lines.path}}, beside_kept=True
        )

    def remember(self) -> list[dict[str, Any]]:
        """What is kept, as plain values (:meth:`recall` takes them back)."""
        return [
            {"job": lines.job, "owner": owner, "path": lines.path, "ranks": lines.ranks,
             "specs": list(lines.specs)}
            for (_, owner, _), lines in self.kept.items()
        ]  # fmt: skip

    def recall(self, items: Iterable[object]) -> int:
        """Take back what a previous bridge kept (before any worker is held); what is not
        as :meth:`remember` writes it is left out. Returns how many were taken."""
        for item in items:
            lines = _lines(item)
            if lines is not None and len(self.kept) < MAX_KEPT:
                owner, found = lines
                self.kept[(found.job, owner, found.path)] = found
        return len(self.kept)

    def held(self, rid: str, upstream: Upstream) -> None:
        """A live worker is held: it gets its job's rank-set breakpoints that name it."""
        self._match(rid, upstream)

    def _identified(self, rid: str) -> None:
        """What is known of a rank changed (it said its coordinates, its role was learned):
        its job's rank-set breakpoints are given or taken back as they now match."""
        if (upstream := self.holder.upstreams.get(rid)) is not None:
            self._match(rid, upstream)

    def _match(self, rid: str, upstream: Upstream) -> None:
        record = self.holder.registry.get(rid)
        if record is None or not record.live:
            return
        for (job, owner, _), lines in list(self.kept.items()):
            if job == record.job_id:
                self._spawn(self._give(upstream, owner, lines, record, again=False))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()


def _lines(item: object) -> tuple[str, RankedLines] | None:
    """An item :meth:`RankedBreakpoints.remember` wrote, read back (it was saved in Ray's GCS,
    so it is checked as any input is), or None."""
    if not isinstance(item, dict):
        return None
    texts = [item.get(k) for k in ("job", "owner", "path", "ranks")]
    specs = item.get("specs")
    if not all(isinstance(t, str) and 0 < len(t) <= MAX_FIELD for t in texts):
        return None
    if not isinstance(specs, list) or not 0 < len(specs) <= MAX_SPECS:
        return None
    job, owner, path, ranks = (str(t) for t in texts)
    try:
        rank_set(ranks)
        asked = [json.loads(spec) for spec in specs]
    except (RankSetError, ValueError, TypeError):
        return None
    if not all(isinstance(a, dict) for a in asked):
        return None
    return owner, RankedLines(job, path, ranks, tuple(specs))
