"""``raydap doctor`` against real Ray heads: one healthy, one whose workers run with
``RAY_DEBUG=legacy`` (the most common setup mistake)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from raydap.bridge.client.local_ray import LocalRay
from tests.e2e.conftest import BridgeProcess, gdb_refusal, ptrace_refusal

pytestmark = pytest.mark.e2e


def doctor(address: str, bridge: BridgeProcess) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAYDAP_TOKEN", "RAY_ADDRESS")}
    env["RAYDAP_URL"] = bridge.url  # the token comes from the bridge's connection file
    return subprocess.run(
        [sys.executable, "-m", "raydap.bridge", "doctor", "--address", address],
        capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip


def test_a_healthy_cluster_passes(ray_head: LocalRay, bridge: BridgeProcess) -> None:
    result = doctor(ray_head.address, bridge)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all checks passed" in result.stdout
    assert "the bridge accepts this client's token" in result.stdout
    assert "node 127.0.0.1" in result.stdout or "node 192." in result.stdout
    assert "debugpy 1." in result.stdout
    # Every private hook raydap uses, checked in a worker on the node and in this Ray:
    assert "every private hook of debugpy, Ray and torch that raydap uses is there" in result.stdout
    assert "the private Ray calls raydap makes are all here" in result.stdout
    # py-spy and gdb tried on the node as raydap uses them: on a sibling of theirs
    if ptrace_refusal() is None:
        assert "py-spy attaches to a sibling process" in result.stdout
        assert "gdb attaches to a sibling process" in result.stdout
    if gdb_refusal() is not None:  # a warning, not a failure: this machine's gdb breaks calls
        assert "cannot be paused from outside: gdb cannot call into a process" in result.stdout


def test_workers_with_ray_debug_legacy_fail_and_the_node_is_named(bridge: BridgeProcess) -> None:
    with LocalRay(num_cpus=1, env={"RAY_DEBUG": "legacy"}) as legacy:
        result = doctor(legacy.address, bridge)
    assert result.returncode == 1, result.stdout + result.stderr
    [line] = [line for line in result.stdout.splitlines() if "RAY_DEBUG=legacy" in line]
    assert line.startswith("[FAIL] node ") and "breakpoint()" in line
    assert "unset RAY_DEBUG" in result.stdout
