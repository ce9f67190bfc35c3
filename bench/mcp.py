"""Benchmarks of the MCP tools for coding agents (issue 26; figures in docs/performance.md).

    python -m bench.mcp [--smoke] [--json PATH]

The bridge holds simulated paused workers (bench/fake_cluster.py: a thousand paused Ray workers
cannot run on two cores; each fake answers as debugpy does).

M1  what a door costs: a tool call with an empty answer (``list_workers`` of a job that does
    not exist), over ``/mcp`` (the SDK's streamable HTTP client, one session) and through
    ``raydap mcp`` (the SDK's stdio client, as an agent starts it).
M2  every worker at once, through MCP (stdio) and the HTTP API: listing them and evaluating
    in all of them side by side; with each answer's size (MCP cuts answers to 40,000 chars).
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import time
from typing import Any

import httpx2
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.harness import fake_cluster, http, ms, run_benchmark, serve, until, usage


async def _calls(session: ClientSession, rounds: int, tool: str, **arguments: Any) -> list[float]:
    took = []
    for _ in range(rounds):
        start = time.perf_counter()
        result = await session.call_tool(tool, arguments)
        took.append(time.perf_counter() - start)
        assert not result.is_error, result
    return took


def _size(result: Any) -> int:
    return len(result.content[0].text)


async def run(smoke: bool) -> dict[str, Any]:
    workers, rounds = (20, 5) if smoke else (1000, 50)
    nobody = {"filter": {"job": "ffffffff"}}
    with fake_cluster(workers) as dashboard, serve("--dashboard-url", dashboard) as (
        bridge, url, _dap,
    ):  # fmt: skip
        await until(lambda: sum(1 for r in http(url + "/api/v1/breakpoints")["breakpoints"]
                                if r["state"] == "paused") >= workers, 120, every=0.1)  # fmt: skip
        results: dict[str, Any] = {"workers": workers, "python": platform.python_version()}

        async with (
            httpx2.AsyncClient() as client,
            streamable_http_client(f"{url}/mcp", http_client=client) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            results["m1_http"] = ms(await _calls(session, rounds, "list_workers", **nobody))

        stdio = StdioServerParameters(
            command=sys.executable, args=["-m", "raydap.bridge", "mcp"],
            env=dict(os.environ, RAYDAP_URL=url),
        )  # fmt: skip
        async with stdio_client(stdio) as (read, write), ClientSession(read, write) as session:
            start = time.perf_counter()
            await session.initialize()
            results["m1_stdio_start_s"] = round(time.perf_counter() - start, 3)
            results["m1_stdio"] = ms(await _calls(session, rounds, "list_workers", **nobody))

            many = max(1, rounds // 5)
            listed = await session.call_tool("list_workers", {})
            evaluated = await session.call_tool("evaluate", {"expression": "payload"})
            results["m2_mcp"] = {
                "list_workers": ms(await _calls(session, many, "list_workers")),
                "list_chars": _size(listed),
                "list_cut": '"cut":true' in listed.content[0].text,  # type: ignore[union-attr]
                "evaluate": ms(await _calls(session, many, "evaluate", expression="payload")),
                "evaluate_chars": _size(evaluated),
            }
        listing, evaluation = [], []
        for _ in range(many):
            start = time.perf_counter()
            answer = await asyncio.to_thread(http, url + "/api/v1/workers")
            listing.append(time.perf_counter() - start)
            start = time.perf_counter()
            values = await asyncio.to_thread(
                http, url + "/api/v1/evaluate", {"expression": "payload"}
            )
            evaluation.append(time.perf_counter() - start)
        results["m2_http"] = {
            "list_workers": ms(listing),
            "list_chars": len(json.dumps(answer)),
            "evaluate": ms(evaluation),
            "evaluate_chars": len(json.dumps(values)),
            "evaluated": len(values["results"]),
        }
        rss, peak, cpu = usage(bridge.pid)
        results["bridge"] = {"rss_mb": round(rss, 1), "peak_rss_mb": round(peak, 1),
                             "cpu_s": round(cpu, 2)}  # fmt: skip
    return results


if __name__ == "__main__":
    sys.exit(run_benchmark(__doc__, run))
