"""The collective matcher over recorded dumps: what real gloo ranks answered the bridge in
each kind of hang (``recordings/``, made by running them), and NCCL-shaped dumps written by
hand from torch's documented fields, since no GPU runs here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from raydap.bridge.hangs.desync import RankDump, judge, ranks_text
from raydap.live.collectives import spans
from raydap.protocol.collectives import GroupInfo, Reply, read_reply

RECORDINGS = Path(__file__).with_name("recordings")


def recorded(case: str, *, drop: tuple[int, ...] = ()) -> list[RankDump]:
    ranks = json.loads((RECORDINGS / f"gloo_{case}.json").read_text())["ranks"]
    dumps = []
    for body in ranks:
        reply = read_reply(body, 0)
        assert isinstance(reply, Reply) and reply.identity and reply.recorder, reply
        if reply.identity.rank not in drop:
            dumps.append(RankDump(f"w{reply.identity.rank}", reply.identity, reply.recorder))
    return dumps


def test_a_skipped_all_reduce_names_the_rank_that_never_joined() -> None:
    [verdict] = judge(recorded("skip"))  # the pair group [0, 1] agrees: no verdict of its own
    assert (verdict.group, verdict.group_desc, verdict.op, verdict.seq) == (
        "0", "default_pg", "all_reduce", 10,
    )  # fmt: skip
    assert (verdict.waiting, verdict.missing, verdict.mismatch) == ([0, 1, 3], [2], [])
    assert verdict.summary == "all_reduce #10 (default_pg): rank 2 never joined (its last: #9)"
    assert verdict.worker_of(2) == "w2" and verdict.at_fault() == [2]
    assert verdict.path and verdict.path.endswith("record.py") and verdict.line == 23


def test_another_op_at_the_same_number_is_a_mismatch_with_its_call_site() -> None:
    [verdict] = judge(recorded("mismatch"))
    assert (verdict.seq, verdict.op, verdict.waiting, verdict.missing) == (
        6, "all_reduce", [0, 1, 2, 3], [],
    )  # fmt: skip
    [odd] = verdict.mismatch
    assert (odd.rank, odd.op, odd.sizes, odd.dtypes, odd.line) == (1, "broadcast", [[4]],
                                                                   ["Float"], 29)  # fmt: skip
    assert odd.path and odd.path.endswith("record.py")
    assert verdict.summary == (
        "all_reduce #6 (default_pg): rank 1 called broadcast at fr/record.py:29 where ranks "
        "0, 2, 3 called all_reduce"
    )


def test_a_mesh_dimensions_group_is_named_as_the_mesh_names_it_with_its_ranks() -> None:
    # The skip recording's four ranks, their world group described as torch describes a mesh
    # dimension's group: what a job whose dp dimension spans these ranks reports
    dumps = []
    for dump in recorded("skip"):
        groups = tuple(
            g.model_copy(update={"desc": "mesh_dp"}) if g.desc == "default_pg" else g
            for g in dump.identity.groups
        )
        dumps.append(RankDump(dump.worker, dump.identity.model_copy(update={"groups": groups}),
                              dump.recorder))  # fmt: skip
    [verdict] = judge(dumps)
    assert (verdict.group_desc, verdict.mesh_dim) == ("mesh_dp", "dp")
    assert (verdict.group_size, verdict.group_ranks) == (4, [0, 1, 2, 3])
    assert verdict.summary == (
        "all_reduce #10 (the dp group [0, 1, 2, 3]): rank 2 never joined (its last: #9)"
    )


def as_tp_group_of_dp_1(dumps: list[RankDump]) -> list[RankDump]:
    """Recorded ranks 0-3 as ranks 4-7 of an eight-rank 2 x 4 (dp, tp) mesh: dp 1, their
    recorded world group its tp group [4, 5, 6, 7] (their dp groups recorded nothing)."""
    placed = []
    for dump in dumps:
        world = next(g for g in dump.identity.groups if g.desc == "default_pg")
        rank = dump.identity.rank + 4
        dp = GroupInfo(name=f"dp{rank - 4}", desc="mesh_dp", spans=((rank - 4, rank + 1, 4),))
        tp = world.model_copy(update={"desc": "mesh_tp", "spans": ((4, 8, 1),)})
        identity = dump.identity.model_copy(
            update={"rank": rank, "world_size": 8, "groups": (dp, tp)}
        )
        placed.append(RankDump(dump.worker, identity, dump.recorder))
    return placed


def test_a_mesh_group_of_other_ranks_names_its_ranks_as_global_ranks() -> None:
    # "rank 2" of the tp group [4, 5, 6, 7] is global rank 6
    [verdict] = judge(as_tp_group_of_dp_1(recorded("skip")))
    assert (verdict.missing, verdict.waiting) == ([2], [0, 1, 3])  # the group's own ranks
    assert [(m.rank, m.global_rank) for m in verdict.members] == [(2, 6)]
    assert verdict.summary == (
        "all_reduce #10 (the tp group [4, 5, 6, 7]): rank 6 never joined (its last: #9)"
    )


def test_a_straggler_is_missing_from_the_collective_the_others_wait_in() -> None:
    [verdict] = judge(recorded("straggler"))
    assert (verdict.seq, verdict.waiting, verdict.missing) == (4, [0, 1, 2], [3])
    assert "rank 3 never joined (its last: #3)" in verdict.summary


def test_ranks_that_all_completed_are_no_verdict() -> None:
    assert judge(recorded("healthy")) == []


def test_a_rank_that_could_not_be_read_is_not_called_missing() -> None:
    [verdict] = judge(recorded("skip", drop=(2,)))
    # Without rank 2's recorder nobody disagrees: the others wait at #10. Never "none missing"
    # while a rank of the group is unread (issue "fleet": a dead rank was hidden so).
    assert (verdict.seq, verdict.waiting, verdict.missing) == (10, [0, 1, 3], [])
    assert verdict.worker_of(2) is None
    assert verdict.summary.endswith(
        "ranks 0, 1, 3 wait; rank 2 unread (no live worker is that rank)"
    )


# -- NCCL, on paper --------------------------------------------------------------------------


def nccl_entry(seq: int, op: str = "all_reduce", *, state: str = "completed",
               dtype: str = "Float", sizes: Any = ((1024,),), group: str = "0",
               p2p: bool = False, line: int = 10) -> dict[str, Any]:  # fmt: skip
    """An entry as torch's NCCL recorder writes it: ``state`` moves from scheduled to
    started to completed, with the times it was seen to."""
    done = state == "completed"
    return {
        "record_id": seq, "pg_id": int(group) if group.isdigit() else 7,
        "process_group": [group, "default_pg" if group == "0" else "undefined"],
        "collective_seq_id": 0 if p2p else seq, "p2p_seq_id": seq if p2p else 0, "op_id": seq,
        "profiling_name": f"nccl:{op}" + (" 0->1" if p2p else ""),
        "time_created_ns": 1_000 * seq, "input_sizes": [list(s) for s in sizes],
        "input_dtypes": [dtype] * len(sizes), "output_sizes": [list(s) for s in sizes],
        "output_dtypes": [dtype] * len(sizes), "state": state,
        "time_discovered_started_ns": 2_000 * seq if state != "scheduled" else None,
        "time_discovered_completed_ns": 3_000 * seq if done else None,
        "retired": done, "timeout_ms": 600_000, "is_p2p": p2p,
        "frames": [{"name": op, "filename": "/venv/site-packages/torch/distributed/distributed_c10d.py", "line": 1},  # noqa: E501
                   {"name": "step", "filename": "/job/train.py", "line": line}],
    }  # fmt: skip


def nccl_rank(
    rank: int,
    entries: list[dict[str, Any]],
    *,
    world: str = "10.0.0.1:29500",
    groups: list[dict[str, Any]] | None = None,
    world_size: int = 4,
) -> RankDump:
    groups = [
        {"name": g["name"], "desc": g["desc"], "spans": spans(g["ranks"])}
        for g in groups or [{"name": "0", "desc": "default_pg", "ranks": list(range(world_size))}]
    ]
    last: dict[str, int] = {}
    for e in entries:
        if not e["is_p2p"]:
            last[e["process_group"][0]] = max(last.get(e["process_group"][0], -1),
                                              e["collective_seq_id"])  # fmt: skip
    status = {g: {"last_enqueued_collective": n, "last_started_collective": -1,
                  "last_completed_collective": -1} for g, n in last.items()}  # fmt: skip
    body = {"identity": {"rank": rank, "world_size": world_size, "backend": "nccl",
                         "world": world, "groups": groups},
            "recorder": {"version": "2.10", "pg_status": status, "entries": entries}}  # fmt: skip
    reply = read_reply(body, 0)
    assert isinstance(reply, Reply) and reply.identity and reply.recorder, reply
    return RankDump(f"{world}/r{rank}", reply.identity, reply.recorder)


def test_nccl_another_dtype_is_a_mismatch_and_started_ops_wait() -> None:
    dumps = [
        nccl_rank(r, [nccl_entry(1), nccl_entry(2, state="started",
                                                 dtype="BFloat16" if r == 2 else "Float")])
        for r in range(4)
    ]  # fmt: skip
    [verdict] = judge(dumps)
    assert (verdict.seq, verdict.waiting, verdict.missing) == (2, [0, 1, 2, 3], [])
    [odd] = verdict.mismatch
    assert (odd.rank, odd.dtypes, odd.path, odd.line) == (2, ["BFloat16"], "/job/train.py", 10)
    assert "rank 2 called all_reduce at job/train.py:10 on sizes [[1024]] BFloat16" in (
        verdict.summary
    )


def test_nccl_completed_state_is_done_without_retired() -> None:
    done = [{**nccl_entry(s), "retired": False} for s in (1, 2)]
    assert judge([nccl_rank(r, done) for r in range(4)]) == []
    waiting = [*done[:1], {**nccl_entry(2, state="started"), "retired": False}]
    [verdict] = judge([nccl_rank(r, waiting) for r in range(4)])
    assert (verdict.seq, verdict.waiting, verdict.missing) == (2, [0, 1, 2, 3], [])


def test_a_pair_of_ranks_is_matched_send_for_recv() -> None:
    pair = [{"name": "3", "desc": "pipeline", "ranks": [2, 3]},
            {"name": "0", "desc": "default_pg", "ranks": [0, 1, 2, 3]}]  # fmt: skip
    sent = [nccl_entry(1, "send", group="3", p2p=True),
            nccl_entry(2, "send", group="3", p2p=True, state="scheduled")]  # fmt: skip
    received = [nccl_entry(1, "recv", group="3", p2p=True)]
    dumps = [nccl_rank(2, sent, groups=pair), nccl_rank(3, received, groups=pair)]
    [verdict] = judge(dumps)
    # ranks of the group, not of the world: global rank 3 is the pair's rank 1
    assert (verdict.group, verdict.p2p, verdict.op, verdict.seq) == ("3", True, "send", 2)
    assert (verdict.waiting, verdict.missing) == ([0], [1])
    assert verdict.worker_of(1) == "10.0.0.1:29500/r3"
    assert verdict.summary.startswith("send #2 (pipeline): rank 1 never joined")


def test_two_sends_at_one_number_in_a_pair_are_a_mismatch() -> None:
    pair = [{"name": "3", "desc": "pipeline", "ranks": [0, 1]}]
    dumps = [nccl_rank(r, [nccl_entry(1, "send", group="3", p2p=True, state="scheduled")],
                       groups=pair, world_size=2) for r in range(2)]  # fmt: skip
    [verdict] = judge(dumps)
    assert [m.rank for m in verdict.mismatch] == [1] and verdict.waiting == [0, 1]


def test_of_two_worlds_the_hung_one_is_named_with_its_own_ranks() -> None:
    """verl's actor and critic groups each have a rank 0: told apart by their store."""
    healthy = [nccl_rank(r, [nccl_entry(1), nccl_entry(2)], world="a:1", world_size=2)
               for r in range(2)]  # fmt: skip
    hung = [
        nccl_rank(0, [nccl_entry(1), nccl_entry(2, state="scheduled")], world="b:2", world_size=2),
        nccl_rank(1, [nccl_entry(1)], world="b:2", world_size=2),
    ]
    [verdict] = judge([*healthy, *hung])
    assert (verdict.world, verdict.seq, verdict.waiting, verdict.missing) == ("b:2", 2, [0], [1])
    assert verdict.worker_of(1) == "b:2/r1"


def test_the_group_holding_the_most_waiting_ranks_comes_first() -> None:
    groups = [{"name": "0", "desc": "default_pg", "ranks": [0, 1, 2, 3]},
              {"name": "1", "desc": "undefined", "ranks": [2, 3]}]  # fmt: skip
    dumps = [
        nccl_rank(r, [nccl_entry(1, state="scheduled")]
                  + ([nccl_entry(1, group="1", state="scheduled")] if r == 2 else []),
                  groups=groups if r >= 2 else groups[:1])
        for r in range(4)
    ]  # fmt: skip
    first, second = judge(dumps)
    assert (first.group, first.waiting, first.missing) == ("0", [0, 1, 2, 3], [])
    assert (second.group, second.waiting, second.missing) == ("1", [0], [1])
    assert "group 1" in second.summary


def test_tails_cut_at_different_places_are_compared_where_they_overlap() -> None:
    long = [nccl_entry(s) for s in range(1, 40)] + [nccl_entry(40, state="scheduled")]
    dumps = [nccl_rank(0, long[-10:]), nccl_rank(1, long[-30:]), nccl_rank(2, long[-5:]),
             nccl_rank(3, long[-20:-1])]  # fmt: skip
    [verdict] = judge(dumps)
    assert (verdict.seq, verdict.waiting, verdict.missing) == (40, [0, 1, 2], [3])


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"identity": {"rank": -1, "world_size": 2}}, "malformed recorder data (identity.rank"),
        ({"recorder": {"entries": [{"record_id": "x"}]}}, "malformed recorder data (recorder"),
        ({"recorder": {"entries": [nccl_entry(1)] * 600}}, "malformed recorder data"),
        ([1, 2], "malformed recorder data"),
    ],
)
def test_bad_dumps_are_reasons_not_errors(body: Any, reason: str) -> None:
    found = read_reply(body, 10)
    assert isinstance(found, str) and found.startswith(reason), found


def test_a_dump_over_the_cap_is_refused_before_it_is_read() -> None:
    assert "over the size cap" in str(read_reply({}, 3 * 1024 * 1024))


def test_ranks_read_as_a_person_writes_them() -> None:
    assert ranks_text([2]) == "rank 2"
    assert ranks_text([3, 0, 1, 2]) == "ranks 0-3"
    assert ranks_text([0, 1, 3]) == "ranks 0, 1, 3"
