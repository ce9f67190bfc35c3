"""Child processes of Ray workers on a real Ray head: multiprocessing (spawn) children of an
actor and a torch DataLoader's (forked) workers are held by the bridge like workers, stop at a
follow session's breakpoints, stop at their own ``breakpoint()``, and come and go without
disturbing their parents."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay
from tests.conftest import Connect
from tests.e2e.conftest import (
    JOBS,
    BridgeProcess,
    break_line,
    require_ptrace,
    start_job,
    stop_job,
)
from tests.e2e.test_bridge import evaluate
from tests.e2e.test_live import top_frame
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

#: The children's code, shipped as the job's working_dir (the editor's ``localRoot``).
CODE = JOBS / "children_code"
CHILD_WORK, CHILD_DATA = str(CODE / "child_work.py"), str(CODE / "child_data.py")
LOOP = break_line("children_code/child_work.py", "child")
OWN_BREAKPOINT = break_line("children_code/child_work.py", "child_breakpoint")
ITEM = break_line("children_code/child_data.py", "item")


def wait_for(
    bridge: BridgeProcess, what: Callable[[list[dict[str, Any]]], Any], timeout: float = 60
) -> Any:
    """What ``what`` finds in ``GET /api/v1/workers`` (anything but None or empty)."""
    return wait_until(
        lambda: what(bridge.get("/api/v1/workers")["workers"]),
        timeout=timeout,
        what="the workers awaited",
        context=lambda: str(bridge.get("/api/v1/workers")),
    )


def parent_running(job_id: str, task: str) -> Callable[[list[dict[str, Any]]], Any]:
    def find(workers: list[dict[str, Any]]) -> Any:
        return next((w for w in workers if w["job_id"] == job_id and w["task_name"] == task), None)

    return find


def children_of(parent_id: str, state: str | None = None) -> Callable[[list[dict]], list[dict]]:  # type: ignore[type-arg]
    def find(workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            w for w in workers if w["parent"] == parent_id and state in (None, w["state"])
        ]  # fmt: skip

    return find


class Started:
    """The child processes a job's workers started, as the bridge lists them: stopped by pid
    at the end, since a killed job leaves its workers' children running (``psutil`` knows
    each one's start time, so a reused pid is never mistaken for one of them)."""

    def __init__(self) -> None:
        self.processes: set[psutil.Process] = set()

    def note(self, workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for worker in workers:
            with contextlib.suppress(psutil.NoSuchProcess):
                if worker["parent"]:
                    self.processes.add(psutil.Process(worker["pid"]))
        return workers

    def stop(self) -> None:
        for process in self.processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(list(self.processes), timeout=10)


def files_of(tree: dict[str, Any], worker: str) -> set[str]:
    """The files of one worker's frames in a merged stack tree (function names differ by
    Python: py-spy says ``run`` on 3.10, ``Pool.run`` from 3.11)."""
    found = {Path(tree.get("path") or "").name} if worker in tree.get("workers", []) else set()
    for child in tree.get("children", []):
        found |= files_of(child, worker)
    return found


async def stops_at(client: DapClient, line: int, count: int) -> list[dict[str, Any]]:
    """The top frames of the next ``count`` stops, each at ``line``."""
    frames = []
    for _ in range(count):
        stop = (await client.wait_event("stopped", timeout=60)).body
        frame = await top_frame(client, stop["threadId"])
        assert frame["line"] == line, frame
        frames.append(frame)
    return frames


@pytest.mark.every_python
async def test_an_actors_children_stop_at_breakpoints_and_their_own_breakpoint_and_may_die(
    ray_head: LocalRay, bridge: BridgeProcess, dap_connect: Connect, tmp_path: Path
) -> None:
    require_ptrace()
    release = tmp_path / "release"
    env = {"CHILDREN_RELEASE": str(release), "CHILD_BREAKPOINT": "1"}
    job = await asyncio.to_thread(start_job, ray_head.address, "children_pool.py", env)
    started = Started()
    try:
        pool = await asyncio.to_thread(wait_for, bridge, parent_running(job.job_id, "Pool.run"))
        # Two children, and the resource tracker multiprocessing starts for spawned ones,
        # listed in the job.
        await asyncio.to_thread(
            wait_for,
            bridge,
            lambda ws: len([c for c in started.note(children_of(pool["id"])(ws))
                            if c["job_id"] == job.job_id]) >= 2,
        )  # fmt: skip

        # Running, they are read with py-spy: the merged stacks show them beside their parent,
        # in the job's code once they are in it (a child is held before it runs that code).
        def in_child_loop() -> dict[str, Any] | None:
            running = bridge.get(f"/api/v1/stacks?job={job.job_id}")
            read = [w["id"] for w in running["workers"] if w["parent"] == pool["id"]]
            looping = [c for c in read if "child_work.py" in files_of(running["tree"], c)]
            return running if looping else None

        running = await asyncio.to_thread(wait_until, in_child_loop, timeout=60, every=0.5)
        readers = {w["id"]: w for w in running["workers"]}
        assert pool["id"] in readers and "children_pool.py" in files_of(running["tree"], pool["id"])

        # A follow session's breakpoint in the children's code stops both where they loop.
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        await client.attach(follow={"job": job.job_id}, localRoot=str(CODE))
        answer = await client.request(
            "setBreakpoints", {"source": {"path": CHILD_WORK}, "breakpoints": [{"line": LOOP}]}
        )
        assert answer.body["breakpoints"][0]["verified"] is True
        frames = await stops_at(client, LOOP, 2)
        assert {await evaluate(client, frame, "index") for frame in frames} == {"1", "2"}
        stopped = await asyncio.to_thread(
            wait_for, bridge, lambda ws: len(children_of(pool["id"], "paused")(ws)) == 2 and ws
        )
        children = children_of(pool["id"], "paused")(stopped)
        assert sorted(c["task_name"] for c in children) == [
            "SpawnProcess-1 child_loop", "SpawnProcess-2 child_loop"
        ]  # fmt: skip
        threads = (await client.request("threads")).body["threads"]
        as_threads = [t["worker"] for t in threads if t["worker"].get("parent") == pool["id"]]
        assert {w["key"] for w in as_threads} >= {c["id"] for c in children}  # threads say so
        assert {(c["job_id"], c["live"], c["node_ip"]) for c in children} == {
            (job.job_id, True, pool["node_ip"])
        }

        # Paused, their stacks come from debugpy, still beside their parent.
        stacks = await asyncio.to_thread(bridge.get, f"/api/v1/stacks?job={job.job_id}")
        shown = {w["id"]: w for w in stacks["workers"]}
        assert {c["id"] for c in children} <= set(shown) and pool["id"] in shown
        assert all(shown[c["id"]]["parent"] == pool["id"] for c in children)
        assert all("child_work.py" in files_of(stacks["tree"], c["id"]) for c in children)
        assert "children_pool.py" in files_of(stacks["tree"], pool["id"])

        # Released and continued: child 1 stops in its own breakpoint(), listed with its parent.
        await client.request("setBreakpoints", {"source": {"path": CHILD_WORK}, "breakpoints": []})
        release.touch()
        await asyncio.to_thread(bridge.post, "/api/v1/continue", {"filter": {"job": job.job_id}})
        [own] = await stops_at(client, OWN_BREAKPOINT, 1)
        assert await evaluate(client, own, "index") == "1"
        [listed] = await asyncio.to_thread(
            wait_for,
            bridge,
            lambda ws: [b for b in bridge.get("/api/v1/breakpoints")["breakpoints"]
                        if b["parent"] == pool["id"] and b["state"] == "paused"],
        )  # fmt: skip
        assert listed["location"]["line"] == OWN_BREAKPOINT

        # Attachable by its id alone; killed, it leaves both sessions and its parent unharmed.
        alone = await dap_connect(bridge.dap_host, bridge.dap_port)
        await alone.attach(breakpoint=listed["id"])
        [thread] = (await alone.request("threads")).body["threads"]
        frame = await top_frame(alone, thread["id"])
        assert (frame["line"], await evaluate(alone, frame, "index")) == (OWN_BREAKPOINT, "1")
        os.kill(listed["pid"], signal.SIGKILL)
        await alone.wait_event("terminated")
        await client.wait_event("thread", where=lambda e: e.body["reason"] == "exited")
        assert await asyncio.to_thread(job.result) == "([200], [-9, 0])"
        assert listed["id"] not in {w["id"] for w in bridge.get("/api/v1/workers")["workers"]}
        threads = await client.request("threads")  # the session still answers
        assert listed["id"] not in str(threads.body)
    finally:
        stop_job(job)
        started.stop()


@pytest.mark.every_python
async def test_dataloader_workers_stop_at_a_breakpoint_set_before_they_started(
    ray_head: LocalRay, bridge: BridgeProcess, dap_connect: Connect
) -> None:
    pytest.importorskip("torch", reason="torch's CPU wheel is on disk for Python 3.11 only")
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(follow=True, localRoot=str(CODE))
    answer = await client.request(
        "setBreakpoints", {"source": {"path": CHILD_DATA}, "breakpoints": [{"line": ITEM}]}
    )
    assert answer.body["breakpoints"][0]["verified"] is False  # no worker has the file yet
    job = await asyncio.to_thread(start_job, ray_head.address, "children_loader.py")
    started = Started()
    try:
        # Each forked worker stops at its first item: the breakpoint reached it before it ran.
        frames = await stops_at(client, ITEM, 2)
        ids = {await evaluate(client, f, "torch.utils.data.get_worker_info().id") for f in frames}
        assert ids == {"0", "1"}
        assert {await evaluate(client, f, "i") for f in frames} == {"0", "1"}
        load = parent_running(job.job_id, "load")(bridge.get("/api/v1/workers")["workers"])
        named = await asyncio.to_thread(
            wait_for,
            bridge,
            lambda ws: sorted(c["task_name"] for c in started.note(children_of(load["id"])(ws))),
        )
        assert named == ["DataLoader worker 0", "DataLoader worker 1"]

        await client.request("setBreakpoints", {"source": {"path": CHILD_DATA}, "breakpoints": []})
        await asyncio.to_thread(bridge.post, "/api/v1/continue", {"filter": {"job": job.job_id}})
        assert await asyncio.to_thread(job.result) == "14"
        await asyncio.to_thread(
            wait_for, bridge, lambda ws: not children_of(load["id"])(ws) or None
        )
    finally:
        stop_job(job)
        started.stop()


@pytest.mark.every_python
async def test_a_job_that_turns_children_off_runs_them_undebugged(
    ray_head: LocalRay, bridge: BridgeProcess, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    release.touch()
    env = {"CHILDREN_RELEASE": str(release), "CHILD_BREAKPOINT": "1", "RAYDAP_CHILDREN": "0"}
    job = await asyncio.to_thread(start_job, ray_head.address, "children_pool.py", env)
    try:
        result = asyncio.create_task(asyncio.to_thread(job.result))
        seen: set[str] = set()
        while not result.done():
            workers = bridge.get("/api/v1/workers")["workers"]
            seen |= {w["id"] for w in workers if w["job_id"] == job.job_id and w["parent"]}
            await asyncio.sleep(0.1)
        # Child 1's breakpoint() is skipped (with a warning in its log), not waited in.
        assert await result == "([100, 200], [0, 0])"
        assert not seen
    finally:
        stop_job(job)
