"""P7 of ``python -m bench.run``: live workers (``raydap.live.setup``): the hook's overhead,
``breakpoint()`` and an editor's breakpoint in a live worker, and many simulated ones held."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import (
    HERE,
    fake_cluster,
    http,
    ms,
    process,
    serve,
    until,
    usage,
)
from raydap.bridge.client.dap_client import DapClient


async def p7_overhead(ray: str, rounds: int, scale: float) -> dict[str, Any]:
    """Wall times of CPU-bound work in a Ray actor: without the hook; with it and the bridge
    holding the worker; and with a breakpoint set in another file of the job."""
    jobs = HERE / "jobs"
    times: dict[str, dict[str, list[float]]] = {}
    with serve("--address", ray) as (_, url, dap):
        env = dict(os.environ, RAY_ADDRESS=ray)
        for side in ("plain", "live", "live_breakpoint_elsewhere"):
            flag = Path(tempfile.mkdtemp()) / "go"
            mode = "plain" if side == "plain" else "live"
            command = [sys.executable, str(jobs / "live_cpu.py"), mode, str(rounds), str(scale),
                       str(flag)]  # fmt: skip
            with process(command, env) as job:
                assert job.stdout is not None
                job_id = job.stdout.readline().split()[1]
                client = None
                if mode == "live":
                    await until(lambda j=job_id: _live_workers(url, j), 60)
                if side == "live_breakpoint_elsewhere":
                    client = await DapClient.connect("127.0.0.1", dap)
                    await client.attach(follow={"job": job_id}, localRoot=str(jobs))
                    await client.wait_event("thread")
                    source = {"path": str(jobs / "elsewhere.py")}
                    answer = await client.request(
                        "setBreakpoints", {"source": source, "breakpoints": [{"line": 2}]}
                    )
                    assert answer.body["breakpoints"][0]["verified"], answer.body
                flag.touch()
                line = await asyncio.to_thread(job.stdout.readline)
                times[side] = json.loads(line.removeprefix("TIMES "))
                if client is not None:
                    await client.close()
    figures: dict[str, Any] = {"python": platform.python_version()}
    for workload in ("python_calls", "numpy"):
        plain = statistics.median(times["plain"][workload])
        figures[workload] = {
            "plain_s": round(plain, 4),
            **{f"{side}_ratio": round(statistics.median(times[side][workload]) / plain, 3)
               for side in ("live", "live_breakpoint_elsewhere")},
        }  # fmt: skip
    return figures


def _live_workers(url: str, job_id: str) -> list[dict[str, Any]]:
    workers = http(url + "/api/v1/workers")["workers"]
    return [w for w in workers if w["live"] and w["job_id"] == job_id and w["state"] == "running"]


async def p7_stops(ray: str, count: int) -> dict[str, Any]:
    """``breakpoint()`` in a live worker -> listed by the bridge (the first of a fresh worker
    apart); a breakpoint set from a DAP client -> that client's ``stopped``."""
    script = HERE / "jobs" / "live_stops.py"
    gutter = next(i for i, text in enumerate(script.read_text().splitlines(), 1)
                  if "# GUTTER" in text)  # fmt: skip
    with serve("--address", ray) as (_, url, dap):
        env = dict(os.environ, RAY_ADDRESS=ray)
        figures: dict[str, Any] = {}
        for mode in ("breakpoint", "gutter"):
            flag = Path(tempfile.mkdtemp()) / "go"
            command = [sys.executable, str(script), mode, str(count), "0.3", str(flag)]
            with process(command, env) as job:
                assert job.stdout is not None
                job_id = job.stdout.readline().split()[1]
                [worker] = await until(lambda j=job_id: _live_workers(url, j), 60)
                if mode == "breakpoint":
                    flag.touch()
                    latencies = await _listed_latencies(url, worker["id"], count)
                    figures["listed"] = {"first_ms": round(latencies[0] * 1000, 3),
                                         **ms(latencies[1:])}  # fmt: skip
                else:
                    client = await DapClient.connect("127.0.0.1", dap)
                    await client.attach(follow={"job": job_id})
                    await client.wait_event("thread")
                    source = {"path": str(script)}
                    await client.request(
                        "setBreakpoints", {"source": source, "breakpoints": [{"line": gutter}]}
                    )
                    flag.touch()
                    latencies = []
                    for _ in range(count):
                        stop = await client.wait_event("stopped", timeout=60)
                        arrived = time.time()
                        thread = stop.body["threadId"]
                        trace = await client.request("stackTrace", {"threadId": thread})
                        frame = trace.body["stackFrames"][0]["id"]
                        stamp = await client.request(
                            "evaluate", {"expression": "stamp", "frameId": frame}
                        )
                        latencies.append(arrived - float(stamp.body["result"]))
                        await client.request("continue", {"threadId": thread})
                    figures["gutter_stopped"] = ms(latencies)
                    await client.close()
                job.wait(timeout=60)
    return figures


async def _listed_latencies(url: str, rid: str, count: int) -> list[float]:
    latencies: list[float] = []
    seen: set[float] = set()
    for _ in range(count):

        def paused() -> Any:
            record = http(url + f"/api/v1/breakpoints/{rid}")
            held = record["state"] == "paused" and record["paused_since"] not in seen
            return record if held else None

        record = await until(paused, 60)
        seen.add(record["paused_since"])
        answer = http(url + "/api/v1/evaluate", {"expression": "stamp"})["results"]
        stamp = float(next(a["result"] for a in answer if a["id"] == rid))
        latencies.append(record["paused_since"] - stamp)
        http(url + f"/api/v1/breakpoints/{rid}/continue", {})
    return latencies


async def p7_scale(workers: int) -> dict[str, Any]:
    """Simulated live workers (the fake has no GCS: ``bench.live_bridge`` gives the bridge
    their marks in memory)."""
    bridge_command = [sys.executable, "-m", "bench.live_bridge"]
    with (
        fake_cluster(workers, live=True) as dashboard_url,
        serve(dashboard_url, command=bridge_command) as (bridge, url, dap),
    ):
        start = time.perf_counter()

        def all_held() -> bool:
            listed = http(url + "/api/v1/workers")["workers"]
            return len([w for w in listed if w["state"] == "running"]) >= workers

        await until(all_held, 120, every=0.05)
        hold = time.perf_counter() - start
        client = await DapClient.connect("127.0.0.1", dap)
        start = time.perf_counter()
        await client.attach(follow={})
        for _ in range(workers):
            await client.wait_event("thread", timeout=120)
        joined = time.perf_counter() - start
        source = {"path": "/fake/train.py"}
        start = time.perf_counter()
        await client.request("setBreakpoints", {"source": source, "breakpoints": [{"line": 14}]})
        reached = time.perf_counter() - start
        start = time.perf_counter()
        paused = await asyncio.to_thread(http, url + "/api/v1/pause", {"filter": {}})
        pause_all = time.perf_counter() - start
        rss, peak, _ = usage(bridge.pid)
        await client.close()
    return {
        "workers": workers,
        "hold_s": round(hold, 3),
        "follow_joined_s": round(joined, 3),
        "set_breakpoints_all_s": round(reached, 3),
        "pause_all_s": round(pause_all, 3),
        "paused": len(paused["paused"]),
        "rss_mb": round(rss, 1),
        "peak_rss_mb": round(peak, 1),
    }


def p7_rows(
    overhead: dict[str, Any], stops: dict[str, Any], scale: dict[str, Any] | None
) -> list[tuple[str, str, str, bool]]:
    calls, compiled = overhead["python_calls"], overhead["numpy"]
    listed, gutter = stops["listed"], stops["gutter_stopped"]
    # On 3.12+ debugpy's sys.monitoring costs little while no breakpoint is near: the target
    # there is 1.10; on 3.10 and 3.11 sys.settrace is what it is (docs/performance.md).
    elsewhere_target = (
        1.10 if tuple(map(int, overhead["python"].split(".")[:2])) >= (3, 12) else 1.05
    )
    rows = [
        (f"P7 live overhead, Python calls (Python {overhead['python']})",
         f"{calls['live_ratio']}", "≤ 1.05", calls["live_ratio"] <= 1.05),
        ("P7 live overhead, numpy", f"{compiled['live_ratio']}", "≤ 1.05",
         compiled["live_ratio"] <= 1.05),
        ("P7 the same, a breakpoint in another file: Python calls",
         f"{calls['live_breakpoint_elsewhere_ratio']}", f"≤ {elsewhere_target}",
         calls["live_breakpoint_elsewhere_ratio"] <= elsewhere_target),
        ("P7 the same, a breakpoint in another file: numpy",
         f"{compiled['live_breakpoint_elsewhere_ratio']}", f"≤ {elsewhere_target}",
         compiled["live_breakpoint_elsewhere_ratio"] <= elsewhere_target),
        ("P7 breakpoint() in a live worker -> listed p50",
         f"{listed['p50_ms']} ms (first {listed['first_ms']} ms)", "≤ 20 ms",
         listed["p50_ms"] <= 20 and listed["first_ms"] <= 20),
        ("P7 editor breakpoint's line runs -> stopped p50", f"{gutter['p50_ms']} ms",
         "≤ 50 ms", gutter["p50_ms"] <= 50),
    ]  # fmt: skip
    if scale is None:
        return rows
    n = scale["workers"]
    return [
        *rows,
        (f"P7 hold {n} live workers", f"{scale['hold_s']} s", "-", True),
        (f"P7 setBreakpoints reaches {n} live workers", f"{scale['set_breakpoints_all_s']} s",
         "≤ 1 s", scale["set_breakpoints_all_s"] <= 1),
        (f"P7 pause {n} live workers", f"{scale['pause_all_s']} s ({scale['paused']} paused)",
         "-", True),
        ("P7 bridge RSS", f"{scale['peak_rss_mb']} MB peak", "≤ 300 MB",
         scale["peak_rss_mb"] <= 300),
    ]  # fmt: skip
