"""A worker paused at ``breakpoint()`` whose debugpy adapter exited waits forever on a port
that refuses: made on purpose here, and rescued by the bridge (a listener reopened inside it
from outside), held again at the same stop with the same values."""

from __future__ import annotations

import contextlib
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from raydap.bridge.client.local_ray import LocalRay
from tests.conftest import Connect
from tests.e2e.conftest import (
    Job,
    break_line,
    require_gdb_calls,
    start_bridge,
    start_job,
    stop_bridge,
    stop_job,
)
from tests.e2e.test_bridge import evaluate, stopped_frame
from tests.waiting import until, wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def head() -> Iterator[LocalRay]:
    """A head of its own: the session's bridge would hold the worker before its adapter dies."""
    with LocalRay(num_cpus=2) as started:
        yield started


def adapter_listening(logs: Path) -> tuple[int, int] | None:
    """The pid of the job's debugpy adapter and the port it takes clients on, once it does."""
    for log in logs.glob("debugpy.adapter-*.log"):
        found = re.search(
            r"Listening for incoming Client connections on [\d.]+:(\d+)", log.read_text()
        )
        if found:
            return int(log.stem.rsplit("-", 1)[1]), int(found.group(1))
    return None


def waits_for_a_client(logs: Path) -> bool:
    """Whether the worker's main thread waits in ``debugpy.wait_for_client()`` (py-spy)."""
    for log in logs.glob("debugpy.server-*.log"):
        pid = log.stem.rsplit("-", 1)[1]
        dump = subprocess.run(
            [str(Path(sys.executable).parent / "py-spy"), "dump", "--pid", pid],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        return "_wait_for_attach" in dump.stdout
    return False


def refuses(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


async def test_a_paused_worker_whose_adapter_died_is_rescued_at_the_same_stop(
    head: LocalRay, tmp_path: Path, dap_connect: Connect
) -> None:
    require_gdb_calls()
    logs = tmp_path / "debugpy"
    logs.mkdir()
    job = start_job(head.address, "lost_adapter.py", {"RAYDAP_TEST_DEBUGPY_LOGS": str(logs)})
    bridge = None
    try:
        # No bridge yet: the worker waits for a client, and its adapter dies (killed, OOM).
        found = await until(lambda: adapter_listening(logs), timeout=60, what="the adapter")
        adapter, port = found
        await until(lambda: waits_for_a_client(logs), timeout=60, what="the worker waiting")
        psutil.Process(adapter).kill()
        await until(lambda: refuses(port), what="the worker's debug port refusing")

        bridge = start_bridge(["--address", head.address], tmp_path / "bridge.log")
        [record] = bridge.wait_records(job.job_id, timeout=90)
        assert record["debugger_port"] != port  # a listener reopened inside the worker
        assert "reopening a listener inside it" in bridge.log.read_text()
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        await client.attach(breakpoint=record["id"])
        stopped, frame = await stopped_frame(client)
        assert (frame["name"], frame["line"]) == ("square", break_line("lost_adapter.py", "square"))
        assert await evaluate(client, frame, "x, y") == "(7, 49)"
        await client.request("continue", {"threadId": stopped["threadId"]})
        assert job.result() == "49"
    finally:
        if bridge is not None:
            stop_bridge(bridge)
        stop_job(job)


def test_a_bridge_whose_ray_driver_cannot_join_stops_within_10_s_of_sigterm(
    ray_head: LocalRay, run_job: Callable[[str], Job], tmp_path: Path
) -> None:
    """A GCS address where nothing answers, beside a dashboard that lists running workers: the
    stacks of those need the bridge's Ray driver, which tries to join for a minute in a process
    of its own. The bridge stops within 10 s of SIGTERM all the same."""
    nothing = socket.socket()
    nothing.bind(("127.0.0.1", 0))  # bound, never listening
    job = run_job("hung_ranks.py")
    bridge = start_bridge(
        ["--address", f"127.0.0.1:{nothing.getsockname()[1]}",
         "--dashboard-url", ray_head.dashboard_url], tmp_path / "bridge.log",
    )  # fmt: skip
    try:
        asking = threading.Event()

        def ask() -> None:  # until the job's ranks run and their stacks need the driver
            while not asking.is_set():
                with contextlib.suppress(OSError):  # cut off by the stop
                    bridge.get(f"/api/v1/stacks?job={job.job_id}")
                time.sleep(0.3)

        threading.Thread(target=ask, daemon=True).start()
        try:
            wait_until(
                lambda: bridge.get("/healthz")["ray_driver"]["state"] == "joining", timeout=30,
                what="the driver joining", context=lambda: bridge.log.read_text()[-3000:],
            )  # fmt: skip
        finally:
            asking.set()
        started = time.monotonic()
        bridge.process.send_signal(signal.SIGTERM)
        assert bridge.process.wait(timeout=10) == 0, bridge.log.read_text()
        assert time.monotonic() - started < 10
        assert "did not stop within" not in bridge.log.read_text()  # stopped, not abandoned
    finally:
        nothing.close()
        if bridge.process.poll() is None:
            bridge.process.kill()
