"""P6 of ``python -m bench.run``: every rank's stack merged, of real waiting ranks (py-spy on the
node) and of simulated ones (a fake dashboard answering tracebacks); an outside pause."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from bench.harness import (
    HERE,
    fake_cluster,
    gdb_refusal,
    http,
    ms,
    process,
    serve,
    timed,
    until,
    usage,
)


async def p6_stacks(ray: str, ranks: int, rounds: int) -> dict[str, Any]:
    """Real ranks waiting in one frame: the merged stacks (the first answer joins Ray as a
    driver and starts a worker on the node), then one rank paused from outside."""
    with serve("--address", ray) as (bridge, url, _):
        env = dict(os.environ, RAY_ADDRESS=ray)
        job_command = [sys.executable, str(HERE / "jobs" / "waiting_ranks.py"), str(ranks)]
        with process(job_command, env):

            def merged() -> Any:
                answer = http(url + "/api/v1/stacks")
                return answer if len(answer["tree"]["workers"]) >= ranks else None

            start = time.perf_counter()
            answer = await until(merged, 120, every=0.2)
            first = time.perf_counter() - start
            warm = [await timed(lambda: asyncio.to_thread(http, url + "/api/v1/stacks"))
                    for _ in range(rounds)]  # fmt: skip
            with_locals = [
                await timed(lambda: asyncio.to_thread(http, url + "/api/v1/stacks?locals=1"))
                for _ in range(rounds)
            ]
            rank_id = answer["tree"]["workers"][0]
            pause: dict[str, Any]
            refusal = gdb_refusal()
            if refusal is None:
                start = time.perf_counter()
                await asyncio.to_thread(http, url + f"/api/v1/workers/{rank_id}/pause", {})
                pause = ms([time.perf_counter() - start])
            else:  # raydap refuses it here, rather than break the rank: said, not measured
                pause = {"skipped": f"this machine's gdb cannot call into a process: {refusal}"}
            rss, peak, _ = usage(bridge.pid)
    return {
        "ranks": ranks,
        "first_s": round(first, 3),
        "warm": ms(warm),
        "locals": ms(with_locals),
        "pause": pause,
        "rss_mb": round(rss, 1),
        "peak_rss_mb": round(peak, 1),
    }


async def p6_simulated(ranks: int, rounds: int) -> dict[str, Any]:
    with (
        fake_cluster(0, running=ranks) as dashboard_url,
        serve("--dashboard-url", dashboard_url) as (bridge, url, _),
    ):
        times, answer = [], {}
        for _ in range(rounds):
            start = time.perf_counter()
            answer = await asyncio.to_thread(http, url + "/api/v1/stacks")
            times.append(time.perf_counter() - start)
        rss, peak, _ = usage(bridge.pid)
    return {
        "ranks": len(answer["tree"]["workers"]),
        "failed": len(answer["failed"]),
        "merged": ms(times),
        "rss_mb": round(rss, 1),
        "peak_rss_mb": round(peak, 1),
    }


def p6_real_rows(p6: dict[str, Any]) -> list[tuple[str, str, str, bool]]:
    if "skipped" in p6:
        return [("P6 real ranks", p6["skipped"], "-", True)]
    return [
        (f"P6 stacks of {p6['ranks']} real ranks (first; joins Ray)", f"{p6['first_s']} s",
         "-", True),
        (f"P6 stacks of {p6['ranks']} real ranks p50", f"{p6['warm']['p50_ms']} ms", "-", True),
        (f"P6 stacks with locals of {p6['ranks']} real ranks p50",
         f"{p6['locals']['p50_ms']} ms", "-", True),
        ("P6 outside pause -> listed as paused",
         p6["pause"].get("skipped") or f"{p6['pause']['p50_ms']} ms", "-", True),
    ]  # fmt: skip
