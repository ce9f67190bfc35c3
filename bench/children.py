"""Benchmarks of child processes of workers (issue 27; figures in docs/performance.md).

    python -m bench.children [--smoke] [--json PATH]

C1  a live actor starts spawned children one at a time: from each child's ``start()`` to its
    record in ``GET /api/v1/workers`` (polled every 10 ms).
C2  those children loop; a follow session sets a breakpoint on their loop's line: from the
    ``setBreakpoints`` request to each child's ``stopped`` event.
C3  the cost to a job that starts many processes: an actor forks 200 children that return at
    once, one after the other, with children debugged (the default) and with
    ``RAYDAP_CHILDREN=0``; and the bridge's memory after each round (bounded: children that
    exited leave nothing behind).
"""

from __future__ import annotations

import ast
import asyncio
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import (
    HERE,
    http,
    line_from,
    ms,
    process,
    run_benchmark,
    serve,
    settle,
    until,
    usage,
)
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay

JOB = HERE / "jobs" / "many_children.py"
CHILD_CODE = HERE / "jobs" / "child_code.py"
LOOP = next(
    n for n, line in enumerate(CHILD_CODE.read_text().splitlines(), 1) if "# CHILD LOOP" in line
)


def _children(url: str, job_id: str) -> list[dict[str, Any]]:
    workers = http(url + "/api/v1/workers")["workers"]
    return [w for w in workers if w["job_id"] == job_id and w["parent"]]


async def c1_c2(ray: str, url: str, dap_port: int, count: int) -> dict[str, Any]:
    seen: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        release = Path(folder) / "release"
        env = dict(os.environ, RAY_ADDRESS=ray)
        with process([sys.executable, str(JOB), "listed", str(count), str(release)], env) as job:
            assert job.stdout is not None
            job_id = (await line_from(job.stdout, "JOB")).split()[1]

            def all_listed() -> bool:
                now = time.time()
                for child in _children(url, job_id):
                    seen.setdefault(int(child["pid"]), now)
                return len(seen) > count  # and the tracker spawned children need

            await until(all_listed, 120, every=0.01)
            client = await DapClient.connect("127.0.0.1", dap_port)
            await client.attach(follow={"job": job_id}, localRoot=str(HERE / "jobs"))
            source = {"path": str(CHILD_CODE)}
            start = time.perf_counter()
            await client.request(
                "setBreakpoints", {"source": source, "breakpoints": [{"line": LOOP}]}
            )
            stops = []
            for _ in range(count):  # the tracker runs no code of the job
                await client.wait_event("stopped", timeout=60)
                stops.append(time.perf_counter() - start)
            await client.request("setBreakpoints", {"source": source, "breakpoints": []})
            release.touch()
            http(url + "/api/v1/continue", {"filter": {"job": job_id}})
            started = ast.literal_eval(
                (await line_from(job.stdout, "RESULT")).removeprefix("RESULT ")
            )
            await client.close()
    # The tracker multiprocessing starts beside spawned children is listed too: not timed.
    listed = [seen[pid] - at for pid, at in started if pid in seen]
    return {"children": count, "listed": ms(listed), "stopped": ms(stops)}


async def c3_churn(ray: str, bridge_pid: int, count: int, rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {"children": count}
    for mode in ("1", "0"):
        seconds, memory = [], []
        for _ in range(rounds if mode == "1" else 1):  # without children: no variance
            env = dict(os.environ, RAY_ADDRESS=ray, RAYDAP_CHILDREN=mode)
            with process([sys.executable, str(JOB), "churn", str(count)], env) as job:
                assert job.stdout is not None
                seconds.append(float((await line_from(job.stdout, "RESULT")).split()[1]))
            await asyncio.sleep(2)  # the last children's records leave
            memory.append(round(usage(bridge_pid)[0], 1))
        key = "debugged" if mode == "1" else "RAYDAP_CHILDREN=0"
        results[key] = {
            "job_s": [round(s, 2) for s in seconds],
            "per_child_ms": round(min(seconds) / count * 1000, 2),
            "bridge_rss_mb_after_each": memory,
        }
    return results


async def run(smoke: bool) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "smoke": smoke,
    }
    with LocalRay(num_cpus=4) as head:
        await settle()
        with serve("--address", head.address) as (bridge, url, dap_port):
            results["c1_c2"] = await c1_c2(head.address, url, dap_port, 3 if smoke else 10)
            await settle()
            results["c3"] = await c3_churn(
                head.address, bridge.pid, 20 if smoke else 200, 1 if smoke else 2
            )
    return results


if __name__ == "__main__":
    sys.exit(run_benchmark(__doc__, run))
