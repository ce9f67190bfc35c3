"""The demo played headless, and a bridge whose dashboard goes away and comes back. (The demo
as a new user runs it, stopped by signals, is tests/e2e/test_first_run.py.)"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.client.ports import free_port
from tests.e2e.conftest import start_bridge, start_job, stop_bridge, stop_job
from tests.waiting import until

pytestmark = pytest.mark.e2e


def test_headless_demo_debugs_three_workers_and_cleans_up() -> None:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    command = ["demo", "--headless", "--port", "0", "--dap-port", "0"]
    demo = subprocess.run(
        [sys.executable, "-m", "raydap.bridge", *command],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    out = demo.stdout
    assert demo.returncode == 0, out + demo.stderr
    assert re.search(r"\] stopped \(breakpoint\)", out)
    assert "stopped (exception: ZeroDivisionError" in out
    assert "locals: x=7, y=49" in out and "locals: k=5" in out
    assert out.count("] continued") == 3
    assert "demo job results: [49, 5], divide raised ZeroDivisionError: OK" in out

    gcs_port = re.search(r"Ray head at 127\.0\.0\.1:(\d+)", out)
    assert gcs_port is not None
    leftovers = [
        pid
        for pid in os.listdir("/proc")
        if pid.isdigit() and f"port={gcs_port[1]}" in _cmdline(pid)
    ]
    assert leftovers == [], "the demo left its Ray processes running"


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


async def start_proxy(port: int, target: str) -> web.AppRunner:
    """The dashboard, reachable again on ``port`` (a real HTTP hop to the real dashboard)."""
    session = aiohttp.ClientSession()

    async def forward(request: web.Request) -> web.Response:
        async with session.get(target + request.path_qs) as answer:
            return web.Response(
                status=answer.status, body=await answer.read(), content_type=answer.content_type
            )

    app = web.Application()
    app.router.add_get("/{tail:.*}", forward)
    app.on_cleanup.append(lambda _: session.close())
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    return runner


@pytest.fixture(scope="module")
def own_ray_head() -> Iterator[LocalRay]:
    """A Ray head of this test's own: the shared one's workers belong to the shared bridge
    (debugpy takes one client, so two bridges cannot hold the same worker)."""
    with LocalRay(num_cpus=2) as head:
        yield head


async def test_dashboard_outage_degrades_health_and_discovery_recovers(
    own_ray_head: LocalRay, tmp_path: Path
) -> None:
    port = free_port()
    bridge = start_bridge(["--dashboard-url", f"http://127.0.0.1:{port}"], tmp_path / "b.log")
    proxy = job = None
    try:
        health = await until(
            lambda: h if (h := bridge.get("/healthz"))["status"] == "degraded" else None,
            timeout=20,
            every=0.1,
            what="the bridge degraded",
        )
        assert f"127.0.0.1:{port} unreachable" in health["reason"]
        assert bridge.get("/api/v1/breakpoints") == {"breakpoints": []}

        proxy = await start_proxy(port, own_ray_head.dashboard_url)
        job = await asyncio.to_thread(start_job, own_ray_head.address, "task_breakpoint.py")
        # In a thread: this loop serves the proxy the bridge is polling.
        [record] = await asyncio.to_thread(bridge.wait_records, job.job_id, 1, 60)
        assert bridge.get("/healthz")["status"] == "ok"
        continued = await asyncio.to_thread(
            bridge.post, f"/api/v1/breakpoints/{record['id']}/continue"
        )
        assert continued == {"continued": [record["id"]]}
        assert await asyncio.to_thread(job.result) == "49"
    finally:
        if job is not None:
            stop_job(job)
        if proxy is not None:
            await proxy.cleanup()
        stop_bridge(bridge)


async def test_hold_timeout_resumes_workers_nobody_touches(
    own_ray_head: LocalRay, tmp_path: Path
) -> None:
    log = tmp_path / "b.log"
    bridge = start_bridge(["--address", own_ray_head.address, "--hold-timeout", "2"], log)
    job = None
    try:
        job = await asyncio.to_thread(start_job, own_ray_head.address, "task_breakpoint.py")
        [record] = await asyncio.to_thread(bridge.wait_records, job.job_id)
        assert await asyncio.to_thread(job.result, 30) == "49"  # nobody continued it
        assert f"hold timeout: resuming {record['id']}" in log.read_text()
    finally:
        if job is not None:
            stop_job(job)
        stop_bridge(bridge)
