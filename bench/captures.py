"""Benchmarks of capture points (issue 43; figures in docs/performance.md).

    python -m bench.captures [--smoke] [--json PATH]

K1  what a capture costs its worker: four live gloo ranks train, one capture point on their
    step's line takes every hit it may (``interval`` 0): each capture's CPU time on the
    worker's thread and its wall time (the worker's own measure), at the default bounds.
K2  how soon the bridge lists a capture: the same ranks, a point at the default interval,
    ``GET /api/v1/captures`` polled every 10 ms: first listed, less the worker's capture time.
K3  a hot line: one live worker runs a line about 1,000 times a second (one C call a hit, no
    Python line between hits); its hits in 5 s with no point, then with a capture point at
    the defaults, alternately: the ratio is the job's throughput with the point.
K4  1,000 ranks hitting one point at once, simulated (no thousand ranks here): 1,000 capture
    events as a worker sends them (a real capture's frames, each rank's own values), parsed
    as DAP and taken in by the bridge's store; the time, and the store's size against its
    bounds.
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
import os
import platform
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.harness import HERE, http, line_from, ms, process, run_benchmark, serve, settle, until
from raydap.bridge.captures.store import Captures
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from raydap.live.capture_values import Bounds, read_frames
from raydap.protocol import Event

JOB = HERE / "jobs" / "capture_lines.py"
STEP, HOT = (
    next(n for n, line in enumerate(JOB.read_text().splitlines(), 1) if f"# CAPTURE {m}" in line)
    for m in ("step", "hot")
)


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"p50_ms": round(pick(0.5), 3), "p99_ms": round(pick(0.99), 3),
            "max_ms": round(ordered[-1], 3), "n": len(ordered)}  # fmt: skip


async def k1_k2(ray: str, url: str, smoke: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        flag = Path(folder) / "stop"
        env = dict(os.environ, RAY_ADDRESS=ray)
        with process([sys.executable, str(JOB), "ranks", str(flag)], env) as job:
            assert job.stdout is not None
            job_id = (await line_from(job.stdout, "JOB")).split()[1]

            def training() -> bool:
                workers = http(url + "/api/v1/workers")["workers"]
                mine = [w for w in workers if w["job_id"] == job_id]
                return len([w for w in mine if w["task_name"] == "Rank.train"]) == 4

            await until(training, timeout=120)
            await settle(busy=60)
            most = 25 if smoke else 250
            point = http(url + "/api/v1/capture-points", {
                "path": str(JOB), "line": STEP, "interval": 0, "most": most, "budget_ms": 10_000,
            })  # fmt: skip
            listing = f"{url}/api/v1/captures?point={point['id']}"
            await until(lambda: len(http(listing)["captures"]) >= 4 * most, timeout=300, every=0.5)
            taken = [http(f"{url}/api/v1/captures/{c['id']}") for c in http(listing)["captures"]]
            await _clear(url, point["id"])
            sizes = sorted(len(json.dumps(c)) for c in taken)
            k1 = {"cpu": _percentiles([c["cpu_ms"] for c in taken]),
                  "wall": _percentiles([c["cost_ms"] for c in taken]),
                  "capture_bytes_p50": sizes[len(sizes) // 2]}  # fmt: skip

            asked = {"path": str(JOB), "line": STEP, "rank": 0, "most": 3 if smoke else 10}
            second = http(url + "/api/v1/capture-points", asked)
            seen: dict[str, float] = {}
            deadline = time.monotonic() + (15 if smoke else 40)
            while len(seen) < (3 if smoke else 10) and time.monotonic() < deadline:
                for c in http(f"{url}/api/v1/captures?point={second['id']}")["captures"]:
                    seen.setdefault(c["id"], time.time() - c["time"])
                await asyncio.sleep(0.01)
            await _clear(url, second["id"])
            flag.touch()
            steps = ast.literal_eval((await line_from(job.stdout, "RESULT")).split(" ", 1)[1])
    return {"k1_cost_in_worker": k1, "k2_listed_after": ms(list(seen.values())),
            "steps": steps}  # fmt: skip


async def _clear(url: str, point: str) -> None:
    import urllib.request

    request = urllib.request.Request(f"{url}/api/v1/capture-points/{point}", method="DELETE")
    await asyncio.to_thread(lambda: urllib.request.urlopen(request, timeout=30).read())


async def k3_hot_line(ray: str, url: str, smoke: bool) -> dict[str, Any]:
    seconds, rounds = (2.0, 1) if smoke else (5.0, 3)
    results: dict[str, list[int]] = {"without": [], "with": []}
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, RAY_ADDRESS=ray)
        with process([sys.executable, str(JOB), "hot", str(seconds)], env, stdin=True) as job:
            assert job.stdout is not None and job.stdin is not None
            pid = int((await line_from(job.stdout, "READY")).split()[1])

            def held() -> bool:  # an idle actor is named by no task: found by its pid
                workers = http(url + "/api/v1/workers")["workers"]
                return any(w["live"] and w["pid"] == pid for w in workers)

            await until(held, timeout=60)
            for index in range(rounds):
                for mode in ("without", "with"):
                    point = None
                    if mode == "with":
                        point = http(url + "/api/v1/capture-points",
                                     {"path": str(JOB), "line": HOT})  # fmt: skip
                        await asyncio.sleep(1.0)  # given to the worker
                    go = Path(folder) / f"{mode}-{index}"
                    job.stdin.write(f"{go}\n")
                    job.stdin.flush()
                    go.touch()
                    line = await line_from(job.stdout, "RESULT")
                    results[mode].append(int(line.split()[1]))
                    if point is not None:
                        await _clear(url, point["id"])
                        await asyncio.sleep(1.0)
    per_second = {m: [round(h / seconds) for h in hits] for m, hits in results.items()}
    ratio = sum(results["with"]) / max(1, sum(results["without"]))
    return {"hits_per_s": per_second, "throughput_with_point": round(ratio, 3),
            "python": platform.python_version()}  # fmt: skip


POINT = "cp-0123456789"


def k4_scale(ranks: int) -> dict[str, Any]:
    """The bridge's intake of ``ranks`` captures at once, in this process (simulated ranks)."""

    def a_rank_step(rank: int) -> Any:
        loss, lr, batch = 0.5 / (rank + 1), 3e-4, list(range(rank, rank + 64))  # noqa: F841
        return sys._getframe()

    def captured(rank: int) -> tuple[list[Any], bool]:
        """On a thread of its own: a stack about as deep as a Ray worker's."""
        found: list[tuple[list[Any], bool]] = []
        thread = threading.Thread(target=lambda: found.append(
            read_frames(a_rank_step(rank), Bounds())))  # fmt: skip
        thread.start()
        thread.join()
        return found[0]

    registry = Registry()
    wire = []
    for rank in range(ranks):
        registry.put(BreakpointRecord(id=f"w{rank}", node_ip="10.0.0.1", pid=rank,
                                      paused_since=0.0, job_id="01000000", rank=rank))  # fmt: skip
        frames, cut = captured(rank)
        body = {"point": POINT, "hit": 1, "time": time.time(), "frames": frames,
                "cut": cut, "cpu_ms": 1.0, "cost_ms": 1.0}  # fmt: skip
        wire.append(json.dumps({"type": "event", "seq": rank, "event": "raydapCapture",
                                "body": body}).encode())  # fmt: skip

    def take_in(traced: bool) -> tuple[float, int, Captures]:
        """Parse every event and keep it; (seconds, peak bytes allocated if traced, store)."""
        with tempfile.TemporaryDirectory() as folder:
            store = Captures(registry, Path(folder))
            store.point_of = {POINT: {}}.get  # the point is set (by any door)
            if traced:
                tracemalloc.start()
            started = time.perf_counter()
            for rank, raw in enumerate(wire):
                store.told(f"w{rank}", Event.model_validate_json(raw).body)
            seconds = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1] if traced else 0
            tracemalloc.stop()
        return seconds, peak, store

    seconds, _, store = take_in(traced=False)  # timed without tracing: it slows allocation
    _, peak, _ = take_in(traced=True)
    return {"ranks": ranks, "ingested_s": round(seconds, 3), "kept": len(store.summaries()),
            "event_bytes_p50": sorted(map(len, wire))[len(wire) // 2],
            "peak_allocated_mb": round(peak / 2**20, 1), "dropped": store.dropped}  # fmt: skip


async def run(smoke: bool) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "smoke": smoke,
    }
    results["k4"] = k4_scale(100 if smoke else 1000)
    with LocalRay(num_cpus=4) as head:
        await settle()
        with serve("--address", head.address, "--captures", tempfile.mkdtemp()) as (_, url, _):
            if importlib.util.find_spec("torch") is not None:
                results.update(await k1_k2(head.address, url, smoke))
                await settle()
            else:  # the CPU wheel of torch is on this machine for Python 3.11 only
                results["k1_k2"] = "skipped: torch is not installed for this Python"
            results["k3"] = await k3_hot_line(head.address, url, smoke)
    return results


if __name__ == "__main__":
    sys.exit(run_benchmark(__doc__, run))
