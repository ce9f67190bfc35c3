"""NCCL as a GPU job runs it, over the dumps recorded on an H100 (``recordings/README.md``):
both of torch's recorders read and kept apart, the three hangs judged from NCCL's, a mixed
gloo+NCCL group without invented disagreements, NCCL's quirks, progress of a healthy loop whose
stacks stand still, and reports torch's analyzer reads."""

from __future__ import annotations

import itertools
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.desync import RankDump, judge, positions
from raydap.bridge.hangs.reports import HangReports
from raydap.bridge.hangs.verdicts import HangJudge, RankSample
from raydap.protocol.collectives import Identity, Recorder, Reply, read_reply
from tests.unit.bridge.hangs.test_reports import analyzed

RECORDINGS = Path(__file__).with_name("recordings")


def load(name: str) -> Any:
    return json.loads((RECORDINGS / name).read_text())


def replies(case: str) -> list[dict[str, Any]]:
    """Each rank's answer as a worker reading both recorders sends it: the generic one (empty
    on an NCCL rank) and NCCL's."""
    recorded = load(f"nccl_{case}.json")
    return [
        {**nccl, "recorders": {"gloo": generic["recorder"], "nccl": nccl["recorder"]},
         "recorder": generic["recorder"]}
        for nccl, generic in zip(recorded["ranks"], recorded["ranks_raydap_as_is"], strict=True)
    ]  # fmt: skip


def dumps_of(bodies: list[dict[str, Any]]) -> list[RankDump]:
    dumps = []
    for body in bodies:
        reply = read_reply(body, len(json.dumps(body)))
        assert isinstance(reply, Reply) and reply.identity is not None, reply
        worker = f"w{reply.identity.rank}"
        dumps += [RankDump(worker, reply.identity, r, b) for b, r in reply.by_backend().items()]
    return dumps


def test_an_nccl_rank_has_its_entries_in_nccls_recorder_only() -> None:
    """What made the verdict blind: the generic recorder of an NCCL rank is empty."""
    for body in replies("skip"):
        reply = read_reply(body, 0)
        assert isinstance(reply, Reply)
        recorders = reply.by_backend()
        assert recorders["gloo"].entries == [] and len(recorders["nccl"].entries) > 5


def test_a_skipped_all_reduce_on_nccl_names_the_rank_that_never_joined() -> None:
    [verdict] = judge(dumps_of(replies("skip")))
    assert (verdict.backend, verdict.op, verdict.seq) == ("nccl", "all_reduce", 9)
    assert (verdict.waiting, verdict.missing) == ([0, 1, 3], [2])
    assert verdict.summary == "all_reduce #9 (default_pg, nccl): rank 2 never joined (its last: #8)"


def test_a_broadcast_where_the_others_all_reduce_on_nccl_is_a_mismatch() -> None:
    """NCCL's quirk: rank 1, stuck inside its broadcast, shows #7 ``completed`` but not
    retired, while its ``pg_status`` says last enqueued 6: its #7 is judged all the same."""
    [verdict] = judge(dumps_of(replies("mismatch")))
    assert (verdict.backend, verdict.seq, verdict.op, verdict.missing) == (
        "nccl", 7, "all_reduce", [],
    )  # fmt: skip
    [odd] = verdict.mismatch
    assert (odd.rank, odd.op) == (1, "broadcast")
    assert verdict.summary.startswith("all_reduce #7 (default_pg, nccl): rank 1 called broadcast")
    assert verdict.summary.endswith("where ranks 0, 2, 3 called all_reduce")
    assert odd.line == 240


def test_a_straggler_on_nccl_is_missing_from_the_collective_the_others_wait_for() -> None:
    [verdict] = judge(dumps_of(replies("straggler")))
    assert (verdict.backend, verdict.missing) == ("nccl", [3])
    assert "rank 3 never joined (its last: #6)" in verdict.summary


def test_an_older_worker_that_sends_one_recorder_is_read_as_gloo() -> None:
    body = load("nccl_skip.json")["ranks"][0]  # "recorder" only, no "recorders"
    reply = read_reply(body, 0)
    assert isinstance(reply, Reply) and list(reply.by_backend()) == ["gloo"]


def mixed_dumps(*, drop_last_gloo_of: int | None = None) -> list[RankDump]:
    """The two ranks of a ``"cpu:gloo,cuda:nccl"`` group as the bridge reads them: a gloo
    dump and an NCCL dump each; ``drop_last_gloo_of``: that rank never made its last CPU
    collective (a hang on the gloo side)."""
    dumps = []
    for rank in load("mixed_backends.json"):
        identity = Identity(
            rank=rank["rank"], world_size=2, backend="cpu:gloo,cuda:nccl", world="m:1",
            groups=[{"name": "0", "desc": "default_pg", "spans": [[0, 2, 1]]}],
        )  # fmt: skip
        gloo = Recorder.model_validate(rank["_dump_fr_trace_json"])
        nccl = Recorder.model_validate(rank["_dump_nccl_trace_json"])
        if rank["rank"] == drop_last_gloo_of:
            gloo = Recorder(entries=gloo.entries[:-1])
        dumps += [RankDump(f"w{rank['rank']}", identity, gloo, "gloo"),
                  RankDump(f"w{rank['rank']}", identity, nccl, "nccl")]  # fmt: skip
    return dumps


def test_a_mixed_groups_backends_are_judged_apart() -> None:
    """Each backend numbers its own collectives from 1 in the same group (both have a #1, #2
    and #3 here), so they are never matched against each other. NCCL's last completed reads
    -1 after three completed all_reduces (it lags): its entries say they completed."""
    dumps = mixed_dumps()
    numbers = {d.backend: {e.seq for e in d.recorder.entries} for d in dumps if d.worker == "w0"}
    assert numbers["gloo"] & numbers["nccl"] == {1, 2, 3}
    nccl = [d for d in dumps if d.backend == "nccl"]
    assert all(d.recorder.status("0").last_completed_collective == -1 for d in nccl)
    assert judge(dumps) == [], "healthy: no verdict on either backend"
    [verdict] = judge(mixed_dumps(drop_last_gloo_of=1))
    assert (verdict.backend, verdict.op, verdict.seq, verdict.missing) == (
        "gloo", "broadcast", 4, [1],
    )  # fmt: skip
    assert verdict.summary.startswith("broadcast #4 (default_pg): rank 1 never joined")


def healthy_reads() -> list[list[RankDump]]:
    """The healthy loop's ``pg_status`` reads every 4 s, as status-only dumps of each rank."""
    ranks = load("healthy_loop.json")
    identity = {
        r["rank"]: Identity(rank=r["rank"], world_size=4, world="h:1",
                            groups=[{"name": "0", "spans": [[0, 4, 1]]}])
        for r in ranks
    }  # fmt: skip
    reads = []
    for index in range(len(ranks[0]["status"])):
        read = []
        for r in ranks:
            status = r["status"][index]
            read += [
                RankDump(f"w{r['rank']}", identity[r["rank"]],
                         Recorder(pg_status=status[kind]), backend)
                for kind, backend in (("generic", "gloo"), ("nccl", "nccl"))
            ]  # fmt: skip
        reads.append(read)
    return reads


def test_a_healthy_nccl_loop_counts_on_between_reads() -> None:
    """The generic ``pg_status`` is empty at every read; NCCL's counts on."""
    reads = healthy_reads()
    assert len(reads) >= 3
    for before, after in itertools.pairwise(reads):
        for old, new in zip(before, after, strict=True):
            if old.backend == "gloo":
                assert positions(old) == positions(new) == frozenset()
            else:
                assert positions(old) != positions(new), (old.worker, positions(new))


def item_line(rank: int) -> RankSample:
    """Where each rank of the healthy loop stood in about 95 % of samples: its `.item()` line,
    native code under the job's own frame."""
    frame = Frame(function="rank_main", path="/srv/train/healthy_nccl.py", line=70)
    return RankSample(f"w{rank}", rank, None, (frame,))


def test_a_job_with_groups_is_suspected_in_item_and_cleared_by_its_recorders() -> None:
    """An NCCL rank waits in `.item()`, no wait the stack watch knows: with process groups, a
    job whose stacks stand still is suspected; its recorders counting on clear it."""
    judge_ = HangJudge(hang_after=60)
    samples = [item_line(r) for r in range(4)]
    judge_.observe("j", samples, 0.0, collective=True)
    assert judge_.observe("j", samples, 61.0).state == "progressing", "no groups: no suspicion"
    assert judge_.observe("j", samples, 62.0, collective=True).state == "suspected_hang"
    assert judge_.moved("j", samples, 63.0, collective=True).state == "progressing"  # counted on
    assert judge_.observe("j", samples, 64.0, collective=True).state == "progressing"


def test_a_cuda_synchronize_is_a_known_wait() -> None:
    judge_ = HangJudge(hang_after=60)
    sync = Frame(function="synchronize", path="/venv/site-packages/torch/cuda/__init__.py",
                 line=1040)  # fmt: skip
    own = Frame(function="step", path="/srv/train/loop.py", line=12)
    samples = [RankSample(f"w{r}", r, None, (sync, own)) for r in range(2)]
    judge_.observe("j", samples, 0.0)
    verdict = judge_.observe("j", samples, 61.0)
    assert verdict.state == "suspected_hang"
    assert "waiting for the GPU (synchronize)" in verdict.summary


def test_a_mixed_groups_report_keeps_each_backends_dumps_apart(tmp_path: Path) -> None:
    dumps = mixed_dumps()
    folder = HangReports(tmp_path).write("01", {"job": "01"}, None, dumps, "m:1")
    assert sorted(p.name for p in (folder / "gloo").iterdir()) == ["rank_0", "rank_1"]
    assert sorted(p.name for p in (folder / "nccl").iterdir()) == ["rank_0", "rank_1"]
    nccl = pickle.loads((folder / "nccl" / "rank_0").read_bytes())
    assert {e["profiling_name"] for e in nccl["entries"]} == {"nccl:all_reduce"}


def test_torchs_analyzer_reads_an_nccl_report_and_agrees(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    dumps = [d for d in dumps_of(replies("skip")) if d.backend == "nccl"]
    [verdict] = judge(dumps)
    folder = HangReports(tmp_path).write(
        "01", {"collective": verdict.model_dump(mode="json")}, None, dumps, dumps[0].identity.world
    )
    said = analyzed(folder)
    assert "Not all ranks joining collective, sequence number: 9" in said
    assert "missing ranks: {2}" in said


def test_ranks_idle_in_rays_task_loop_are_no_hang() -> None:
    """Ranks of a job with groups that finished their task and sit in Ray's loop (verl's
    workers while the driver works) stand still and count nothing: that is no hang."""
    loop = Frame(function="main_loop", path="/venv/site-packages/ray/_private/worker.py",
                 line=1069)  # fmt: skip
    idle = [RankSample(f"w{r}", r, None, (loop,)) for r in range(4)]
    judge_ = HangJudge(hang_after=60)
    judge_.observe("j", idle, 0.0, collective=True)
    assert judge_.observe("j", idle, 120.0, collective=True).state == "progressing"


def test_ranks_waiting_after_an_asynchronous_collective_are_said_with_both_places() -> None:
    """NCCL's all_reduce returns at once: ranks 0, 1 and 3 issued #9 at line 244 and block in
    ``.item()`` at line 253, native code under their own line (the H100 run's script)."""
    from raydap.bridge.hangs.async_waits import async_waits, said

    dumps = dumps_of(replies("skip"))
    item = Frame(function="rank_main", path="/srv/train/nccl_check.py", line=253)
    samples = {f"w{r}": RankSample(f"w{r}", r, None, (item,)) for r in range(4)}
    waits = async_waits(dumps, samples)
    assert [(w.rank, w.backend, w.op, w.seq) for w in waits] == [
        (0, "nccl", "all_reduce", 9), (1, "nccl", "all_reduce", 9), (3, "nccl", "all_reduce", 9),
    ]  # fmt: skip
    assert (waits[0].called_path, waits[0].called_line) == ("/srv/train/nccl_check.py", 244)
    assert (waits[0].blocked_line, waits[0].blocked_in) == (253, None)
    assert said(waits) == (
        "ranks 0, 1, 3 wait for all_reduce #9 (called at train/nccl_check.py:244), "
        "blocked at train/nccl_check.py:253"
    )


def test_a_rank_in_the_collectives_own_call_or_in_synchronize_is_said_as_it_is() -> None:
    from raydap.bridge.hangs.async_waits import async_waits, said

    dumps = dumps_of(replies("straggler"))
    sync = Frame(function="synchronize", path="/venv/site-packages/torch/cuda/__init__.py",
                 line=1040)  # fmt: skip
    own = Frame(function="rank_main", path="/srv/train/nccl_check.py", line=249)
    inside = Frame(function="all_reduce", path="/venv/site-packages/torch/distributed/"
                   "distributed_c10d.py", line=3068)  # fmt: skip
    samples = {f"w{r}": RankSample(f"w{r}", r, None, (sync, own)) for r in range(3)}
    samples["w0"] = RankSample("w0", 0, None, (inside, own))  # blocking: the verdict says it
    waits = async_waits(dumps, samples)
    assert [w.rank for w in waits] == [1, 2]
    assert said(waits).startswith("ranks 1, 2 wait for all_reduce #")
    assert said(waits).endswith("blocked in synchronize at train/nccl_check.py:249")


def test_an_op_marked_completed_but_not_retired_is_not_waited_for() -> None:
    """NCCL's quirk in the mismatch: rank 1's #7 reads ``completed`` while not retired, and
    its group's ``last_completed_collective`` lags (-1 right after three completed)."""
    from raydap.bridge.hangs.async_waits import pending

    [rank1] = [d for d in dumps_of(replies("mismatch")) if d.identity.rank == 1
               and d.backend == "nccl"]  # fmt: skip
    seven = next(e for e in rank1.recorder.entries if e.seq == 7)
    assert (seven.state, seven.retired) == ("completed", False)
    waited = pending(rank1)
    assert waited is None or waited.seq != 7
