"""The cost of one bridge, measured with real processes (issue "fleet"; figures in
docs/performance.md).

    python -m bench.fleet [--smoke] [--sizes 8,16,32,48,64] [--json PATH]

For each N: N gloo ranks (torch.distributed) as live Ray actors on one local head, each issuing
an all_reduce every 0.3 s (``bench/jobs/fleet_ranks.py``), one ``raydap serve`` with its default
settings (the hang watch on, a sample every 5 s) and ``--hang-after 10``:

F1  the bridge's RSS and CPU while the job runs untouched (20 s, after the machine settled);
F2  ``PUT /api/v1/line-breakpoints`` with ``self.rank == 0`` (the line every rank reaches once a
    step, after its all_reduce): to the answer (the gate: every rank raised, and seen issuing
    a collective since; then every rank given the list), and to rank 0 listed stopped while
    the others wait for it;
F2b the same with ``global_step >= S``, S a few steps ahead (ranks that wait for each other
    in every step stop together only at one step): to the answer, and to every rank stopped;
F3  ``POST /api/v1/continue`` for the job to every rank listed running;
F4  ``GET /api/v1/stacks?locals=1``: every rank's stack with its locals, merged;
F5  a capture point on that line, one capture a second from every rank, for 10 s: the ranks
    captured, the captures, the bridge's CPU meanwhile;
F6  rank N-1 stuck in its data loader: the time to the suspected-hang verdict, recorders read;
F7  rank 0 killed with SIGKILL: the time until the verdict names it dead.

A size is skipped when the memory it would take (the last size's ranks' RSS each, times N) is
over 80 % of what is available. The slopes over N are least squares over the sizes measured.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import signal
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import psutil

from bench.harness import HERE, line_from, options_for, process, report, serve, settle, until, usage
from raydap.bridge.client.local_ray import LocalRay

JOB = HERE / "jobs" / "fleet_ranks.py"
LINE = next(
    n for n, text in enumerate(JOB.read_text().splitlines(), 1) if text.endswith("# BREAK fleet")
)
HANG_AFTER = 10.0
IDLE_S = 20.0
CAPTURE_S = 10.0


def call(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=120) as answer:
        return json.loads(answer.read())


def ranks_of(url: str, job: str) -> list[dict[str, Any]]:
    workers = call(url + "/api/v1/workers")["workers"]
    return [w for w in workers if w["job_id"] == job and w["rank"] is not None and w["live"]]


async def poll(check: Any, timeout: float) -> float:
    """Seconds until ``check()`` is true, asked every 20 ms."""
    start = time.perf_counter()
    await until(check, timeout, every=0.02)
    return round(time.perf_counter() - start, 3)


def states(url: str, job: str, state: str) -> int:
    return sum(w["state"] == state for w in ranks_of(url, job))


async def stop(
    url: str, where: dict[str, str], condition: str, n: int, wanted: int
) -> dict[str, Any]:
    """A breakpoint on the job's line with ``condition``: seconds from the PUT to its answer
    (the gate, and every rank given it), to ``wanted`` ranks listed stopped, and from the first
    listed stopped to the last."""
    started = time.perf_counter()
    given = call(url + "/api/v1/line-breakpoints", "PUT",
                 {**where, "breakpoints": [{"line": LINE, "condition": condition}]})  # fmt: skip
    answered = time.perf_counter() - started
    first: list[float] = []

    def stopped() -> bool:
        paused = states(url, where["job"], "paused")
        if paused and not first:
            first.append(time.perf_counter())
        return paused >= wanted

    await until(stopped, 120, every=0.02)
    done = time.perf_counter()
    return {
        "answered_s": round(answered, 3),
        "stopped_s": round(done - started, 3),
        "first_to_last_s": round(done - first[0], 3),
        "unprotected": sorted({u for w in given["workers"] for u in w["unprotected"]}),
    }


async def one_size(ray: str, n: int, folder: Path) -> dict[str, Any]:
    stuck, steps = folder / f"stuck-{n}", folder / f"steps-{n}"
    # Folders of its own: captures kept by earlier runs are read back at start (memory).
    kept = ("--captures", str(folder / f"captures-{n}"), "--hang-reports", str(folder / f"hr-{n}"))
    with serve("--address", ray, "--hang-after", str(HANG_AFTER), *kept) as (bridge, url, _):
        env = dict(os.environ, RAY_ADDRESS=ray)
        with process([sys.executable, str(JOB), str(n), str(stuck), str(steps)], env) as job:
            assert job.stdout is not None
            job_id = (await line_from(job.stdout, "JOB")).split()[1]
            await line_from(job.stdout, "TRAINING")

            def held() -> bool:
                found = ranks_of(url, job_id)
                return len(found) == n and all(w["task_name"] == "Rank.train" for w in found)

            await until(held, 600, every=0.5)
            ranks = {w["rank"]: w for w in ranks_of(url, job_id)}
            job_rss = sum(psutil.Process(w["pid"]).memory_info().rss for w in ranks.values())
            await settle(busy=40 + n / 2)
            rss, _, cpu_before = usage(bridge.pid)
            await asyncio.sleep(IDLE_S)
            rss, _, cpu_after = usage(bridge.pid)
            idle = {"rss_mb": round(rss, 1),
                    "cpu_percent": round(100 * (cpu_after - cpu_before) / IDLE_S, 2)}  # fmt: skip

            # F2: a conditional line breakpoint stops rank 0 alone, gate included
            where = {"path": str(JOB), "job": job_id}
            alone = await stop(url, where, "self.rank == 0", n, 1)
            call(url + "/api/v1/line-breakpoints", "PUT", {**where, "breakpoints": []})
            call(url + "/api/v1/continue", "POST", {"filter": {"job": job_id}})
            await until(lambda: states(url, job_id, "running") == n, 120, every=0.02)

            # F2b: every rank at one step (the job's ranks wait for each other in every step,
            # so only a condition on the step stops them all: a few steps ahead)
            ahead = int(steps.read_text()) + round(2.5 / 0.3)
            every = await stop(url, where, f"global_step >= {ahead}", n, n)
            call(url + "/api/v1/line-breakpoints", "PUT", {**where, "breakpoints": []})

            # F3: every rank running again
            started = time.perf_counter()
            call(url + "/api/v1/continue", "POST", {"filter": {"job": job_id}})
            await until(lambda: states(url, job_id, "running") == n, 120, every=0.02)
            continued = round(time.perf_counter() - started, 3)

            # F4: merged stacks with locals
            started = time.perf_counter()
            tree = call(f"{url}/api/v1/stacks?job={job_id}&locals=1")
            stacks_s = round(time.perf_counter() - started, 3)

            # F5: a capture a second from every rank
            _, _, cpu_before = usage(bridge.pid)
            point = call(url + "/api/v1/capture-points", "POST",
                         {**where, "line": LINE, "interval": 1, "most": 1000})  # fmt: skip
            await asyncio.sleep(CAPTURE_S)
            _, _, cpu_after = usage(bridge.pid)
            taken = call(f"{url}/api/v1/captures?point={point['id']}")["captures"]
            call(f"{url}/api/v1/capture-points/{point['id']}", "DELETE")
            captures = {
                "ranks_captured": len({c["rank"] for c in taken}),
                "captures": len(taken),
                "bridge_cpu_percent": round(100 * (cpu_after - cpu_before) / CAPTURE_S, 2),
            }

            # F6: a hang verdict
            stuck.touch()
            started = time.perf_counter()

            def verdict() -> dict[str, Any] | None:
                for found in call(url + "/api/v1/hangs")["jobs"]:
                    if found["job"] == job_id and found["state"] == "suspected_hang":
                        return found if found.get("collective") else None
                return None

            await until(verdict, 300, every=0.2)
            hang_s = round(time.perf_counter() - started, 1)
            said = (verdict() or {}).get("summary", "")[:200]

            # F7: a dead rank named
            os.kill(ranks[0]["pid"], signal.SIGKILL)
            dead_s = await poll(
                lambda: any(
                    v["job"] == job_id and v["dead"] for v in call(url + "/api/v1/hangs")["jobs"]
                ),
                120,
            )
    return {
        "ranks": n, "ranks_rss_mb": round(job_rss / 2**20), "idle": idle,
        "stop_rank0": alone, "stop_every_rank": every, "continue_all_s": continued,
        "stacks_with_locals_s": stacks_s, "stacks_workers": len(tree["workers"]),
        "captures": captures, "hang_verdict_s": hang_s, "hang_summary": said,
        "dead_named_s": dead_s,
    }  # fmt: skip


def slope(points: list[tuple[int, float]]) -> float | None:
    """Least squares: the growth per rank."""
    if len(points) < 2:
        return None
    xs, ys = zip(*points, strict=True)
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)


async def run(sizes: list[int]) -> dict[str, Any]:
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(),
               "memory_gb": round(psutil.virtual_memory().total / 2**30)}  # fmt: skip
    results: dict[str, Any] = {"machine": machine, "line": LINE, "sizes": []}
    per_rank_mb = 400.0  # until the first size says
    with tempfile.TemporaryDirectory() as folder, LocalRay(num_cpus=8) as head:
        for n in sizes:
            available = psutil.virtual_memory().available / 2**20
            if n * per_rank_mb > 0.8 * available:
                results["sizes"].append({"ranks": n, "skipped": f"needs ~{n * per_rank_mb:.0f} "
                                         f"MB, {available:.0f} MB available"})  # fmt: skip
                continue
            await settle()
            figures = await one_size(head.address, n, Path(folder))
            per_rank_mb = figures["ranks_rss_mb"] / n
            results["sizes"].append(figures)
            print(json.dumps(figures), file=sys.stderr, flush=True)
    measured = [s for s in results["sizes"] if "skipped" not in s]
    rss = slope([(s["ranks"], s["idle"]["rss_mb"]) for s in measured])
    cpu = slope([(s["ranks"], s["idle"]["cpu_percent"]) for s in measured])
    results["slope"] = {
        "rss_mb_per_rank": round(rss, 3) if rss is not None else None,
        "cpu_percent_per_rank": round(cpu, 4) if cpu is not None else None,
    }
    return results


def main() -> int:
    parser = options_for(__doc__)
    parser.add_argument("--sizes", default="8,16,32,48,64", help="ranks, comma-separated")
    options = parser.parse_args()
    sizes = [4] if options.smoke else [int(n) for n in options.sizes.split(",")]
    report(asyncio.run(run(sizes)), options.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
