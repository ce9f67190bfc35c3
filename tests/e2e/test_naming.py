"""Workers that run no listed task are named from what Ray reports: Ray Train ranks, Serve
replicas, and a ``breakpoint()`` in the driver script (real Ray Train and Serve jobs)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.e2e.conftest import BridgeProcess, Job

pytestmark = pytest.mark.e2e


def named(record: dict[str, object]) -> bool:
    return record["state"] == "paused" and record["task_name"] is not None


def test_ray_train_ranks_are_named_by_function_and_rank(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("train_ranks.py")
    records = bridge.wait_records(job.job_id, count=2, timeout=120, where=named)
    assert sorted(r["task_name"] for r in records) == ["train_loop rank 0", "train_loop rank 1"]
    assert {r["actor_class"] for r in records} == {"RayTrainWorker"}
    assert bridge.post("/api/v1/continue", {"filter": {"task": "train_loop*"}})["continued"]
    assert job.result(timeout=120) == "trained"


def test_a_serve_replica_is_named_by_application_deployment_and_replica(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("serve_replica.py")
    # A replica belongs to Serve's own job, not to the driver's that deployed it.
    [replica] = bridge.wait_records(
        None, timeout=120, where=lambda r: named(r) and str(r["task_name"]).startswith("serve ")
    )
    assert str(replica["task_name"]).startswith("serve shop/Echo replica ")
    assert replica["actor_class"] == "ServeReplica:shop:Echo"
    bridge.post(f"/api/v1/breakpoints/{replica['id']}/continue")
    assert job.result(timeout=120) == "hi"


def test_a_breakpoint_in_the_driver_is_named_driver(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("driver_breakpoint.py")
    [record] = bridge.wait_records(job.job_id, where=named)
    assert record["task_name"] == "driver"
    bridge.post(f"/api/v1/breakpoints/{record['id']}/continue")
    assert job.result() == "42"
