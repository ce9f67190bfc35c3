"""Benchmarks of hang diagnosis (issue 25; figures in docs/performance.md).

    python -m bench.hangs [--smoke] [--minutes M] [--json PATH]

H1  stacks with locals of 1,000 and 10,000 simulated ranks: the bridge's own work (parse each
    rank's py-spy JSON, fold, merge, read ranks, answer as JSON) in this process. On a cluster
    the reading itself runs on every node at once (one pinned task per node), so it grows
    with ranks per node, not with the cluster: what is simulated is the py-spy answers, not
    the bridge. Also: one hang verdict over as many ranks. (Real ranks: P6 of bench.run.)
H2  the hang watch left on over 16 live ranks doing CPU work for M minutes (10), against the
    same job with the watch off: the job's throughput, and the bridge's CPU.
H3  four real gloo ranks train; rank 3 gets stuck in its data loader: the time from then to
    the suspected-hang verdict, with ``--hang-after 20``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from bench.harness import (
    HERE,
    http,
    line_from,
    ms,
    options_for,
    process,
    report,
    serve,
    settle,
    until,
    usage,
)
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.cluster.dashboard import TaskRow, WorkerRow
from raydap.bridge.cluster.pyspy import parse_json
from raydap.bridge.cluster.remote_stacks import Reading
from raydap.bridge.hangs import stacks
from raydap.bridge.hangs.frames import fold
from raydap.bridge.hangs.verdicts import HangJudge, RankSample
from raydap.bridge.workers.filters import WorkerFilter
from raydap.bridge.workers.holder import Holder
from raydap.bridge.workers.registry import Registry

SITE = "/venv/lib/python3.11/site-packages"
HANG_AFTER = 20.0


# -- H1: simulated ranks -------------------------------------------------------------------------


def _pyspy_json(rank: int) -> str:
    """What ``py-spy dump --json --locals`` says of one rank: Ray's frames, the job's, and
    the collective where it waits (the last rank in its data loader instead)."""

    def frame(name: str, path: str, line: int, **local: str) -> dict[str, Any]:
        return {"name": name, "filename": path, "line": line, "module": None,
                "locals": [{"name": k, "repr": v} for k, v in local.items()]}  # fmt: skip

    ray = [
        frame("execute_task", "python/ray/_raylet.pyx", 2306),
        frame("Worker.main_loop", f"{SITE}/ray/_private/worker.py", 1069),
        frame("<module>", f"{SITE}/ray/_private/workers/default_worker.py", 323),
    ]
    state = {"step": "641", "loss": f"tensor({rank / 1000:.4f})", "batch": "tensor([...])"}
    if rank % 1000 == 999:
        inner = [frame("Rank.fetch_batch", "/job/train.py", 37, step="640", ready="False"),
                 frame("Rank.train", "/job/train.py", 44, **state)]  # fmt: skip
    else:
        inner = [
            frame("all_reduce", f"{SITE}/torch/distributed/distributed_c10d.py", 3252,
                  tensor="tensor([...])", op="<RedOpType.SUM: 0>"),
            frame("wrapper", f"{SITE}/torch/distributed/c10d_logger.py", 83),
            frame("Rank.train", "/job/train.py", 48, **state),
        ]  # fmt: skip
    return json.dumps([{"thread_name": "MainThread", "os_thread_id": 1000 + rank,
                        "frames": [*inner, *ray]}])  # fmt: skip


class SimulatedCluster:
    """Stands in for the dashboard and the nodes: ``ranks`` workers running a task, each
    answering its py-spy JSON (parsed here, as the bridge parses what nodes send)."""

    def __init__(self, ranks: int) -> None:
        self.texts = {f"{index:012x}": _pyspy_json(index) for index in range(ranks)}
        self.dashboard = self

    async def running_tasks(self) -> list[tuple[TaskRow, WorkerRow]]:
        return [
            (TaskRow(task_id=f"t{wid}", name="Rank.train", state="RUNNING", job_id="01000000",
                     worker_id=wid, type="ACTOR_TASK"),
             WorkerRow(worker_id=wid, ip="10.0.0.1", pid=1000 + i, node_id=f"n{i // 8}"))
            for i, wid in enumerate(self.texts)
        ]  # fmt: skip

    async def read(
        self, targets: dict[str, Any], flags: tuple[str, ...] = (), env: tuple[str, ...] = ()
    ) -> dict[str, Reading | str]:
        return {
            wid: Reading(parse_json(self.texts[wid]), {"RANK": str(int(wid, 16))})
            for wid in targets
        }


async def h1_simulated(ranks: int, rounds: int) -> dict[str, Any]:
    cluster = SimulatedCluster(ranks)
    holder = Holder(Registry())
    options = stacks.StackOptions(locals=True)
    times, answer_bytes = [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        answer = await stacks.stacks(holder, WorkerFilter(), cluster, options)  # type: ignore[arg-type]
        answer_bytes = len(json.dumps(answer))
        times.append(time.perf_counter() - start)
    readings = await cluster.read(dict.fromkeys(cluster.texts))
    samples = [
        RankSample(wid, i, None, tuple(fold(r.threads[0].frames)))
        for i, (wid, r) in enumerate(readings.items())
        if isinstance(r, Reading)
    ]
    judge, verdicts = HangJudge(hang_after=60), []
    for second in (0, 61):
        start = time.perf_counter()
        verdict = judge.observe("01000000", samples, now=float(second))
        verdicts.append(time.perf_counter() - start)
    return {
        "ranks": ranks,
        "with_locals": ms(times),
        "answer_mb": round(answer_bytes / 1e6, 2),
        "rss_mb": round(psutil.Process().memory_info().rss / 2**20, 1),
        "verdict": ms(verdicts),
        "stragglers": len(verdict.stragglers),
    }


# -- H2: the watch's cost ----------------------------------------------------------------------


async def _busy_run(ray: str, ranks: int, seconds: float, watch: str) -> dict[str, Any]:
    """One run of the busy job under a bridge with ``--hang-watch`` ``watch``: its steps, the
    bridge's CPU, and the verdicts the watch gave meanwhile."""
    with serve("--address", ray, "--hang-watch", watch) as (bridge, url, _):
        env = dict(os.environ, RAY_ADDRESS=ray)
        command = [sys.executable, str(HERE / "jobs" / "busy_ranks.py"), str(ranks), str(seconds)]
        with process(command, env, stdin=True) as job:
            assert job.stdout is not None and job.stdin is not None
            job_id = (await line_from(job.stdout, "READY")).split()[1]

            def held() -> bool:
                workers = http(url + "/api/v1/workers")["workers"]
                return sum(w["live"] for w in workers) >= ranks

            await until(held, 180, every=0.5)
            await settle()
            _, _, cpu_before = usage(bridge.pid)
            job.stdin.write(f"{time.time() + 1}\n")
            job.stdin.flush()
            states: set[str] = set()
            finished = asyncio.ensure_future(line_from(job.stdout, "STEPS"))
            while not finished.done():
                await asyncio.wait({finished}, timeout=5)
                for verdict in http(url + "/api/v1/hangs")["jobs"] if watch != "off" else []:
                    if verdict["job"] == job_id:
                        states.add(verdict["state"])
            steps = int(finished.result().split()[1])
            _, _, cpu_after = usage(bridge.pid)
    cpu = round(100 * (cpu_after - cpu_before) / seconds, 2)
    return {"steps": steps, "bridge_cpu_percent": cpu, "verdicts": sorted(states)}


async def h2_watch(ray: str, ranks: int, seconds: float) -> dict[str, Any]:
    """The same job with the watch off, then on (the default ``--hang-watch live``)."""
    off = await _busy_run(ray, ranks, seconds, "off")
    on = await _busy_run(ray, ranks, seconds, "live")
    return {"ranks": ranks, "seconds": seconds, "off": off, "on": on,
            "throughput_on_off": round(on["steps"] / off["steps"], 4)}  # fmt: skip


# -- H3: time to the verdict ---------------------------------------------------------------------


def _hung(url: str, job_id: str) -> float | None:
    """When the bridge was first seen to call the job a suspected hang."""
    for verdict in http(url + "/api/v1/hangs")["jobs"]:
        if verdict["job"] == job_id and verdict["state"] == "suspected_hang":
            return time.time()
    return None


async def stuck_delay(ray: str, url: str, seen: Callable[[str, str], Any]) -> tuple[float, str]:
    """Run ``gloo_stuck.py`` (rank 3 gets stuck in its data loader) until ``seen(url, job)``
    answers: how long after the rank got stuck that was, and the job."""
    with tempfile.TemporaryDirectory() as folder:
        stuck = Path(folder) / "stuck"
        env = dict(os.environ, RAY_ADDRESS=ray)
        command = [sys.executable, str(HERE / "jobs" / "gloo_stuck.py"), str(stuck)]
        with process(command, env) as job:
            assert job.stdout is not None
            job_id = (await line_from(job.stdout, "JOB")).split()[1]
            await until(functools.partial(seen, url, job_id), 300, every=0.2)
            return time.time() - float(stuck.read_text()), job_id


async def h3_verdict(ray: str, rounds: int) -> dict[str, Any]:
    delays = []
    with serve("--address", ray, "--hang-after", str(HANG_AFTER)) as (_, url, _port):
        for _ in range(rounds):
            delays.append((await stuck_delay(ray, url, _hung))[0])
    return {"hang_after_s": HANG_AFTER, "delay_s": [round(d, 1) for d in delays],
            "over_hang_after_s": round(max(delays) - HANG_AFTER, 1)}  # fmt: skip


async def run(smoke: bool, minutes: float) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "smoke": smoke,
    }
    results["h1"] = [await h1_simulated(n, 2 if smoke else 5) for n in (
        (50, 200) if smoke else (1000, 10_000))]  # fmt: skip
    with LocalRay(num_cpus=16) as head:
        await settle()
        results["h2"] = await h2_watch(
            head.address, 4 if smoke else 16, 20 if smoke else minutes * 60
        )
        results["h3"] = await h3_verdict(head.address, 1 if smoke else 3)
    return results


def main() -> int:
    parser = options_for(__doc__)
    parser.add_argument("--minutes", type=float, default=10.0, help="H2's run, each way (10)")
    options = parser.parse_args()
    report(asyncio.run(run(options.smoke, options.minutes)), options.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
