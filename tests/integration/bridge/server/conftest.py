"""A real debugpy, paused, behind a fake dashboard: the bridge's own business (access, limits,
browser defences) needs no Ray."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import BridgeProcess, start_bridge, stop_bridge
from tests.e2e.conftest import browser as browser  # Chromium, for the page's view-token test

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def dashboard() -> Iterator[str]:
    """A real debugpy, paused, listed by a fake dashboard; yields the dashboard URL."""
    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
    debuggee = subprocess.Popen(
        [sys.executable, "-Xfrozen_modules=off", str(ROOT / "bench" / "debuggee.py")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert debuggee.stdout is not None
    port = debuggee.stdout.readline().strip()
    cluster = subprocess.Popen(
        [sys.executable, "-m", "bench.fake_cluster", "--workers", "0", "--real", port],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert cluster.stdout is not None
    yield cluster.stdout.readline().split()[1]
    for process in (cluster, debuggee):
        process.kill()
        process.wait()


@pytest.fixture
def empty_dashboard() -> Iterator[str]:
    """A fake dashboard that lists no worker, for a bridge that must not hold the module's
    debuggee: debugpy takes one client, and a second bridge that reached it cut the first
    bridge's connection (once, on 3.12 in CI)."""
    cluster = subprocess.Popen(
        [sys.executable, "-m", "bench.fake_cluster", "--workers", "0"],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    assert cluster.stdout is not None
    yield cluster.stdout.readline().split()[1]
    cluster.kill()
    cluster.wait()


def hang_reports(home: Path) -> Path:
    """The folder where the bridge started in ``home`` keeps its hang reports."""
    return home / "hang-reports"


ALICE, BOB = "alice-debug-secret-0123456789", "bob-view-secret-0123456789ab"


@pytest.fixture(scope="module")
def secured(dashboard: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BridgeProcess]:
    """A bridge with two tokens, alice (debug) and bob (view), an audit log, and hang reports
    of its own (`hang_reports`): the session's folder holds those of real jobs' tests."""
    home = tmp_path_factory.mktemp("secured")
    tokens = home / "tokens"
    tokens.write_text(f"# who may debug\nalice debug {ALICE}\nbob view {BOB}  # read-only\n")
    args = ["--dashboard-url", dashboard, "--token-file", str(tokens),
            "--audit-log", str(home / "audit.jsonl"), "--handshake-timeout", "1",
            "--max-connections-per-address", "6"]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "RAYDAP_TOKEN"}
    env["RAYDAP_HANG_REPORTS"] = str(hang_reports(home))
    bridge = start_bridge(args, home / "bridge.log", env)
    yield bridge
    stop_bridge(bridge)
