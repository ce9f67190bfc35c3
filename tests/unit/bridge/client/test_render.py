"""The terminal's table of workers."""

from raydap.bridge.client.render import breakpoints_table, under_parents


def record(rid: str, parent: str | None = None, task: str = "t") -> dict[str, object]:
    return {"id": rid, "parent": parent, "task_name": task, "state": "running", "live": True,
            "node_ip": "10.0.0.1", "pid": 1, "paused_since": 0}  # fmt: skip


def test_children_are_listed_under_their_worker_grandchildren_too() -> None:
    records = [record("c1", "w1"), record("w2"), record("g1", "c1"), record("w1"), record("o", "x")]
    assert [r["id"] for r in under_parents(records)] == ["w2", "w1", "c1", "g1", "o"]


def test_a_childs_task_is_marked_as_one() -> None:
    lines = breakpoints_table(
        [record("w1", task="Pool.run"), record("c1", "w1", "SpawnProcess-1 f")]
    )
    assert "└ SpawnProcess-1 f" in lines.splitlines()[2]
    assert " Pool.run" in lines.splitlines()[1]


def test_raydap_hangs_prints_each_rank_that_waits_for_a_collective_it_issued() -> None:
    from raydap.bridge.client.render_stacks import hang_report
    from raydap.bridge.cluster.pyspy import Frame
    from raydap.bridge.hangs.async_waits import async_waits
    from raydap.bridge.hangs.verdicts import RankSample
    from tests.unit.bridge.hangs.test_nccl import dumps_of, replies

    item = Frame(function="rank_main", path="/srv/train/nccl_check.py", line=253)
    samples = {f"w{r}": RankSample(f"w{r}", r, None, (item,)) for r in range(4)}
    waits = [w.model_dump(mode="json") for w in async_waits(dumps_of(replies("skip")), samples)]
    verdict = {"job": "02000000", "state": "suspected_hang", "since": 0.0, "groups": [],
               "stragglers": [], "summary": "no progress", "waits": waits}  # fmt: skip
    printed = hang_report({"jobs": [verdict], "hang_after": 60}, now=100.0)
    assert (
        "  waits: rank 3 for all_reduce #9 (nccl) called at /srv/train/nccl_check.py:244, "
        "blocked at /srv/train/nccl_check.py:253"
    ) in printed.splitlines(), printed


def test_raydap_hangs_names_a_mesh_groups_ranks_as_its_summary_does() -> None:
    from raydap.bridge.client.render_stacks import hang_report
    from raydap.bridge.hangs.desync import judge
    from tests.unit.bridge.hangs.test_desync import as_tp_group_of_dp_1, recorded

    [found] = judge(as_tp_group_of_dp_1(recorded("skip")))
    verdict = {"job": "01000000", "state": "suspected_hang", "since": 0.0, "groups": [],
               "stragglers": [], "summary": found.summary,
               "collective": found.model_dump(mode="json")}  # fmt: skip
    printed = hang_report({"jobs": [verdict], "hang_after": 60}, now=100.0).splitlines()
    assert (
        "  collective: all_reduce #10 in the tp group, group 0 (mesh_tp), global ranks: "
        "waiting 4, 5, 7; missing 6"
    ) in printed, printed


def test_raydap_stacks_by_a_dimension_prints_a_tree_per_coordinate() -> None:
    from raydap.bridge.client.render_stacks import stack_tree
    from raydap.bridge.cluster.pyspy import Frame
    from raydap.bridge.hangs.stack_groups import by_coordinate
    from raydap.bridge.hangs.stack_tree import merge

    def at(line: int) -> list[Frame]:
        return [Frame(function="step", path="/srv/train.py", line=line)]

    read = {"b2": at(30), "a1": at(30), "c3": at(41)}  # rank 1 read first: shown in rank order
    groups = by_coordinate(read, {"a1": 0, "b2": 0, "c3": 1})
    answer = {
        "tree": merge(read).model_dump(exclude_none=True), "all_frames": True, "by": "pp",
        "workers": [{"id": w, "rank": r} for w, r in (("a1", 0), ("b2", 1), ("c3", 2))],
        "groups": [g.model_dump(exclude_none=True) for g in groups],
    }  # fmt: skip
    assert stack_tree(answer).splitlines() == [
        "3 workers",
        "pp=0: 2 workers",
        "  └─ step  /srv/train.py:30  [2: r0, r1]",
        "pp=1: 1 worker",
        "  └─ step  /srv/train.py:41  [1: r2]",
    ]


def test_raydap_hangs_names_a_stragglers_mesh_coordinates() -> None:
    from raydap.bridge.client.render_stacks import hang_report

    straggler = {"worker": "3a4b", "rank": 3, "role": None, "coords": {"dp": 1, "tp": 1},
                 "function": "hang", "path": "/job/mesh.py", "line": 9, "why": None}  # fmt: skip
    verdict = {"job": "01000000", "state": "suspected_hang", "since": 0.0, "groups": [],
               "stragglers": [straggler], "summary": "no progress"}  # fmt: skip
    printed = hang_report({"jobs": [verdict], "hang_after": 60}, now=100.0).splitlines()
    assert "  straggler: rank 3 dp=1 tp=1 3a4b in hang /job/mesh.py:9" in printed, printed
