"""Which jobs the watch samples and what it announces, with the dashboard and the nodes
standing in (the real ones: tests/e2e/test_hangs.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from raydap.adapter import State
from raydap.bridge.cluster.dashboard import TaskRow, WorkerRow
from raydap.bridge.cluster.pyspy import parse_json
from raydap.bridge.cluster.remote_stacks import Reading
from raydap.bridge.hangs.reports import HangReports
from raydap.bridge.hangs.watch import MAX_READS, HangWatch
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.protocol import Response
from raydap.protocol.extension import COLLECTIVES
from tests.unit.bridge.hangs.test_desync import RECORDINGS

C10D = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


def dump(function: str, path: str) -> str:
    frames = [{"name": function, "filename": path, "line": 10},
              {"name": "train", "filename": "/job/train.py", "line": 5}]  # fmt: skip
    return json.dumps([{"thread_name": "MainThread", "frames": frames}])


class Cluster:
    """Job ``01`` has ranks 0-2 in all_reduce and rank 3 loading data; job ``02`` one rank
    that computes."""

    def __init__(self) -> None:
        self.dashboard = self
        self.rows = [
            (TaskRow(task_id=f"t{r}", name="Rank.train", state="RUNNING", job_id=job,
                     worker_id=f"{job}w{r}" + "0" * 10, type="ACTOR_TASK"),
             WorkerRow(worker_id=f"{job}w{r}" + "0" * 10, ip="10.0.0.1", pid=100 + r,
                       node_id="n1"))
            for job, ranks in (("01", 4), ("02", 1)) for r in range(ranks)
        ]  # fmt: skip
        self.read_targets: list[str] = []
        #: Workers whose next reads fail (py-spy busy, as when two dumps meet).
        self.unreadable: set[str] = set()

    async def running_tasks(self) -> list[tuple[TaskRow, WorkerRow]]:
        return self.rows

    def ids(self) -> list[str]:
        return [record_id(worker.worker_id) for _, worker in self.rows]

    async def read(self, targets: dict[str, Any], flags: Any = (), env: Any = ()) -> Any:
        self.read_targets += list(targets)
        failed = {wid: "Failed to get stack traces" for wid in targets if wid in self.unreadable}
        return failed | {
            wid: Reading(
                parse_json(dump("fetch_batch", "/job/train.py") if wid.startswith("01w3")
                           else dump("compute", "/job/train.py") if wid.startswith("02")
                           else dump("all_reduce", C10D)),
                {"RANK": wid[3]},
            )
            for wid in targets
            if wid not in self.unreadable
        }  # fmt: skip


def watch(scope: str, registry: Registry | None = None) -> tuple[HangWatch, Cluster, list[float]]:
    cluster, now = Cluster(), [0.0]
    holder = Holder(registry if registry is not None else Registry())  # (an empty one is falsy)
    hangs = HangWatch(
        holder, cluster, hang_after=10, interval=1, scope=scope,  # type: ignore[arg-type]
        clock=lambda: now[0],
    )  # fmt: skip
    return hangs, cluster, now


async def test_a_still_job_is_announced_once_with_its_straggler() -> None:
    hangs, _, now = watch("all")
    heard = hangs.subscribe()
    assert await hangs.sample() == []  # first sight: progressing, nothing to say
    now[0] = 11.0
    [announced] = await hangs.sample()
    assert (announced.job, announced.state) == ("01", "suspected_hang")
    assert [(s.rank, s.function) for s in announced.stragglers] == [(3, "fetch_batch")]
    assert heard.get_nowait() == announced
    now[0] = 12.0
    assert await hangs.sample() == [] and heard.empty()  # no news
    assert [v.job for v in hangs.verdicts()] == ["01", "02"]  # hung first
    assert hangs.verdicts()[1].state == "progressing"  # one rank computing: no wait


async def test_live_scope_samples_only_jobs_with_live_workers_and_those_asked_for() -> None:
    registry = Registry()
    registry.put(BreakpointRecord(id="x", node_ip="10.0.0.1", paused_since=0, live=True,
                                  state="running", job_id="02"))  # fmt: skip
    hangs, cluster, _ = watch("live", registry)
    await hangs.sample()
    assert {t[:2] for t in cluster.read_targets} == {"02"}
    hangs.watch("01")
    await hangs.sample()
    assert {t[:2] for t in cluster.read_targets} == {"01", "02"}


async def test_a_job_with_a_paused_worker_is_not_judged() -> None:
    registry = Registry()
    hangs, _, now = watch("all", registry)
    await hangs.sample()
    registry.put(BreakpointRecord(id=record_id("01w3" + "0" * 10), node_ip="10.0.0.1",
                                  paused_since=0, state="paused", job_id="01"))  # fmt: skip
    now[0] = 60.0
    assert await hangs.sample() == []
    assert [v.job for v in hangs.verdicts()] == ["02"]  # 01 is being debugged: forgotten
    # Continued, and hung still: reported --hang-after (10 s) after its first sample again,
    # within the promised --hang-after + 10 s of the continue (samples every second)
    registry.remove(record_id("01w3" + "0" * 10))
    now[0] = 61.0
    assert await hangs.sample() == []
    now[0] = 71.0
    [hung] = await hangs.sample()
    assert (hung.job, hung.state, hung.since) == ("01", "suspected_hang", 61.0)


async def test_a_rank_that_could_not_be_read_counts_as_where_it_was() -> None:
    """A failed read (two py-spy dumps of one process meet) is not a rank that left: with the
    three waiting ranks unread, the verdict does not flip to progressing for a moment."""
    hangs, cluster, now = watch("all")
    await hangs.sample()
    now[0] = 11.0
    [hung] = await hangs.sample()
    cluster.unreadable = {w for w in cluster.ids() if w[:4] in ("01w0", "01w1", "01w2")}
    now[0] = 12.0
    assert await hangs.sample() == []  # no news: still hung, with the same straggler
    assert hangs.verdicts()[0] == hung.model_copy(update={"since": hung.since})


# -- the ranks' Flight Recorders -------------------------------------------------------------


class RecordingUpstream:
    """A live rank's debug connection, answering ``raydapCollectives`` with what a real gloo
    rank answered (``recordings/``); counts what it was asked."""

    state = State.RUNNING

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.asked: list[bool] = []  # frames or not, per read
        self.fails = False
        self.statuses = 0
        self.progressing = False

    async def request(self, command: str, arguments: Any = None, **_: Any) -> Response:
        assert command == COLLECTIVES
        if arguments.get("status"):  # how far each group got: counts on while it progresses
            self.statuses += 1
            body = json.loads(json.dumps(self.body))
            for status in body["recorder"]["pg_status"].values():
                status["last_completed_collective"] = int(status["last_completed_collective"]) + (
                    self.statuses if self.progressing else 0
                )
            return Response(request_seq=1, success=True, command=command, body=body)
        self.asked.append(bool(arguments.get("frames")))
        if self.fails:
            return Response(request_seq=1, success=False, command=command, message="gone away")
        return Response(request_seq=1, success=True, command=command, body=self.body)


def live_ranks(
    registry: Registry, holder: Holder, bodies: list[dict[str, Any]] | None = None
) -> dict[int, RecordingUpstream]:
    """Job 01's four ranks as live workers that reported their groups (rank 3 never came to
    all_reduce #4: it is stuck in its data loader, where the cluster's py-spy finds it), or
    answering with ``bodies``."""
    if bodies is None:
        bodies = json.loads((RECORDINGS / "gloo_straggler.json").read_text())["ranks"]
    upstreams = {}
    for rank, body in enumerate(bodies):
        rid = record_id(f"01w{rank}" + "0" * 10)
        registry.put(BreakpointRecord(id=rid, node_ip="10.0.0.1", paused_since=0, live=True,
                                      state="running", job_id="01"))  # fmt: skip
        upstreams[rank] = holder.upstreams[rid] = RecordingUpstream(body)  # type: ignore[assignment]
        holder.process_groups.told(rid, {"identity": body["identity"]})
    return upstreams


async def test_a_hung_jobs_recorders_are_read_once_and_name_the_rank_that_never_came(
    tmp_path: Path,
) -> None:
    hangs, _, now = watch("all")
    holder, registry = hangs.holder, hangs.holder.registry
    upstreams = live_ranks(registry, holder)
    assert [registry.get(record_id(f"01w{r}" + "0" * 10)).rank for r in range(4)] == [0, 1, 2, 3]  # type: ignore[union-attr]
    hangs.reports = HangReports(tmp_path)
    await hangs.sample()
    assert all(u.asked == [] for u in upstreams.values())  # progressing: nothing read
    now[0] = 11.0
    [hung] = [v for v in await hangs.sample() if v.job == "01"]
    assert hung.collective is not None
    assert (hung.collective.seq, hung.collective.waiting, hung.collective.missing) == (
        4,
        [0, 1, 2],
        [3],
    )
    [straggler] = hung.stragglers  # at fault and a straggler of the stacks alike: once
    assert (straggler.rank, straggler.function) == (3, "fetch_batch")  # where it is now
    assert straggler.why == "never joined all_reduce #4 (its last: #3)"
    assert hung.summary.startswith("no progress: all_reduce #4 (default_pg): rank 3 never joined")
    assert hung.summary.endswith("rank 3 in fetch_batch")
    # every rank read once; call sites asked of the blamed rank and of one waiting rank
    assert [u.asked for u in upstreams.values()] == [[False, True], [False], [False], [False, True]]
    assert hung.report and (Path(hung.report) / "rank_3").exists()
    now[0] = 12.0
    assert [v.job for v in await hangs.sample()] == []  # the same hang: no news, no new read
    assert [len(u.asked) for u in upstreams.values()] == [2, 1, 1, 2]
    assert hangs.verdicts()[0].report == hung.report and len(list(tmp_path.iterdir())) == 1


async def test_a_rank_whose_recorder_cannot_be_read_is_named_and_asked_again() -> None:
    hangs, _, now = watch("all")
    upstreams = live_ranks(hangs.holder.registry, hangs.holder)
    upstreams[1].fails = True
    await hangs.sample()
    now[0] = 11.0
    [hung] = [v for v in await hangs.sample() if v.job == "01"]
    [unread] = hung.unread
    assert (unread.rank, unread.worker) == (1, record_id("01w1" + "0" * 10))
    assert "gone away" in unread.reason
    assert hung.collective is not None and hung.collective.missing == [3]  # the rest stands
    for second in (12.0, 13.0, 14.0):
        now[0] = second
        await hangs.sample()
    assert upstreams[0].asked.count(False) == MAX_READS  # asked again while unread, a few times


async def test_ranks_that_wait_in_one_place_while_their_recorders_count_on_are_not_hung() -> None:
    """Ranks waiting for a slower one in the same all_reduce at every sample look still to
    the stacks; their recorders say they go on, so the job progresses. Stuck ones count no
    further, and are called hung at --hang-after as before."""
    hangs, _, now = watch("all")
    upstreams = live_ranks(hangs.holder.registry, hangs.holder)
    for upstream in upstreams.values():
        upstream.progressing = True
    for second in range(0, 40):
        now[0] = float(second)
        await hangs.sample()
        assert hangs.judge.verdicts["01"].state == "progressing", second
    assert upstreams[0].statuses > 5  # asked while the stacks stood still
    for upstream in upstreams.values():
        upstream.progressing = False
    states = []
    for second in range(40, 60):
        now[0] = float(second)
        await hangs.sample()
        states.append(hangs.judge.verdicts["01"].state)
    first_hung = 40 + states.index("suspected_hang")
    assert first_hung <= 40 + 10 + 1  # hang_after (10) of counting nothing, and a sample


# -- NCCL: ranks that wait in .item(), told apart by their recorders -------------------------


class ItemCluster(Cluster):
    """Every rank stands at its own line (``.item()``: native code under it), as a GPU job's
    ranks do, hung or healthy."""

    async def read(self, targets: dict[str, Any], flags: Any = (), env: Any = ()) -> Any:
        return {
            wid: Reading(parse_json(dump("rank_main", "/srv/train/nccl_check.py")),
                         {"RANK": wid[3]})
            for wid in targets
        }  # fmt: skip


class NcclUpstream(RecordingUpstream):
    """An NCCL rank recorded on an H100: both recorders, the generic one empty. Its status
    reads count NCCL's last enqueued on while it progresses."""

    async def request(self, command: str, arguments: Any = None, **_: Any) -> Response:
        if arguments.get("status"):
            self.statuses += 1
            body = json.loads(json.dumps(self.body))
            for status in body["recorders"]["nccl"]["pg_status"].values():
                status["last_enqueued_collective"] = int(status["last_enqueued_collective"]) + (
                    self.statuses if self.progressing else 0
                )
            return Response(request_seq=1, success=True, command=command, body=body)
        return await super().request(command, arguments)


def nccl_watch(*, progressing: bool) -> tuple[HangWatch, list[float]]:
    from tests.unit.bridge.hangs.test_nccl import replies

    hangs, _, now = watch("all")
    hangs.remote = ItemCluster()  # type: ignore[assignment]
    holder, registry = hangs.holder, hangs.holder.registry
    for rank, body in enumerate(replies("skip")):
        rid = record_id(f"01w{rank}" + "0" * 10)
        registry.put(BreakpointRecord(id=rid, node_ip="10.0.0.1", paused_since=0, live=True,
                                      state="running", job_id="01"))  # fmt: skip
        upstream = NcclUpstream(body)
        upstream.progressing = progressing
        holder.upstreams[rid] = upstream  # type: ignore[assignment]
        holder.process_groups.told(rid, {"identity": body["identity"]})
    return hangs, now


async def test_an_nccl_job_hung_in_item_is_suspected_and_judged_from_nccls_recorder() -> None:
    hangs, now = nccl_watch(progressing=False)
    for at in (0.0, 6.0):
        now[0] = at
        await hangs.sample()
    now[0] = 11.0
    [hung] = [v for v in await hangs.sample() if v.job == "01"]
    assert hung.state == "suspected_hang" and hung.collective is not None
    assert (hung.collective.backend, hung.collective.seq, hung.collective.missing) == (
        "nccl", 9, [2],
    )  # fmt: skip
    assert "all_reduce #9 (default_pg, nccl): rank 2 never joined (its last: #8)" in hung.summary


async def test_a_healthy_nccl_job_standing_in_item_is_never_called_hung() -> None:
    hangs, now = nccl_watch(progressing=True)
    for at in (0.0, 6.0, 11.0, 16.0, 21.0, 30.0):
        now[0] = at
        await hangs.sample()
        assert {v.job: v.state for v in hangs.verdicts()}["01"] == "progressing", at


async def test_a_door_asking_mid_sample_sees_the_last_whole_verdict() -> None:
    """A sample judges the stacks first and reads the recorders after: meanwhile the doors
    still show the verdict with its collective, never the bare stack verdict (CI caught
    `raydap hangs` printing one without its collective line)."""
    import asyncio

    hangs, _, now = watch("all")
    upstreams = live_ranks(hangs.holder.registry, hangs.holder)
    await hangs.sample()
    now[0] = 11.0
    [hung] = [v for v in await hangs.sample() if v.job == "01"]
    assert hung.collective is not None
    release = asyncio.Event()
    for upstream in upstreams.values():
        answer = upstream.request

        async def slow(command: str, arguments: Any = None, _answer: Any = answer,
                       **more: Any) -> Response:  # fmt: skip
            await release.wait()
            return await _answer(command, arguments, **more)

        upstream.request = slow  # type: ignore[method-assign]
    now[0] = 12.0
    sampling = asyncio.create_task(hangs.sample())
    await asyncio.sleep(0.05)  # the sample now waits on the ranks' recorders
    assert not sampling.done()
    [shown] = [v for v in hangs.verdicts() if v.job == "01"]
    assert shown.collective is not None and shown.report == hung.report
    release.set()
    await sampling
