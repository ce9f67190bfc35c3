"""A dead rank is named, not waited for.

In a real training job the commonest "hang" is a rank that died (the OOM killer, a segfault, a
lost node): the peers that read from it fail at once, the others wait in their collective until
its timeout (10 minutes on NCCL). Its recorder can no longer be read, so the recorders alone
would say "rank 0 waits" and never why. The bridge saw it go: its debug connection closed, and
:class:`~raydap.bridge.workers.process_groups.ProcessGroups` kept who it was. Ray says why it
ended (its worker's exit, or its node's death). A job with such a rank, and a rank of the
same world still alive, is a suspected hang from the next sample on, and its verdict names the
dead rank first: its node and pid, Ray's cause, and the collective its peers were in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from raydap.bridge.cluster.dashboard import DashboardError, NodeRow, WorkerExit
from raydap.bridge.hangs.desync import group_label, ranks_text
from raydap.bridge.hangs.verdicts import DeadRank, Unread, Verdict
from raydap.bridge.workers.process_groups import Departed, ProcessGroups
from raydap.protocol.collectives import Identity

log = logging.getLogger(__name__)

#: How long Ray is given to say why a rank ended before it is named without a cause.
CAUSE_WAIT = 3.0
#: The longest cause kept (Ray's exit details run to a paragraph).
MAX_CAUSE = 400
#: Ray's words for an exit that nobody should be told of: its own clean-up as a job ends.
QUIET_EXITS = frozenset({"INTENDED_SYSTEM_EXIT"})
#: How long a worker's ``SYSTEM_ERROR`` may yet turn out to be its node's loss: Ray records
#: the exit (its connection to the node broke) at once, but marks the node dead only once its
#: health checks have failed for a while (about 30 s by default).
NODE_LOSS_WITHIN = 60.0


@dataclass(frozen=True)
class Ending:
    """What Ray says of how a worker ended."""

    #: Its words (None: it does not say, or not yet).
    why: str | None
    #: Whether it will say no more (a worker it still lists alive: not yet).
    final: bool
    #: Ray's own clean-up as a job ends: nobody is told of it.
    quiet: bool = False


#: How a departed rank's worker ended, as Ray says.
CauseOf = Callable[[Departed], Awaitable[Ending]]
UNKNOWN = Ending(None, final=False)


class RayEndings(Protocol):
    """The dashboard's answers a cause needs: how a node and a worker ended."""

    async def node(self, node_id: str) -> NodeRow | None: ...

    async def worker_exit(self, worker_id: str) -> WorkerExit | None: ...


def dashboard_cause(dashboard: RayEndings, *, clock: Callable[[], float] = time.time) -> CauseOf:
    """Why a worker ended, from Ray's state API: its node lost, or its worker's exit. A
    ``SYSTEM_ERROR`` is said at once, but asked again for :data:`NODE_LOSS_WITHIN`: its node
    may yet be found lost, which is the cause a person needs."""

    async def cause(departed: Departed) -> Ending:
        record = departed.record
        if record.node_id:
            node = await dashboard.node(record.node_id)
            if node is not None and node.state == "DEAD":
                why = f": {node.state_message}" if node.state_message else ""
                return Ending(f"its node {node.node_ip or record.node_ip} was lost{why}", True)
        if not record.worker_id:
            return Ending(None, final=True)
        ended = await dashboard.worker_exit(record.worker_id)
        if ended is None or ended.is_alive or not ended.exit_type:
            return UNKNOWN  # Ray has not noticed yet (a lost node takes it seconds)
        detail = f": {ended.exit_detail}" if ended.exit_detail else ""
        settled = ended.exit_type != "SYSTEM_ERROR" or clock() - departed.at >= NODE_LOSS_WITHIN
        why = f"{ended.exit_type}{detail}"[:MAX_CAUSE]
        return Ending(why, final=settled, quiet=ended.exit_type in QUIET_EXITS)

    return cause


class DeadRanks:
    """The dead ranks of each job, with why Ray says each one ended."""

    def __init__(
        self,
        groups: ProcessGroups,
        cause_of: CauseOf | None,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.groups = groups
        self.cause_of = cause_of
        self._clock = clock
        #: Causes that are final, by record id (asked once).
        self._causes: dict[str, Ending] = {}

    def jobs(self) -> set[str]:
        """Jobs with a rank that went away (dead, or ended with its job)."""
        return {d.record.job_id for d in self.groups.departed.values() if d.record.job_id}

    async def of(self, job: str, alive: dict[str, Identity]) -> list[DeadRank]:
        """The job's ranks that went away while a rank of their world (in ``alive``: the
        job's ranks now) lives on, once Ray said why or ``CAUSE_WAIT`` passed."""
        worlds = {identity.world for identity in alive.values()}
        left = [
            d
            for d in self.groups.departed.values()
            if d.record.job_id == job and d.identity.world in worlds
        ]
        endings = await asyncio.gather(*(self._ending(d) for d in left))
        now = self._clock()
        return [
            _named(departed, ending.why)
            for departed, ending in zip(left, endings, strict=True)
            if (ending.why is not None or now - departed.at >= CAUSE_WAIT) and not ending.quiet
        ]

    async def _ending(self, departed: Departed) -> Ending:
        rid = departed.record.id
        if rid in self._causes:
            return self._causes[rid]
        if self.cause_of is None:
            return Ending(None, final=True)
        try:
            ending = await asyncio.wait_for(self.cause_of(departed), 2.0)
        except (DashboardError, asyncio.TimeoutError) as exc:
            log.debug("%s: Ray's word on how it ended could not be read: %s", rid, exc)
            return UNKNOWN
        if ending.final:
            self._causes[rid] = ending
            if len(self._causes) > len(self.groups.departed) + 64:  # forget the oldest
                del self._causes[next(iter(self._causes))]
        return ending


def _named(departed: Departed, cause: str | None) -> DeadRank:
    record = departed.record
    return DeadRank(
        rank=departed.identity.rank, world_size=departed.identity.world_size, worker=record.id,
        label=record.label, node_ip=record.node_ip, node_id=record.node_id, pid=record.pid,
        died_at=departed.at, cause=cause,
    )  # fmt: skip


def as_hang(verdict: Verdict, dead: Sequence[DeadRank]) -> Verdict:
    """A job with a dead rank is a suspected hang since the first death, whatever its stacks
    say (its peers that are not waiting yet will be at their next collective)."""
    if not dead or verdict.state == "suspected_hang":
        return verdict
    return verdict.model_copy(
        update={"state": "suspected_hang", "since": min(d.died_at for d in dead)}
    )


def with_dead(verdict: Verdict, dead: Sequence[DeadRank]) -> Verdict:
    """The verdict naming its dead ranks first: in the summary, with the collective their
    peers were in, and in place of their "unread" lines."""
    if not dead:
        return verdict
    found = verdict.collective
    peers_in = f"{found.op} #{found.seq} ({group_label(found)})" if found else None
    named = [d.model_copy(update={"peers_in": peers_in}) for d in dead]
    ranks = {d.rank for d in named}
    unread = [u for u in verdict.unread if u.worker is not None or u.rank not in ranks]
    unread += [Unread(rank=d.rank, worker=d.worker, reason=f"it died: {_why(d)}") for d in named]
    said = "; ".join(
        f"{ranks_text([d.rank])} died (pid {d.pid} on {d.node_ip}: {_first_sentence(_why(d))})"
        for d in named
    )
    if peers_in:
        said += f" while the others were in {peers_in}"
    return verdict.model_copy(update={
        "dead": named, "unread": sorted(unread, key=lambda u: (u.rank is None, u.rank or 0)),
        "summary": f"{said}; {verdict.summary}",
    })  # fmt: skip


def _why(dead: DeadRank) -> str:
    return dead.cause or "its debug connection closed, and Ray does not say why"


def _first_sentence(text: str, most: int = 160) -> str:
    """What a summary line carries of Ray's paragraph (the whole is in ``cause``)."""
    first = text.split(". ", 1)[0].rstrip(".")
    return first if len(first) <= most else first[: most - 1] + "…"
