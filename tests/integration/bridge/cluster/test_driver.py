"""The bridge's Ray driver when Ray ends its process: a real child that aborts as Ray's fatal
checks do (SIGABRT), or that cannot join. No Ray cluster is needed to see how the bridge
takes it: the child is what Ray would kill, and the bridge must outlive it."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import pytest

from raydap.bridge.cluster import on_node
from raydap.bridge.cluster.driver import BACKOFF, DriverUnavailable, RayDriver


def python_that(tmp_path: Path, body: str) -> str:
    """A stand-in for the driver's Python: a real process that does ``body`` (shell)."""
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


async def test_a_driver_that_aborts_costs_only_its_process(tmp_path: Path) -> None:
    started = tmp_path / "starts"
    aborts = python_that(tmp_path, f"echo x >> {started}; kill -ABRT $$")
    driver = RayDriver("10.0.0.9:6379", python=aborts)
    try:
        with pytest.raises(DriverUnavailable) as first:
            await driver.run_on_node("n1", on_node.read_stacks, [1], timeout=10)
        assert "killed by SIGABRT" in str(first.value)
        assert driver.status.state == "down" and driver.status.retry_in is not None
        # Known to be down: the next call is answered at once, with why and when it retries
        loop = asyncio.get_running_loop()
        at = loop.time()
        with pytest.raises(DriverUnavailable) as second:
            await driver.run_on_node("n1", on_node.read_stacks, [1], timeout=10)
        assert loop.time() - at < 0.5
        assert "trying again in" in str(second.value)
        # ... and it is started again by itself, with backoff
        await asyncio.sleep(BACKOFF[0] + 1.0)
        assert len(started.read_text().split()) >= 2
    finally:
        await driver.close()


async def test_a_driver_that_cannot_join_says_what_ray_said(tmp_path: Path) -> None:
    driver = RayDriver("10.0.0.9:6379")  # the real child; nothing listens there
    try:
        with pytest.raises(DriverUnavailable) as waited:
            await driver.run_on_node("n1", on_node.read_stacks, [1], timeout=2)
        assert "still joining Ray at 10.0.0.9:6379 after 2 s" in str(waited.value)
    finally:
        at = asyncio.get_running_loop().time()
        await driver.close()
        assert asyncio.get_running_loop().time() - at < 5  # a stop never waits on Ray


async def test_without_a_gcs_address_it_says_how_to_get_one() -> None:
    driver = RayDriver(None)
    with pytest.raises(DriverUnavailable, match="start it with --address"):
        await driver.run_on_node("n1", on_node.read_stacks, [1], timeout=1)
    await driver.close()
