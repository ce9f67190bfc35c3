"""Live debugging on a real Ray head: a job made live by ``raydap.live.setup`` has no
``breakpoint()`` anywhere, and is debugged with editor breakpoints and Pause while it runs."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.cluster.live_marks import BREAKPOINTS_KEY
from raydap.bridge.cluster.locate import gcs_client
from raydap.live import NAMESPACE, mark_key
from tests.conftest import Connect, runtime_dir
from tests.e2e.conftest import (
    JOBS,
    BridgeProcess,
    Job,
    break_line,
    start_bridge,
    start_job,
    stop_bridge,
    stop_job,
)
from tests.e2e.test_bridge import (
    bridge_captured_failure,
    evaluate,
    raydap,
    shows_post_mortem_stop,
)
from tests.waiting import until, wait_until

pytestmark = pytest.mark.e2e

SCRIPT = str(JOBS / "live_ranks.py")
LOOP = break_line("live_ranks.py", "loop")


def wait_workers(
    bridge: BridgeProcess,
    job_id: str,
    where: Callable[[dict[str, Any]], bool],
    count: int = 2,
    timeout: float = 60,
) -> list[dict[str, Any]]:
    """``count`` workers of the job in ``GET /api/v1/workers`` that match ``where``."""

    def matching() -> tuple[list[dict[str, Any]]] | None:  # a tuple: no workers counts too
        workers = [w for w in bridge.get("/api/v1/workers")["workers"] if w["job_id"] == job_id]
        if len([w for w in workers if where(w)]) == count:
            return (sorted(workers, key=lambda w: w["pid"]),)
        return None

    [found] = wait_until(
        matching,
        timeout=timeout,
        what=f"{count} workers of {job_id}",
        context=lambda: str(bridge.get("/api/v1/workers")),
    )
    return found


def running_ranks(w: dict[str, Any]) -> bool:
    return w["state"] == "running" and w["live"] and w["task_name"] == "Rank.run"


def paused_at_loop(w: dict[str, Any]) -> bool:
    return w["state"] == "paused" and (w["location"] or {}).get("line") == LOOP


async def top_frame(client: Any, thread_id: int) -> dict[str, Any]:
    trace = await client.request("stackTrace", {"threadId": thread_id})
    return dict(trace.body["stackFrames"][0])


async def follow_with_conditional_breakpoint(
    dap_connect: Connect, bridge: BridgeProcess, job: Job, ranks: list[dict[str, Any]]
) -> Any:
    """A follow session of the job's ranks with a breakpoint on the loop that holds until the
    test sets ``probe`` in a rank; the session's client."""
    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(follow={"job": job.job_id})
    for _ in ranks:
        await client.wait_event("thread", where=lambda e: e.body["reason"] == "started")
    condition = "getattr(self, 'probe', False)"  # false until the test says otherwise
    answer = await client.request(
        "setBreakpoints",
        {"source": {"path": SCRIPT}, "breakpoints": [{"line": LOOP, "condition": condition}]},
    )
    assert answer.body["breakpoints"][0]["verified"] is True
    return client


async def rank0_meets_the_condition(
    bridge: BridgeProcess, job: Job, ranks: list[dict[str, Any]]
) -> None:
    """Rank 0 is given ``probe`` and stops at the breakpoint; rank 1 runs on."""
    rank0 = ranks[0]["id"]
    await asyncio.to_thread(bridge.post, f"/api/v1/workers/{rank0}/pause")
    where = {"filter": {"job": job.job_id}}
    probe = {"expression": "setattr(self, 'probe', True)", **where}
    assert [r["id"] for r in bridge.post("/api/v1/evaluate", probe)["results"]] == [rank0]
    bridge.post("/api/v1/continue", where)
    hit = await asyncio.to_thread(wait_workers, bridge, job.job_id, paused_at_loop, 1)
    assert [w["id"] for w in hit if w["state"] == "paused"] == [rank0]


async def finish_every_rank(bridge: BridgeProcess, job: Job) -> None:
    """Pause both ranks, tell them to finish with 3, and check the job's result."""
    where = {"filter": {"job": job.job_id}}
    answer = bridge.post("/api/v1/pause", where)
    assert set(answer) == {"paused", "failed"} and answer["failed"] == [], answer
    await asyncio.to_thread(wait_workers, bridge, job.job_id, lambda w: w["state"] == "paused")
    finish = {"expression": "setattr(self, 'finish', 3)", **where}
    assert len(bridge.post("/api/v1/evaluate", finish)["results"]) == 2
    bridge.post("/api/v1/continue", where)
    assert await asyncio.to_thread(job.result) == "[3, 13]"


@pytest.mark.every_python
async def test_editor_breakpoints_and_pause_on_ranks_with_no_breakpoint_in_their_code(
    ray_head: LocalRay, bridge: BridgeProcess, run_job: Callable[[str], Job], dap_connect: Connect
) -> None:
    job = run_job("live_ranks.py")
    ranks = await asyncio.to_thread(wait_workers, bridge, job.job_id, running_ranks)
    assert not [
        b for b in bridge.get("/api/v1/breakpoints")["breakpoints"] if b["job_id"] == job.job_id
    ]  # fmt: skip  (running: not a breakpoint)
    assert [r["unsupported"] for r in ranks] == [[], []]  # every hook raydap uses is there

    listing = (await asyncio.to_thread(raydap, bridge, "list", "--all")).stdout.splitlines()
    for rank in ranks:
        [line] = [line for line in listing if line.startswith(rank["id"])]
        assert "running (live)" in line and "Rank.run" in line

    client = await dap_connect(bridge.dap_host, bridge.dap_port)
    await client.attach(follow={"job": job.job_id})
    started = [await client.wait_event("thread", where=lambda e: e.body["reason"] == "started")
               for _ in ranks]  # fmt: skip
    thread_ids = {e.body["threadId"] for e in started}
    threads = (await client.request("threads")).body["threads"]
    assert {t["id"] for t in threads} == thread_ids
    assert all(t["name"].startswith("Rank.run (pid ") for t in threads)

    # Pause over HTTP stops one rank where it is (it ran untraced until then).
    first, second = ranks
    paused = await asyncio.to_thread(bridge.post, f"/api/v1/workers/{first['id']}/pause")
    assert paused["paused"]["location"]["function"] == "run"
    stop = (await client.wait_event("stopped", timeout=30)).body
    assert stop["reason"] == "pause"
    frame = await top_frame(client, stop["threadId"])
    assert frame["name"] == "run"
    assert await evaluate(client, frame, "rank") in ("0", "1")
    assert await evaluate(client, frame, "steps > 0") == "True"
    await client.request("continue", {"threadId": stop["threadId"]})
    await asyncio.to_thread(wait_workers, bridge, job.job_id, running_ranks)

    # The job's running ranks, paused as a group from the command line, then continued.
    said = await asyncio.to_thread(raydap, bridge, "pause", "--job", job.job_id)
    assert said.returncode == 0 and said.stdout.startswith("paused 2 worker(s): ")
    assert set(said.stdout.split()[3:]) == {first["id"], second["id"]}
    stops = [(await client.wait_event("stopped", timeout=30)).body for _ in ranks]
    assert {s["threadId"] for s in stops} == thread_ids
    continued = await client.request("raydapContinueAll", {})
    assert len(continued.body["continued"]) == 2
    await asyncio.to_thread(wait_workers, bridge, job.job_id, running_ranks)

    # A gutter breakpoint on the loop stops both ranks there.
    answer = await client.request(
        "setBreakpoints", {"source": {"path": SCRIPT}, "breakpoints": [{"line": LOOP}]}
    )
    assert [(b["verified"], b["line"]) for b in answer.body["breakpoints"]] == [(True, LOOP)]
    elsewhere = await client.request(
        "setBreakpoints", {"source": {"path": "/no/such/file.py"}, "breakpoints": [{"line": 3}]}
    )
    [unverified] = elsewhere.body["breakpoints"]
    assert unverified["verified"] is False and "does not exist" in unverified["message"]
    stops = [(await client.wait_event("stopped", timeout=30)).body for _ in ranks]
    assert {s["threadId"] for s in stops} == thread_ids
    assert all(s["reason"] == "breakpoint" for s in stops)
    seen = set()
    for stop in stops:
        frame = await top_frame(client, stop["threadId"])
        assert (frame["name"], frame["line"]) == ("run", LOOP)
        seen.add(await evaluate(client, frame, "rank"))
        await evaluate(client, frame, "self.finish = 7")  # each rank is told to finish
    assert seen == {"0", "1"}
    listed = await asyncio.to_thread(wait_workers, bridge, job.job_id, paused_at_loop)
    assert {w["id"] for w in listed} == {r["id"] for r in ranks}
    assert len([b for b in bridge.get("/api/v1/breakpoints")["breakpoints"]
                if b["job_id"] == job.job_id]) == 2  # fmt: skip

    # Cleared and continued, the ranks finish with the values they were given.
    await client.request("setBreakpoints", {"source": {"path": SCRIPT}, "breakpoints": []})
    await asyncio.to_thread(bridge.post, "/api/v1/continue", {"filter": {"job": job.job_id}})
    assert await asyncio.to_thread(job.result) == "[7, 17]"

    # The workers exit with the job: their threads leave the session, and their marks GCS.
    for _ in ranks:
        await client.wait_event("thread", where=lambda e: e.body["reason"] == "exited")
    await asyncio.to_thread(wait_workers, bridge, job.job_id, lambda w: True, 0)
    gcs = gcs_client(ray_head.address)
    await until(
        lambda: (
            not any(
                gcs.internal_kv_get(mark_key(r["worker_id"]).encode(), namespace=NAMESPACE.encode())
                for r in ranks
            )
        ),
        timeout=10,
        every=0.2,
        what="the marks of exited live workers gone from GCS",
    )


@pytest.fixture(scope="module")
def live_head() -> Iterator[LocalRay]:
    """A head of this test's own: the shared bridge would hold its live workers otherwise
    (debugpy takes one client)."""
    with LocalRay(num_cpus=2) as head:
        yield head


def captured(bridge: BridgeProcess, point: str, count: int) -> list[dict[str, Any]]:
    """The point's captures, once there are ``count``."""

    def enough() -> list[dict[str, Any]] | None:
        found = bridge.get(f"/api/v1/captures?point={point}")["captures"]
        return list(found) if len(found) >= count else None

    return wait_until(enough, timeout=30, what=f"{count} captures of {point}")


async def test_a_restarted_bridge_holds_live_workers_again_with_their_breakpoints(
    live_head: LocalRay, tmp_path: Path, dap_connect: Connect
) -> None:
    kept_in = ["--address", live_head.address, "--captures", str(tmp_path / "captures")]
    first = start_bridge(kept_in, tmp_path / "first.log")
    second: BridgeProcess | None = None
    job = await asyncio.to_thread(start_job, live_head.address, "live_ranks.py")
    try:
        ranks = await asyncio.to_thread(wait_workers, first, job.job_id, running_ranks)
        await follow_with_conditional_breakpoint(dap_connect, first, job, ranks)
        # A capture point set over HTTP on the same line, and what it took before the crash.
        point = first.post("/api/v1/capture-points", {"path": SCRIPT, "line": LOOP,
                                                      "interval": 0.2, "most": 1000})  # fmt: skip
        taken = await asyncio.to_thread(captured, first, point["id"], 2)
        gcs = gcs_client(live_head.address)

        def kept() -> bool:  # what a bridge that restarts reads: the breakpoint kept in GCS
            value = gcs.internal_kv_get(BREAKPOINTS_KEY, namespace=NAMESPACE.encode())
            return b"probe" in (value or b"")

        await until(kept, timeout=10, every=0.05, what="the conditional breakpoint kept in GCS")

        first.process.kill()  # a crash: nothing is cleaned up
        first.process.wait()
        (runtime_dir() / f"bridge-{first.process.pid}.json").unlink(missing_ok=True)
        second = start_bridge(kept_in, tmp_path / "second.log")
        again = await asyncio.to_thread(wait_workers, second, job.job_id, running_ranks)
        assert [w["id"] for w in again] == [r["id"] for r in ranks]
        # The point and its captures were kept; the point is back in the workers, capturing.
        listed = second.get("/api/v1/capture-points")["points"]
        [back] = [p for p in listed if p["id"] == point["id"]]
        assert (back["owner"], back["line"]) == (point["owner"], LOOP)
        after = await asyncio.to_thread(captured, second, point["id"], len(taken) + 2)
        assert {c["id"] for c in taken} < {c["id"] for c in after}
        second.delete(f"/api/v1/capture-points/{point['id']}")

        # The kept breakpoint is back in the workers: make rank 0 meet its condition.
        await rank0_meets_the_condition(second, job, ranks)

        # Cleared by a client, and the job is let finish.
        cleaner = await dap_connect(second.dap_host, second.dap_port)
        await cleaner.attach(follow={"job": job.job_id})
        for _ in ranks:
            await cleaner.wait_event("thread", where=lambda e: e.body["reason"] == "started")
        await cleaner.request("setBreakpoints", {"source": {"path": SCRIPT}, "breakpoints": []})
        await finish_every_rank(second, job)
    finally:
        stop_job(job)
        if first.process.poll() is None:
            stop_bridge(first)
        if second is not None:
            stop_bridge(second)


@pytest.mark.every_python
async def test_a_live_workers_post_mortem_stop_shows_the_raising_frame(
    ray_head: LocalRay, bridge: BridgeProcess, dap_connect: Connect, tmp_path: Path
) -> None:
    """On Python 3.12+ pydevd nests Ray's post-mortem stop inside itself unless the live hook
    keeps the thread's monitoring off for it: listed and shown where the exception was raised,
    on every version."""
    flag = tmp_path / "fail now"
    job = start_job(ray_head.address, "live_post_mortem.py", {"FLAG": str(flag)})
    try:
        await asyncio.to_thread(wait_workers, bridge, job.job_id, lambda w: w["live"], 1)
        flag.touch()  # held while it runs: the failure is this live worker's
        [record] = bridge.wait_records(job.job_id)
        assert record["live"] and record["kind"] == "exception"
        assert record["exception"] == {"type": "ValueError", "message": "bad batch 4"}
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        stopped = await shows_post_mortem_stop(client, record, "live_post_mortem.py", 4)
        await client.request("continue", {"threadId": stopped["threadId"]})
        assert job.result() == "raised ValueError"
    finally:
        stop_job(job)


@pytest.mark.every_python
async def test_rays_own_set_trace_in_a_live_worker_stops_at_the_users_line(
    ray_head: LocalRay, bridge: BridgeProcess, dap_connect: Connect, tmp_path: Path
) -> None:
    """Ray's hook (``ray.util.pdb.set_trace()``; a live worker's ``breakpoint()`` goes through
    debugpy's own) stops in Ray's ``rpdb.py`` on 3.12+ unless the live hook patched it."""
    flag = tmp_path / "stop now"
    job = start_job(ray_head.address, "live_set_trace.py", {"FLAG": str(flag)})
    try:
        await asyncio.to_thread(wait_workers, bridge, job.job_id, lambda w: w["live"], 1)
        flag.touch()
        [record] = bridge.wait_records(job.job_id)
        line = break_line("live_set_trace.py", "set_trace")
        assert (record["location"]["function"], record["location"]["line"]) == ("scale", line)
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        await client.attach(breakpoint=record["id"])
        stopped = (await client.wait_event("stopped", timeout=60)).body
        await client.request("next", {"threadId": stopped["threadId"]})
        stepped = (await client.wait_event("stopped", timeout=60)).body
        frame = await top_frame(client, stepped["threadId"])
        assert (frame["name"], frame["line"]) == ("scale", line + 1)
        assert await evaluate(client, frame, "y") == "15"
        await client.request("continue", {"threadId": stepped["threadId"]})
        assert job.result() == "16"
    finally:
        stop_job(job)


@pytest.mark.every_python
async def test_a_failed_task_is_captured_and_let_go_unless_its_job_is_followed(
    live_head: LocalRay, tmp_path: Path, dap_connect: Connect
) -> None:
    """``--post-mortem-hold 0``: a post-mortem stop nobody debugs is captured and let go at
    once, so the task fails with its own error (its GPUs freed); the capture keeps the failure
    debuggable. A stop in a job someone follows is held as before."""
    # Captures of its own: another head's job has the same id (01000000) in the session's.
    args = ["--address", live_head.address, "--post-mortem-hold", "0",
            "--captures", str(tmp_path / "captures")]  # fmt: skip
    bridge = start_bridge(args, tmp_path / "bridge.log")
    jobs: list[Job] = []
    try:
        jobs.append(await asyncio.to_thread(start_job, live_head.address, "post_mortem.py"))
        assert await asyncio.to_thread(jobs[0].result, 60) == "raised ValueError"
        [capture] = await asyncio.to_thread(bridge_captured_failure, bridge, jobs[0].job_id)
        viewer = await dap_connect(bridge.dap_host, bridge.dap_port)
        await viewer.attach(capture=capture["id"])
        stop = (await viewer.wait_event("stopped", timeout=10)).body
        assert (stop["reason"], stop["text"]) == ("exception", "ValueError: bad batch 3")
        [top] = (await viewer.request("stackTrace", {"threadId": 1, "levels": 1})).body[
            "stackFrames"
        ]
        assert (top["name"], top["line"]) == ("load", break_line("post_mortem.py", "load"))
        assert await evaluate(viewer, top, "batch") == "3"

        flag = tmp_path / "fail now"
        env = {"FLAG": str(flag)}
        jobs.append(
            await asyncio.to_thread(start_job, live_head.address, "live_post_mortem.py", env)
        )
        await asyncio.to_thread(wait_workers, bridge, jobs[1].job_id, lambda w: w["live"], 1)
        follower = await dap_connect(bridge.dap_host, bridge.dap_port)
        await follower.attach(follow={"job": jobs[1].job_id})
        flag.touch()
        held = (await follower.wait_event("stopped", timeout=60)).body
        await asyncio.sleep(2.0)  # well past a hold of 0 s
        [record] = bridge.records(jobs[1].job_id)
        assert record["state"] == "paused" and record["kind"] == "exception"
        await follower.request("continue", {"threadId": held["threadId"]})
        assert await asyncio.to_thread(jobs[1].result) == "raised ValueError"
    finally:
        for job in jobs:
            stop_job(job)
        stop_bridge(bridge)
