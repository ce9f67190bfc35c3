"""A dead rank named at once, with what Ray says of it standing in for the dashboard (a real
gloo rank killed with SIGKILL: tests/e2e/test_hangs.py)."""

from __future__ import annotations

from raydap.bridge.cluster.dashboard import NodeRow, WorkerExit
from raydap.bridge.hangs.dead_ranks import (
    CAUSE_WAIT,
    NODE_LOSS_WITHIN,
    CauseOf,
    DeadRanks,
    Ending,
    dashboard_cause,
)
from raydap.bridge.hangs.watch import HangWatch
from raydap.bridge.workers.holder import record_id
from raydap.bridge.workers.process_groups import Departed
from raydap.bridge.workers.records import BreakpointRecord
from raydap.protocol.collectives import Identity
from tests.unit.bridge.hangs.test_nccl import replies
from tests.unit.bridge.hangs.test_watch import live_ranks, watch

KILLED = "SYSTEM_ERROR: Worker unexpectedly exits with a connection error code 2. End of file."


def rank_dies(hangs: HangWatch, rank: int, pid: int = 4242) -> str:
    """Rank ``rank`` of job 01 goes as a worker does: its connection closes, it is unlisted."""
    rid = record_id(f"01w{rank}" + "0" * 10)
    registry = hangs.holder.registry
    record = registry.get(rid)
    assert record is not None
    registry.put(record.model_copy(update={"pid": pid, "worker_id": f"01w{rank}" + "0" * 10}))
    hangs.holder.process_groups.forget(rid)
    registry.remove(rid)
    hangs.holder.upstreams.pop(rid)
    cluster = hangs.remote
    cluster.rows = [(t, w) for t, w in cluster.rows if record_id(w.worker_id) != rid]  # type: ignore[attr-defined]
    return rid


def what_ray_says() -> tuple[dict[str, Ending], CauseOf]:
    """What Ray says of each departed worker, by record id (as yet nothing, by default)."""
    endings: dict[str, Ending] = {}

    async def ray_says(departed: Departed) -> Ending:
        return endings.get(departed.record.id, Ending(None, final=False))

    return endings, ray_says


async def test_a_rank_that_dies_is_named_at_once_with_where_it_ran_and_why_ray_says() -> None:
    """Issue "fleet": 18 s after rank 2 died the verdict said "rank 0 waits, none missing",
    and rank 2 was only "unread"."""
    hangs, _, now = watch("all")
    live_ranks(hangs.holder.registry, hangs.holder)
    endings, ray_says = what_ray_says()
    hangs.dead_ranks = DeadRanks(hangs.holder.process_groups, ray_says)
    assert {v.state for v in await hangs.sample()} <= {"progressing"}
    rid = rank_dies(hangs, 1)
    endings[rid] = Ending(KILLED, final=True)
    now[0] = 1.0  # one sample later, far from --hang-after (10 s)
    [named] = [v for v in await hangs.sample() if v.job == "01"]
    assert named.state == "suspected_hang"
    [dead] = named.dead
    assert (dead.rank, dead.worker, dead.pid, dead.node_ip, dead.cause) == (
        1, rid, 4242, "10.0.0.1", KILLED,
    )  # fmt: skip
    assert dead.peers_in == "all_reduce #4 (default_pg)"  # the recorders' verdict
    assert named.summary.startswith(
        "rank 1 died (pid 4242 on 10.0.0.1: SYSTEM_ERROR: Worker unexpectedly exits with a "
        "connection error code 2) while the others were in all_reduce #4 (default_pg); "
    ), named.summary
    assert [(u.rank, u.reason.split(":")[0]) for u in named.unread] == [(1, "it died")]

    # A worker that says it is rank 1 of that world again (a restart): nobody is dead
    hangs.holder.process_groups.departed.clear()
    now[0] = 2.0
    await hangs.sample()
    assert hangs.verdicts()[0].dead == []


async def test_ray_cleaning_up_is_no_death_and_silence_is_named_after_a_while() -> None:
    hangs, _, _ = watch("all")
    live_ranks(hangs.holder.registry, hangs.holder)
    endings, ray_says = what_ray_says()
    dead_ranks = DeadRanks(hangs.holder.process_groups, ray_says, clock=lambda: clock[0])
    clock = [0.0]
    quiet = rank_dies(hangs, 1)
    endings[quiet] = Ending("INTENDED_SYSTEM_EXIT: the job ended", final=True, quiet=True)
    silent = rank_dies(hangs, 2)
    alive = hangs.collectives.ranks_of("01")
    clock[0] = hangs.holder.process_groups.departed[silent].at + 1
    assert await dead_ranks.of("01", alive) == []  # Ray is given a moment to say why
    clock[0] += CAUSE_WAIT
    [dead] = await dead_ranks.of("01", alive)
    assert (dead.rank, dead.cause) == (2, None)
    assert await dead_ranks.of("02", alive) == []  # another job's


async def test_a_job_whose_peers_failed_at_once_still_has_its_dead_rank_named() -> None:
    """Two ranks: the one left reads from the dead one, fails at once and runs no task; its
    job is sampled from its held ranks all the same."""
    hangs, cluster, now = watch("all")
    live_ranks(hangs.holder.registry, hangs.holder)
    endings, ray_says = what_ray_says()
    hangs.dead_ranks = DeadRanks(hangs.holder.process_groups, ray_says)
    endings[rank_dies(hangs, 3)] = Ending("its node 10.0.0.9 was lost", final=True)
    cluster.rows = []  # no task of any job runs
    now[0] = 1.0
    [named] = await hangs.sample()
    assert (named.job, named.state, [d.rank for d in named.dead]) == ("01", "suspected_hang", [3])
    assert "rank 3 died (pid 4242 on 10.0.0.1: its node 10.0.0.9 was lost)" in named.summary


async def test_an_nccl_rank_that_dies_is_named_with_the_collective_its_peers_wait_in() -> None:
    """What four NCCL ranks on an H100 answered (recordings/nccl_straggler.json, from
    ../shared/recordings/nccl), rank 3 never at the all_reduce; here it dies. No GPU reaches
    CI: the dead-rank path is read against what NCCL ranks really answer."""
    hangs, _, now = watch("all")
    live_ranks(hangs.holder.registry, hangs.holder, replies("straggler"))
    endings, ray_says = what_ray_says()
    hangs.dead_ranks = DeadRanks(hangs.holder.process_groups, ray_says)
    assert {v.state for v in await hangs.sample()} <= {"progressing"}
    oom = "OUT_OF_MEMORY: Task was killed due to the node running low on memory"
    endings[rank_dies(hangs, 3)] = Ending(oom, final=True)
    now[0] = 1.0
    [named] = [v for v in await hangs.sample() if v.job == "01"]
    assert named.state == "suspected_hang"
    [dead] = named.dead
    assert (dead.rank, dead.cause) == (3, oom)
    assert dead.peers_in is not None and dead.peers_in.endswith("(default_pg, nccl)")
    assert named.summary.startswith(f"rank 3 died (pid 4242 on 10.0.0.1: {oom}) while the "
                                    f"others were in {dead.peers_in}")  # fmt: skip


class RayAnswers:
    """Ray's state API, standing in: what it says of one node and one worker (a node lost
    for real is tests/e2e/test_multi_host.py's)."""

    def __init__(self) -> None:
        self.node_state = "ALIVE"
        self.exit = WorkerExit(is_alive=False, exit_type="SYSTEM_ERROR", exit_detail=KILLED)

    async def node(self, node_id: str) -> NodeRow:
        return NodeRow(node_id=node_id, node_ip="10.0.0.9", state=self.node_state,
                       state_message="health checks failed")  # fmt: skip

    async def worker_exit(self, worker_id: str) -> WorkerExit:
        return self.exit


async def test_a_crash_said_at_once_is_named_its_nodes_loss_once_ray_finds_the_node_dead() -> None:
    """The multi-host e2e test saw it: a node killed whole, and Ray recorded the rank's
    connection error seconds before it marked the node dead; the verdict kept the first."""
    ray, now = RayAnswers(), [100.0]
    cause = dashboard_cause(ray, clock=lambda: now[0])
    record = BreakpointRecord(id="w1", node_ip="10.0.0.9", node_id="n1", worker_id="ab" * 28,
                              paused_since=0.0)  # fmt: skip
    departed = Departed(record=record, identity=Identity(rank=1, world_size=2), at=100.0)
    first = await cause(departed)
    assert first.why is not None and first.why.startswith("SYSTEM_ERROR") and not first.final
    ray.node_state, now[0] = "DEAD", 130.0
    assert await cause(departed) == Ending(
        "its node 10.0.0.9 was lost: health checks failed", final=True
    )
    # A crash on a node that lives on: final once the node had time to be found lost.
    ray.node_state, now[0] = "ALIVE", 100.0 + NODE_LOSS_WITHIN
    assert (await cause(departed)).final
    # Other exits say all there is at once.
    ray.exit, now[0] = WorkerExit(is_alive=False, exit_type="NODE_OUT_OF_MEMORY"), 101.0
    assert await cause(departed) == Ending("NODE_OUT_OF_MEMORY", final=True)
