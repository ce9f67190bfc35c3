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
