"""raydap benchmarks: the bridge against attaching to debugpy directly, side by side.

    python -m bench.run [--smoke] [--json PATH]

P1  discovery: ``breakpoint()`` in a real Ray task -> the worker listed by the bridge
P2  attach to a held worker: connect -> ``stopped`` -> first ``stackTrace`` answered
P3  read-only requests repeated on a stopped thread (threads, stackTrace, scopes, variables)
P3b uncached requests (``evaluate`` of distinct expressions): bridge / direct
P4  scale, with simulated workers (bench/fake_cluster.py): hold 1,000, follow them, continue
P5  an idle bridge: RSS and CPU
P6  stacks: every rank's stack merged, of 16 real waiting ranks (py-spy on the node) and of
    1,000 simulated ones (a fake dashboard answering tracebacks); outside pause of a real rank
P7  live workers (``raydap.live.setup``): CPU-bound work with the hook and the bridge attached
    against without (no breakpoint, and one in another file); ``breakpoint()`` in a live worker
    -> listed; a breakpoint set from a DAP client -> its ``stopped``; 1,000 simulated live
    workers held, given one ``setBreakpoints``, paused as a group

P2-P3b run directly against debugpy, and through the bridge over TCP, WebSocket, and
``raydap dap`` (the stdio adapter editors start, a process per session).

Direct and bridge figures for P2-P3b come from the same program (bench/debuggee.py) under the
same debugpy; the bridge reaches its copy through a fake dashboard that lists it. ``--smoke``
runs every stage briefly, to check the harness (CI), not to measure.
"""

from __future__ import annotations

import asyncio
import os
import platform
import sys
import time
from typing import Any

from bench.attach import p2_p3
from bench.harness import (
    HERE,
    fake_cluster,
    http,
    ms,
    options_for,
    process,
    ptrace_refusal,
    report,
    serve,
    settle,
    until,
    usage,
)
from bench.live import p7_overhead, p7_rows, p7_scale, p7_stops
from bench.stacks import p6_real_rows, p6_simulated, p6_stacks
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay

# -- stages ------------------------------------------------------------------------------------


async def p1_discovery(ray: str, pauses: int, gap: float) -> dict[str, Any]:
    """From ``breakpoint()`` to the record's ``paused_since`` (the bridge's first sight)."""
    with serve("--address", ray) as (_, url, _port):
        env = dict(os.environ, RAY_ADDRESS=ray)
        job_command = [sys.executable, str(HERE / "jobs" / "pauses.py"), str(pauses), str(gap)]
        with process(job_command, env) as job:
            latencies, seen, failed = [], set(), 0
            for _ in range(pauses):

                def paused() -> Any:
                    records = http(url + "/api/v1/breakpoints")["breakpoints"]
                    fresh = [r for r in records if r["state"] == "failed" or (
                             r["state"] == "paused" and r["location"]
                             and r["paused_since"] not in seen)]  # fmt: skip
                    return fresh[0] if fresh else None

                record = await until(paused, 120)
                if record["state"] == "failed":  # debugpy's adapter exited: see docs
                    failed += 1
                    break
                seen.add(record["paused_since"])
                answer = http(url + "/api/v1/evaluate", {"expression": "stamp"})["results"]
                stamp = float(next(a["result"] for a in answer if a["id"] == record["id"]))
                latencies.append(record["paused_since"] - stamp)
                http(url + f"/api/v1/breakpoints/{record['id']}/continue", {})
            if not failed:
                job.wait(timeout=60)
    return {**ms(latencies), "unreachable_pauses": failed}


async def p4_scale(workers: int) -> dict[str, Any]:
    with fake_cluster(workers) as url, serve("--dashboard-url", url) as (bridge, http_url, dap):
        start = time.perf_counter()
        await until(lambda: sum(1 for r in http(http_url + "/api/v1/breakpoints")["breakpoints"]
                                if r["state"] == "paused" and r["location"]) >= workers,
                    120, every=0.05)  # fmt: skip
        hold = time.perf_counter() - start
        client = await DapClient.connect("127.0.0.1", dap)
        start = time.perf_counter()
        await client.attach(follow={})
        for _ in range(workers):
            await client.wait_event("stopped", timeout=120)
        follow = time.perf_counter() - start
        start = time.perf_counter()
        threads = (await client.request("threads", timeout=120)).body["threads"]
        listing = time.perf_counter() - start
        start = time.perf_counter()
        continued = await asyncio.to_thread(http, http_url + "/api/v1/continue", {"filter": {}})
        group_continue = time.perf_counter() - start
        rss, peak, cpu = usage(bridge.pid)
        await client.close()
    return {
        "workers": workers,
        "hold_s": round(hold, 3),
        "follow_all_stopped_s": round(follow, 3),
        "follow_threads_s": round(listing, 3),
        "threads_listed": len(threads),
        "group_continue_s": round(group_continue, 3),
        "continued": len(continued["continued"]),
        "rss_mb": round(rss, 1),
        "peak_rss_mb": round(peak, 1),
        "cpu_s": round(cpu, 2),
    }


async def p5_idle(window: float) -> dict[str, Any]:
    with fake_cluster(0) as url, serve("--dashboard-url", url) as (bridge, _, _port):
        await asyncio.sleep(min(3.0, window))  # past its start
        _, _, cpu_before = usage(bridge.pid)
        await asyncio.sleep(window)
        rss, _, cpu_after = usage(bridge.pid)
    return {
        "rss_mb": round(rss, 1),
        "cpu_percent": round(100 * (cpu_after - cpu_before) / window, 2),
    }


# -- report ------------------------------------------------------------------------------------


def _measures(r: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(measure, result, target, met) for every target of the issue."""
    direct, tcp, ws = r["p2_p3"]["direct"], r["p2_p3"]["bridge_tcp"], r["p2_p3"]["bridge_ws"]
    stdio = r["p2_p3"]["bridge_stdio"]
    added = round(stdio["read_only"]["p50_ms"] - tcp["read_only"]["p50_ms"], 3)
    p1, p4, p5 = r["p1"], r["p4"], r["p5"]
    attach, read, uncached = tcp["attach"], tcp["read_only"], tcp["uncached"]
    return [
        ("P1 discovery p50", f"{p1['p50_ms']} ms", "≤ 150 ms", p1["p50_ms"] <= 150),
        ("P1 discovery p95", f"{p1['p95_ms']} ms", "≤ 400 ms", p1["p95_ms"] <= 400),
        ("P1b next stop of a held worker p50",
         f"{r['p1b']['p50_ms']} ms (p95 {r['p1b']['p95_ms']} ms)", "-", True),
        ("P2 attach to a held worker",
         f"{attach['p50_ms']} ms (direct {direct['attach']['p50_ms']} ms)",
         "≤ 10 ms", attach["p50_ms"] <= 10),
        ("P3 read-only request",
         f"{read['p50_ms']} ms (direct {direct['read_only']['p50_ms']} ms)",
         "≤ 1 ms", read["p50_ms"] <= 1),
        ("P2 over WebSocket", f"{ws['attach']['p50_ms']} ms", "-", True),
        ("P2 through `raydap dap` (its start included)", f"{stdio['attach']['p50_ms']} ms",
         "-", True),
        ("P3 through `raydap dap`, added to TCP", f"{added} ms", "≤ 1 ms", added <= 1),
        ("P3 over WebSocket", f"{ws['read_only']['p50_ms']} ms", "-", True),
        ("P3b uncached over WebSocket",
         f"{round(ws['uncached']['p50_ms'] / direct['uncached']['p50_ms'], 3)}", "-", True),
        ("P3b uncached, bridge/direct",
         f"{r['p3b_ratio']} ({uncached['p50_ms']} / {direct['uncached']['p50_ms']} ms)",
         "≤ 1.03", r["p3b_ratio"] <= 1.03),
        (f"P4 hold {p4['workers']} workers", f"{p4['hold_s']} s", "≤ 10 s", p4["hold_s"] <= 10),
        ("P4 follow session: all stopped", f"{p4['follow_all_stopped_s']} s", "-", True),
        ("P4 follow session: threads", f"{p4['follow_threads_s']} s "
         f"({p4['threads_listed']} threads)", "-", True),
        ("P4 group continue", f"{p4['group_continue_s']} s ({p4['continued']} continued)",
         "≤ 2 s", p4["group_continue_s"] <= 2),
        ("P4 bridge RSS", f"{p4['peak_rss_mb']} MB peak", "≤ 250 MB", p4["peak_rss_mb"] <= 250),
        ("P5 idle RSS", f"{p5['rss_mb']} MB", "≤ 60 MB", p5["rss_mb"] <= 60),
        ("P5 idle CPU", f"{p5['cpu_percent']} % of a core", "≤ 1 %", p5["cpu_percent"] <= 1),
        *p6_real_rows(r["p6"]),
        (f"P6 stacks of {r['p6b']['ranks']} simulated ranks p50",
         f"{r['p6b']['merged']['p50_ms']} ms", "-", True),
        ("P6 bridge RSS after 1,000 stacks", f"{r['p6b']['peak_rss_mb']} MB peak", "-", True),
        *p7_rows(r["p7"], r["p7_stops"], r["p7_scale"]),
    ]  # fmt: skip


def table(results: dict[str, Any]) -> str:
    rows = [("measure", "result", "target", "met")]
    measures = (
        p7_rows(results["p7"], results["p7_stops"], None)
        if results.get("live_only")
        else _measures(results)
    )
    rows += [(n, v, t, "yes" if ok else "NO") for n, v, t, ok in measures]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [
        "| " + " | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


async def run_live_only(smoke: bool) -> dict[str, Any]:
    """P7 on a real Ray head alone: what changes with the Python the workers run."""
    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    results: dict[str, Any] = {"machine": machine, "smoke": smoke, "live_only": True}
    with LocalRay(num_cpus=4) as head:
        await settle()
        results["p7"] = await p7_overhead(head.address, 1 if smoke else 5, 0.1 if smoke else 1.0)
        results["p7_stops"] = await p7_stops(head.address, 3 if smoke else 20)
    return results


async def run(smoke: bool) -> dict[str, Any]:
    machine = {"cpus": os.cpu_count(), "python": platform.python_version()}
    machine["platform"] = platform.platform()
    results: dict[str, Any] = {"machine": machine, "smoke": smoke}
    results["p2_p3"] = await p2_p3(2 if smoke else 10)
    direct, tcp = results["p2_p3"]["direct"], results["p2_p3"]["bridge_tcp"]
    results["p3b_ratio"] = round(tcp["uncached"]["p50_ms"] / direct["uncached"]["p50_ms"], 3)
    results["p4"] = await p4_scale(20 if smoke else 1000)
    results["p5"] = await p5_idle(1.0 if smoke else 20.0)
    results["p6b"] = await p6_simulated(20 if smoke else 1000, 2 if smoke else 10)
    results["p7_scale"] = await p7_scale(20 if smoke else 1000)
    # The stages on a real Ray head share one (each with a bridge of its own): its start is
    # not what they measure.
    with LocalRay(num_cpus=4) as head:
        await settle()
        # The gap lets the bridge go idle between stops; the smoke run only checks the stage runs.
        results["p1"] = await p1_discovery(
            head.address, 2 if smoke else 20, gap=1.0 if smoke else 6.0
        )
        results["p1b"] = await p1_discovery(head.address, 2 if smoke else 20, gap=0.0)
        refusal = ptrace_refusal()
        results["p6"] = (
            await p6_stacks(head.address, 4 if smoke else 16, 2 if smoke else 10)
            if refusal is None
            else {"skipped": f"py-spy and gdb need ptrace, which this machine refuses: {refusal}"}
        )
        results["p7"] = await p7_overhead(head.address, 1 if smoke else 5, 0.1 if smoke else 1.0)
        results["p7_stops"] = await p7_stops(head.address, 3 if smoke else 20)
    return results


def main() -> int:
    parser = options_for(__doc__)
    parser.add_argument(
        "--live-only", action="store_true",
        help="only P7 on a real Ray head (live overhead and stops): per Python version",
    )  # fmt: skip
    options = parser.parse_args()
    results = asyncio.run((run_live_only if options.live_only else run)(options.smoke))
    print(table(results))
    report(results, options.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
