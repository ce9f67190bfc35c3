"""A cluster with Ray's own token auth (Ray >= 2.52, ``RAY_AUTH_MODE=token``): the bridge finds
Ray's token where Ray's clients look, and says clearly when it has none."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from raydap.bridge.client.local_ray import LocalRay
from tests.conftest import Connect
from tests.e2e.conftest import start_bridge, start_job, stop_bridge, stop_job
from tests.e2e.test_bridge import evaluate, stopped_frame
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e
RAY_TOKEN = secrets.token_hex(32)


@pytest.fixture(scope="module")
def secured_head() -> Iterator[LocalRay]:
    with LocalRay(num_cpus=2, env={"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": RAY_TOKEN}) as head:
        yield head


def bridge_env(**ray: str) -> dict[str, str]:
    """The test's environment without any Ray auth of its own, plus ``ray``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    return {**env, "HOME": os.environ.get("HOME", "/root"), **ray}


async def test_paused_workers_of_a_token_cluster_are_found_attached_and_continued(
    secured_head: LocalRay, tmp_path: Path, dap_connect: Connect
) -> None:
    token_file = tmp_path / "ray_token"
    token_file.write_text(RAY_TOKEN + "\n")
    bridge = start_bridge(
        ["--address", secured_head.address], tmp_path / "bridge.log",
        bridge_env(RAY_AUTH_TOKEN_PATH=str(token_file)),
    )  # fmt: skip
    job = start_job(secured_head.address, "task_breakpoint.py",
                    {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": RAY_TOKEN})  # fmt: skip
    try:
        [record] = bridge.wait_records(job.job_id)
        assert bridge.get("/healthz")["status"] == "ok"
        client = await dap_connect(bridge.dap_host, bridge.dap_port)
        await client.attach(breakpoint=record["id"])
        stopped, frame = await stopped_frame(client)
        assert await evaluate(client, frame, "y") == "49"
        await client.request("continue", {"threadId": stopped["threadId"]})
        assert job.result() == "49"
    finally:
        stop_job(job)
        stop_bridge(bridge)


def test_without_rays_token_health_says_what_to_set(secured_head: LocalRay, tmp_path: Path) -> None:
    empty_home = tmp_path / "home"
    empty_home.mkdir()
    bridge = start_bridge(
        ["--address", secured_head.address, "--dashboard-url", secured_head.dashboard_url],
        tmp_path / "bridge.log", {**bridge_env(), "HOME": str(empty_home)},
    )  # fmt: skip
    try:

        def polled() -> dict[str, Any] | None:
            health = bridge.get("/healthz")
            return health if health.get("reason", "not polled yet") != "not polled yet" else None

        health = wait_until(
            polled,
            timeout=20,
            every=0.2,
            what="the dashboard polled",
        )
        assert health["status"] == "degraded"
        assert "RAY_AUTH_TOKEN" in health["reason"] and "token auth" in health["reason"]
    finally:
        stop_bridge(bridge)
