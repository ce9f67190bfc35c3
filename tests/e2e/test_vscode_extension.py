"""The VS Code extension in a real VS Code: code-server with the built ``raydap.vsix``, driven by
Playwright in headless Chromium, against a real ``raydap serve`` and a real Ray job.

The person's steps and what they must see are in ``vscode-ext/test/e2e/drive.mjs``; this test
starts everything, runs it, and checks what the steps did outside the editor: the job finished
with the right results and the bridge's audit log names the editor's token.

Needs ``make e2e-tools vsix`` (Node 24 and code-server under ``.tools/``, Debian's chromium).
``make test`` does that and sets RAYDAP_REQUIRE_EDITOR_TESTS=1, so in CI a missing tool is a
failure, not a skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from raydap.bridge.client.local_ray import LocalRay, stop_process_tree
from raydap.bridge.client.ports import free_port
from tests.waiting import wait_until

from .conftest import (
    JOBS,
    BridgeProcess,
    Job,
    require_gdb_calls,
    require_tools,
    start_bridge,
    start_job,
    stop_bridge,
    stop_job,
)

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / ".tools"
NODE = TOOLS / "node24" / "node_modules" / ".bin" / "node"
CODE_SERVER = TOOLS / "code-server" / "node_modules" / ".bin" / "code-server"
VSIX = REPO / "vscode-ext" / "raydap.vsix"
DRIVER = REPO / "vscode-ext" / "test" / "e2e" / "drive.mjs"
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
TOKEN = "editor-e2e-secret-7f3a"


@dataclass
class Editor:
    url: str
    settings: Path
    process: subprocess.Popen[bytes]
    log: Path


@pytest.fixture(scope="module")
def editor_ray() -> Iterator[LocalRay]:
    """A Ray head of the editor tests' own: on the shared head, the session's bridge (which
    needs no token) would hold these jobs' workers before the editor's bridge could."""
    with LocalRay(num_cpus=4) as head:
        yield head


@pytest.fixture
def editor_bridge(
    editor_ray: LocalRay, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[BridgeProcess]:
    """A bridge of its own that needs a token, with an audit log (and the flags of the test's
    ``bridge_args`` mark)."""
    tokens = tmp_path / "tokens"
    tokens.write_text(f"editor debug {TOKEN}\n")
    marked = request.node.get_closest_marker("bridge_args")
    running = start_bridge(
        ["--address", editor_ray.address, "--token-file", str(tokens),
         "--audit-log", str(tmp_path / "audit.jsonl"), *(marked.args if marked else ())],
        tmp_path / "bridge.log",
    )  # fmt: skip
    yield running
    stop_bridge(running)


@pytest.fixture
def editor(tmp_path: Path, editor_bridge: BridgeProcess) -> Iterator[Editor]:
    """code-server with the extension installed in fresh profile directories."""
    require_tools(NODE, CODE_SERVER, VSIX, CHROMIUM, make="make e2e-tools vsix")
    home = tmp_path / "code-server"
    user = home / "data" / "User"
    user.mkdir(parents=True)
    settings = user / "settings.json"
    settings.write_text(json.dumps({
        "security.workspace.trust.enabled": False,  # else the extension waits in Restricted Mode
        "raydap.bridgeUrl": editor_bridge.url,
        "workbench.startupEditor": "none",
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "chat.disableAIFeatures": True,
        "git.enabled": False,
        "extensions.ignoreRecommendations": True,
        "telemetry.telemetryLevel": "off",
        # A rank that stops while the driver types would otherwise move the keyboard focus to
        # the editor, and the rest of a command typed into the palette lands in the open file.
        "debug.focusEditorOnBreak": False,
    }))  # fmt: skip
    env = dict(
        os.environ,
        PATH=f"{NODE.parent}{os.pathsep}{os.environ['PATH']}",
        XDG_CONFIG_HOME=str(home / "config"),
        XDG_DATA_HOME=str(home / "share"),
        # No connection file to find: this test gives the token the way a remote user does.
        RAYDAP_RUNTIME_DIR=str(home / "runtime"),
    )
    common = ["--user-data-dir", str(home / "data"), "--extensions-dir", str(home / "extensions")]
    subprocess.run(
        [CODE_SERVER, *common, "--install-extension", str(VSIX)],
        env=env, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    port = free_port()
    log = home / "code-server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [CODE_SERVER, *common, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
             "--config", str(home / "config.yaml"), "--disable-telemetry",
             "--disable-update-check", "--disable-workspace-trust"],
            env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_http(url + "/healthz", process, log)
        yield Editor(url, settings, process, log)
    finally:
        stop_process_tree(process.pid, grace=5)
        process.wait(timeout=10)


def _wait_http(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    def answers() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"code-server exited:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5):
                return True
        except (urllib.error.URLError, OSError):
            return False

    wait_until(answers, timeout=timeout, every=0.2, what=f"code-server answering {url}")


def drive(editor: Editor, scenario: str, workspace: Path, tmp_path: Path, **more: str) -> str:
    """Run one scenario of drive.mjs; its report (the steps it saw) on success."""
    screenshots = Path(os.environ.get("RAYDAP_SCREENSHOTS", tmp_path))
    screenshots.mkdir(parents=True, exist_ok=True)
    driven = subprocess.run(
        [NODE, DRIVER, scenario],
        env=dict(
            os.environ,
            CODE_SERVER_URL=editor.url,
            WORKSPACE=str(workspace),
            BRIDGE_TOKEN=TOKEN,
            SETTINGS_FILE=str(editor.settings),
            SCREENSHOTS=str(screenshots),
            CHROMIUM=str(CHROMIUM),
            **more,
        ),
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    report = f"driver stdout:\n{driven.stdout}\ndriver stderr:\n{driven.stderr[-3000:]}\n"
    assert driven.returncode == 0, f"{report}screenshots in {screenshots}"
    print(driven.stdout)  # the steps seen, for `pytest -s`
    return report


def copy_workspace(tmp_path: Path) -> Path:
    """The editor's workspace, which is also the jobs' working_dir."""
    workspace = tmp_path / "trainer"
    shutil.copytree(JOBS / "editor_workspace", workspace)
    return workspace


def run_job_in_editor(
    editor: Editor, ray: LocalRay, script: Path, scenario: str
) -> tuple[Job, str]:
    """Start the job, play the scenario in the editor, and return the job's RESULT line."""
    job = start_job(ray.address, str(script))
    try:
        report = drive(editor, scenario, script.parent, script.parent.parent)
        try:
            return job, job.result(timeout=60)
        except Exception as exc:
            raise AssertionError(report) from exc
    finally:
        stop_job(job)


def audit_of(tmp_path: Path) -> list[dict[str, Any]]:
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.timeout(300)
def test_view_attach_evaluate_continue_and_follow_in_vscode(
    editor: Editor, editor_bridge: BridgeProcess, editor_ray: LocalRay, tmp_path: Path
) -> None:
    workspace = copy_workspace(tmp_path)
    job, result = run_job_in_editor(editor, editor_ray, workspace / "train.py", "attach-and-follow")
    assert result == "1.0 0.5"  # the editor continued both stops: both steps' losses

    # What the bridge saw: the editor's token on every action; one session attached to the
    # worker over the DAP TCP port, the other followed the job over the /dap WebSocket.
    audit = audit_of(tmp_path)
    assert {entry["token"] for entry in audit} == {"editor"}, audit
    attaches = [entry for entry in audit if entry["action"] == "attach"]
    assert [("worker" in a, a.get("follow")) for a in attaches] == [
        (True, None),
        (False, {"job": job.job_id}),
    ], audit
    evaluated = [entry["expression"] for entry in audit if entry["action"] == "evaluate"]
    assert evaluated == ["loss * 8", "n + 100"], audit
    assert sum(entry["action"] == "continue" for entry in audit) >= 2, audit
    tcp_sessions = editor_bridge.log.read_text().count("DAP client connected")
    assert tcp_sessions == 1, editor_bridge.log.read_text()


@pytest.mark.timeout(300)
def test_child_sessions_one_per_rank_in_vscode(
    editor: Editor, editor_ray: LocalRay, tmp_path: Path
) -> None:
    workspace = copy_workspace(tmp_path)
    (workspace / ".vscode").mkdir()
    (workspace / ".vscode" / "launch.json").write_text(json.dumps({
        "version": "0.2.0",
        "configurations": [{
            "type": "ray", "request": "attach", "name": "Ray: ranks",
            "follow": {"task": "rank"}, "childSessions": True,
        }],
    }))  # fmt: skip
    _, result = run_job_in_editor(editor, editor_ray, workspace / "ranks.py", "child-sessions")
    assert result == "[1.0, 0.5]"

    # The follow session asked VS Code for a child session per rank; each attached by itself.
    attaches = [entry for entry in audit_of(tmp_path) if entry["action"] == "attach"]
    assert attaches[0]["follow"] == {"task": "rank"}, attaches
    assert len({entry["worker"] for entry in attaches[1:]}) == 2, attaches


@pytest.mark.timeout(300)
# Every job watched, a sample a second, 4 s of stillness a hang: the hung job's notification.
@pytest.mark.bridge_args("--hang-watch", "all", "--hang-after", "4", "--hang-sample-interval", "1")
def test_stacks_of_a_hung_job_and_pausing_a_rank_in_vscode(
    editor: Editor, editor_ray: LocalRay, tmp_path: Path
) -> None:
    require_gdb_calls()  # the waiting rank is paused from outside
    workspace = copy_workspace(tmp_path)
    script = workspace / "hung.py"
    shutil.copy(JOBS / "hung_ranks.py", script)
    job = start_job(editor_ray.address, str(script))
    try:
        drive(editor, "stacks-and-pause", workspace, tmp_path, JOB_ID=job.job_id)
    finally:
        stop_job(job)
    paused = [entry for entry in audit_of(tmp_path) if entry["action"] == "pause"]
    assert [entry["token"] for entry in paused] == ["editor"], paused


@pytest.mark.timeout(300)
def test_editor_breakpoints_and_pause_on_a_live_job_in_vscode(
    editor: Editor, editor_ray: LocalRay, tmp_path: Path
) -> None:
    """Code with no breakpoint() anywhere: the breakpoint comes from the editor's gutter, in the
    workspace's copy of a file the workers run from their working_dir package; then it is made
    a capture point, and a capture is opened from the Ray Captures view."""
    workspace = copy_workspace(tmp_path)
    job = start_job(editor_ray.address, str(workspace / "live.py"))
    try:
        drive(editor, "live-breakpoints", workspace, tmp_path)
        (workspace / "done.flag").touch()
        assert job.result(timeout=60) == "[1, 11]"
    finally:
        stop_job(job)
    audit = audit_of(tmp_path)
    # The job followed; then one capture opened from the Ray Captures view, read-only.
    attaches = [a for a in audit if a["action"] == "attach"]
    assert [a.get("follow") for a in attaches] == [{"job": job.job_id}, None], audit
    assert attaches[1]["capture"].startswith("cap-"), audit
    assert [a["token"] for a in audit if a["action"] == "pause"] == ["editor"], audit
