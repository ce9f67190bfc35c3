"""The gate a stop passes first: before a breakpoint or a Pause can stop a rank, every rank of
its job has its collective timeouts raised, and has issued a collective since.

A raise does not cover a collective already issued (the backend's timeout is copied when a
collective is issued: :mod:`raydap.live.timeouts`). A rank raised while it waits in a
collective would still time out there if one of its peers stopped now. So the gate raises each
rank of the job, reads how far its Flight Recorder got in the same answer, and waits until
each one's recorder counts on: that collective, and every later one, carries the raise. Each
rank that was seen so stays covered until its timeout is given back.

The gate waits ``within`` seconds at most (a rank that waits in a collective for a peer that is
already stopped cannot be helped by waiting longer), then lets the stop through anyway and says
which ranks may still be on their own timeout; where a rank of the job stands stopped already,
it raises and lets the stop through at once. A rank without a recorder to read (off, or
empty) is covered by its raise alone. Every door passes here: each held live worker's
upstream is given :meth:`CollectiveGate.before_stopping` as its gate
(:attr:`raydap.adapter.upstream.connection.Upstream.gate`), and breakpoints and Pause reach a
worker only through its upstream.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from raydap.adapter import UpstreamError
from raydap.bridge.workers.group_timeouts import GroupTimeouts, mark_of
from raydap.bridge.workers.records import RecordState
from raydap.protocol.extension import COLLECTIVES

log = logging.getLogger(__name__)

#: The longest a stop waits for the peers' next collective (Pause answers within 5 s).
WITHIN = 2.0
#: How often a rank not seen to issue a collective yet is read again.
EVERY = 0.05


class CollectiveGate:
    """Lets a stop through once every rank of its job is raised and issued a collective since."""

    def __init__(
        self,
        timeouts: GroupTimeouts,
        *,
        within: float = WITHIN,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeouts = timeouts
        self.within = within
        self.every = every
        self._clock = clock
        #: The gate under way for each job: every stop of the job waits on the same one.
        self._passing: dict[str, asyncio.Future[list[str]]] = {}

    def for_worker(self, rid: str) -> Callable[[], Awaitable[Sequence[str]]]:
        """The gate of one held worker (its job is looked up when a stop comes)."""
        return functools.partial(self.before_stopping, rid)

    async def before_stopping(self, rid: str) -> Sequence[str]:
        """Wait until worker ``rid`` may stop; the labels of its peers that may still be on
        their own timeout. A worker of no job, or of a job without process groups, passes at
        once."""
        record = self.timeouts.holder.registry.get(rid)
        job = record.job_id if record is not None and record.live else None
        if not job:
            return []
        self.timeouts.debugged(job)  # from now: the periodic raise agrees with this one
        passing = self._passing.get(job)
        if passing is None or passing.done():
            passing = self._passing[job] = asyncio.ensure_future(self._pass(job))
        return await asyncio.shield(passing)

    async def _pass(self, job: str) -> list[str]:
        deadline = self._clock() + self.within
        ranks = self.timeouts.ranks_of(job)
        waiting = {
            rid: identity
            for rid, identity in ranks.items()
            if self.timeouts.covered.get(rid) != identity
        }
        if not waiting:
            return []
        raised = await asyncio.gather(*(
            self.timeouts.raise_now(rid, identity, max(0.1, deadline - self._clock()))
            for rid, identity in waiting.items()
        ))  # fmt: skip
        marks: dict[str, int] = {}
        late: dict[str, str] = {}
        for (rid, identity), outcome in zip(waiting.items(), raised, strict=True):
            if isinstance(outcome, str):
                late[rid] = f"not raised: {outcome}"
            elif outcome is None:
                self.timeouts.covered[rid] = identity  # nothing to wait for: the raise alone
            else:
                marks[rid] = outcome
        if marks and self._stopped(job):
            # A rank of the job stands stopped: the others wait for it in a collective and
            # issue no other until it runs on, so waiting would only delay this stop (a
            # breakpoint edited while a rank is paused). They are raised; not counted covered.
            return [self._label(rid) for rid in late]
        while marks and self._clock() < deadline:
            await asyncio.sleep(self.every)
            read = await asyncio.gather(*(
                self._mark(rid, max(0.1, deadline - self._clock())) for rid in marks
            ))  # fmt: skip
            for (rid, before), now in zip(list(marks.items()), read, strict=True):
                if now is not None and now > before:
                    self.timeouts.covered[rid] = waiting[rid]
                    del marks[rid]
        late.update({rid: "no collective issued since its raise" for rid in marks})
        if late:
            log.warning(
                "job %s: a stop let through after %.1f s; these ranks may still be on their own "
                "collective timeout: %s", job, self.within,
                "; ".join(f"{self._label(rid)} ({why})" for rid, why in late.items()),
            )  # fmt: skip
        return [self._label(rid) for rid in late]

    def _stopped(self, job: str) -> bool:
        return any(
            r.job_id == job and r.state == RecordState.PAUSED
            for r in self.timeouts.holder.registry.records()
        )

    async def _mark(self, rid: str, within: float) -> int | None:
        upstream = self.timeouts.holder.upstreams.get(rid)
        if upstream is None:
            return None
        try:
            response = await upstream.request(COLLECTIVES, {"status": True}, timeout=within)
        except UpstreamError:  # one rank that cannot be read waits out the gate
            return None
        return mark_of(response.body) if response.success else None

    def _label(self, rid: str) -> str:
        record = self.timeouts.holder.registry.get(rid)
        return record.label if record is not None else rid
