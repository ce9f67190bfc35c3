"""A rank stopped alone must not get its peers killed: collective timeouts held off while a
person debugs the job.

A job is debugged while a DAP session that may debug (a debug token's: a view token's only
looks) follows it or is attached to one of its workers, while a breakpoint that can stop is set
in one of its live workers (capture points and log points never stop, so never count), while
the gate (:mod:`.collective_gate`) lets a breakpoint or a Pause through to one of them, or while
one of its workers is stopped and held; and for ``linger`` seconds after, so that continuing
and stopping again does not give the peers their short timeout back in between. Each job
apart: debugging one leaves every other job's timeouts alone. Every rank of a debugged job (a
live worker that made process groups) gets ``seconds`` for every group; the others get their
own back (:mod:`raydap.live.timeouts`, through the ``raydapCollectives`` request).

A timeout counts from when a collective is issued, so only a raise that reaches the peers
before they issue their next collective protects them: a follow session, or a breakpoint or a
Pause (the gate waits for that next collective), does; a plain ``breakpoint()`` nobody expected
is held and raises the peers' timeouts at once, but a collective they already wait in keeps its
own (docs/hangs.md).

:func:`wanted` is the decision, without sockets; :class:`GroupTimeouts` sends what changed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

from raydap.adapter import UpstreamError
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.records import BreakpointRecord, RecordState
from raydap.protocol.collectives import Identity, read_reply
from raydap.protocol.extension import COLLECTIVES

log = logging.getLogger(__name__)

#: How long one rank may take to answer, and how long one that did not is left alone.
ASK_TIMEOUT = 5.0
RETRY_AFTER = 10.0


def debugged_jobs(
    records: Sequence[BreakpointRecord], follows: Collection[WorkerFilter]
) -> set[str]:
    """Jobs a follow session matches a worker of, or with a worker stopped and held."""
    return {
        r.job_id
        for r in records
        if r.job_id and (r.state == RecordState.PAUSED or any(f.matches(r) for f in follows))
    }


def armed_jobs(holder: Holder) -> set[str]:
    """Jobs with a breakpoint that can stop in one of their live workers (each worker's one
    owner of its breakpoints knows, whichever door set it)."""
    return {
        r.job_id
        for r in holder.registry.records()
        if r.live
        and r.job_id
        and (upstream := holder.upstreams.get(r.id)) is not None
        and upstream.breakpoints.book.stops()
    }


def wanted(
    records: Sequence[BreakpointRecord],
    ranks: Collection[str],
    debugged: Collection[str],
    seconds: float,
) -> dict[str, float | None]:
    """Each rank's (``ranks``: live workers that made groups) timeout: ``seconds`` while its
    job is debugged, None (its groups' own) otherwise."""
    return {
        r.id: seconds if r.job_id in debugged else None
        for r in records
        if r.id in ranks and r.live and r.parent is None
    }


def mark_of(body: dict[str, Any] | None) -> int | None:
    """How far a rank's recorders got (the last record id of any backend) in its answer to a
    request with ``status``; None where it has no recorder, or an empty one."""
    reply = read_reply(body, len(json.dumps(body)))
    if isinstance(reply, str):
        return None
    marks = [r.progress.last_record for r in reply.by_backend().values() if r.progress]
    return max(marks) if marks and max(marks) >= 0 else None


class Follows:
    """The filters of the follow sessions open now (each session adds its own, then takes
    it away when it ends)."""

    def __init__(self) -> None:
        self._open: dict[int, WorkerFilter] = {}
        self._keys = itertools.count()

    def add(self, where: WorkerFilter) -> Callable[[], None]:
        key = next(self._keys)
        self._open[key] = where

        def remove() -> None:
            self._open.pop(key, None)

        return remove

    def filters(self) -> list[WorkerFilter]:
        return list(self._open.values())


class GroupTimeouts:
    """Raises the collective timeouts of every rank of a debugged job, and gives them back."""

    def __init__(
        self,
        holder: Holder,
        follows: Follows,
        *,
        seconds: float,
        linger: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        breakpoints: Callable[[], Collection[str]] | None = None,
    ) -> None:
        """``breakpoints``: the jobs with a breakpoint that can stop (:func:`armed_jobs`)."""
        self.holder = holder
        self.follows = follows
        self.breakpoints = breakpoints or (lambda: armed_jobs(holder))
        self.seconds = seconds
        self.linger = linger
        self._clock = clock
        #: When each job was last debugged.
        self._debugged_at: dict[str, float] = {}
        #: What each rank was given, for which of its identities (a new group: again).
        self._given: dict[str, tuple[float | None, Identity]] = {}
        #: When a rank last failed to answer (asked again RETRY_AFTER later, not every tick).
        self._failed_at: dict[str, float] = {}
        #: Ranks raised that issued a collective since, with the identity they had: their next
        #: collectives carry the raise (:mod:`.collective_gate`).
        self.covered: dict[str, Identity] = {}

    def plan(self) -> dict[str, tuple[float | None, Identity]]:
        """What each rank is to be given that it has not been (sans-I/O: reads state only). A
        rank first seen is told either way: a bridge that replaced another, or that restarted,
        does not know what the last one raised."""
        now = self._clock()
        records = self.holder.registry.records()
        for job in {*debugged_jobs(records, self.follows.filters()), *self.breakpoints()}:
            self.debugged(job)
        recent = {j for j, at in self._debugged_at.items() if now - at < self.linger}
        self._debugged_at = {j: self._debugged_at[j] for j in recent}
        identities = self.holder.process_groups.identified()
        goal = wanted(records, identities, recent, self.seconds)
        self._given = {rid: given for rid, given in self._given.items() if rid in goal}
        self.covered = {
            rid: identity
            for rid, identity in self.covered.items()
            if self._given.get(rid) == (self.seconds, identity) and goal.get(rid) is not None
        }
        self._failed_at = {rid: at for rid, at in self._failed_at.items() if now - at < RETRY_AFTER}
        return {
            rid: (seconds, identities[rid])
            for rid, seconds in goal.items()
            if self._given.get(rid) != (seconds, identities[rid]) and rid not in self._failed_at
        }

    def debugged(self, job: str) -> None:
        """Count ``job`` as debugged from now (for ``linger`` seconds, unless again)."""
        self._debugged_at[job] = self._clock()

    def ranks_of(self, job: str) -> dict[str, Identity]:
        """The job's ranks: its live workers that made process groups, with who each is."""
        identities = self.holder.process_groups.identified()
        return {
            r.id: identities[r.id]
            for r in self.holder.registry.records()
            if r.job_id == job and r.live and r.parent is None and r.id in identities
        }

    async def raise_now(self, rid: str, identity: Identity, within: float) -> int | str | None:
        """Raise one rank now; how far its recorders got once it was raised (None: no
        recorder to read), or why it could not be raised."""
        body = await self._give(rid, self.seconds, identity, within=within, status=True)
        return mark_of(body) if isinstance(body, dict) else body

    async def apply(self) -> None:
        """Send each rank what :meth:`plan` says (one request each, side by side)."""
        plan = self.plan()
        if plan:
            await asyncio.gather(*(self._give(rid, *given) for rid, given in plan.items()))

    async def _give(
        self,
        rid: str,
        seconds: float | None,
        identity: Identity,
        *,
        within: float = ASK_TIMEOUT,
        status: bool = False,
    ) -> dict[str, Any] | str:
        """Send one rank its timeout; its answer's body, or why there is none. ``status``:
        the answer says how far its recorders got too, read after the raise."""
        upstream = self.holder.upstreams.get(rid)
        if upstream is None:
            return "the worker is gone"
        arguments: dict[str, Any] = {"timeout": seconds, **({"status": True} if status else {})}
        try:
            response = await upstream.request(COLLECTIVES, arguments, timeout=within)
        except UpstreamError as exc:
            self._failed_at[rid] = self._clock()
            log.info("%s: could not set its collective timeouts: %s", rid, exc)
            return str(exc) or "it did not answer"
        if not response.success:
            self._failed_at[rid] = self._clock()
            log.info("%s refused its collective timeouts: %s", rid, response.message)
            return response.message or "it refused"
        before = self._given.get(rid)
        self._given[rid] = (seconds, identity)
        if seconds is None:
            self.covered.pop(rid, None)
        said: dict[str, Any] = (response.body or {}).get("timeouts") or {}
        own = ", ".join(f"{s:g} s" for s in said.get("own") or []) or "none"
        # A rank first seen is told to keep its own: said only at debug level.
        changed = seconds is not None or (before is not None and before[0] is not None)
        log.log(
            logging.INFO if changed else logging.DEBUG,
            "%s: collective timeouts of %s backends %s (their own: %s)", rid,
            said.get("backends", "?"),
            f"raised to {seconds:g} s while it is debugged" if seconds else "given back",
            own,
        )  # fmt: skip
        return response.body or {}

    async def give_back(self, within: float = ASK_TIMEOUT) -> None:
        """Every rank raised gets its groups' own timeouts back (the bridge stops for good)."""
        raised = [(rid, identity) for rid, (s, identity) in self._given.items() if s is not None]
        if not raised:
            return
        try:
            await asyncio.wait_for(
                asyncio.gather(*(self._give(rid, None, identity) for rid, identity in raised)),
                within,
            )
        except asyncio.TimeoutError:  # a stop must not hang on a rank that does not answer
            log.warning("collective timeouts: not every rank answered within %g s", within)

    async def run(self, every: float = 0.25) -> None:
        """Apply every ``every`` seconds and at once when a worker changes (a stop, a rank
        that made its groups), for as long as the bridge runs."""
        changes = self.holder.registry.subscribe()
        try:
            while True:
                try:
                    await self.apply()
                except Exception:  # never let one rank's answer end the watch
                    log.exception("holding off collective timeouts")
                await changes.next_within(every)
        finally:
            self.holder.registry.unsubscribe(changes)
