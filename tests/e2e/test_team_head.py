"""A head shared by a team, as deploy/systemd/raydap.service runs it: the bridge as one user,
a person as another, each with a HOME and XDG directories of their own. The person lists the
paused workers and attaches with a token of their own, in the documented two steps (the
operator's `raydap token add`, the person's `raydap login`), while the bridge runs on.

Two uids that /etc/passwd does not know (setpriv), the unit's settings with its folders made
under a temporary directory as systemd would make them; every process is stopped by its pid.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from raydap.adapter.channel import StreamChannel
from raydap.bridge.client.connection import ClientSettings
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay, stop_process_tree
from raydap.bridge.cluster.ray_auth import token_source
from tests.e2e.conftest import Job, start_job
from tests.waiting import wait_until

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "raydap.service"
BRIDGE_UID, PERSON_UID, TEAM_GID = 61501, 61502, 61500


@dataclass
class User:
    uid: int
    gid: int
    home: Path

    def env(self, **more: str) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k.startswith(("RAY_AUTH_MODE", "PATH"))}
        return {
            **keep, "HOME": str(self.home), "USER": f"u{self.uid}",
            "XDG_RUNTIME_DIR": str(self.home / "run"),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"), **more,
        }  # fmt: skip

    def command(self, *args: str) -> list[str]:
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}",
                f"--groups={TEAM_GID}", "--inh-caps=-all", *args]  # fmt: skip


def unit_environment() -> dict[str, str]:
    """The unit's ``Environment=`` lines."""
    found: dict[str, str] = {}
    for line in UNIT.read_text().splitlines():
        if line.startswith("Environment="):
            name, _, value = line.removeprefix("Environment=").partition("=")
            found[name] = value
    return found


@pytest.fixture
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[User, User, Path]]:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("two users need root and setpriv")
    base = Path(tempfile.mkdtemp(prefix="rdteam", dir="/tmp"))
    base.chmod(0o755)
    users = []
    for uid in (BRIDGE_UID, PERSON_UID):
        home = base / f"home{uid}"
        (home / "run").mkdir(parents=True)
        for path in (home, home / "run"):
            os.chown(path, uid, TEAM_GID if uid == BRIDGE_UID else uid)
            path.chmod(0o700)
        users.append(User(uid, TEAM_GID if uid == BRIDGE_UID else uid, home))
    try:
        yield users[0], users[1], base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def ray_head() -> Iterator[LocalRay]:
    """A Ray head of this test's own: the shared one's paused workers belong to the shared
    bridge, which would race this bridge for the job's worker (debugpy takes one client)."""
    with LocalRay(num_cpus=1) as head:
        yield head


def test_a_second_user_lists_and_attaches_with_a_token_of_their_own(
    ray_head: LocalRay, team: tuple[User, User, Path]
) -> None:
    bridge_user, person, base = team
    # What systemd makes for the unit: its runtime folders (owner ray, group raydap, 0750),
    # and what the operator made by hand: /etc/raydap/tokens, root's, the group's to read.
    settings = unit_environment()
    where = {"/run/raydap": base / "run-raydap", "/run/raydap-team": base / "run-raydap-team",
             "/etc/raydap/tokens": base / "etc-raydap" / "tokens"}  # fmt: skip
    assert set(settings.values()) == set(where), settings  # the unit's own folders
    # A person's raydap looks in the unit's team folder unless told: here it is told where
    # the test moved it
    assert ClientSettings().share_dir == Path(settings["RAYDAP_SHARE_DIR"])
    team_folder = {"RAYDAP_SHARE_DIR": str(where["/run/raydap-team"])}
    for folder in (where["/run/raydap"], where["/run/raydap-team"]):
        folder.mkdir()
        os.chown(folder, BRIDGE_UID, TEAM_GID)
        folder.chmod(0o750)
    tokens = where["/etc/raydap/tokens"]
    tokens.parent.mkdir()
    tokens.write_text("")
    os.chown(tokens, 0, TEAM_GID)
    tokens.chmod(0o640)
    serve_env = bridge_user.env(**{k: str(where[v]) for k, v in settings.items()},
                                **ray_head.client_env)  # fmt: skip
    ray_token = token_source()
    if ray_head.client_env.get("RAY_AUTH_MODE") == "token" and ray_token is not None:
        serve_env["RAY_AUTH_TOKEN"] = ray_token[0]
    log = open(base / "bridge.log", "wb")  # noqa: SIM115 (the bridge writes to it)
    bridge = subprocess.Popen(
        bridge_user.command(sys.executable, "-m", "raydap.bridge", "serve", "--address",
                            ray_head.address, "--port", "0", "--dap-port", "0"),
        stdout=subprocess.PIPE, stderr=log, env=serve_env, cwd=base, start_new_session=True,
    )  # fmt: skip
    job: Job | None = None
    try:
        assert bridge.stdout is not None
        line = bridge.stdout.readline().decode()
        assert "HTTP http://" in line, line + (base / "bridge.log").read_text()
        url = re.search(r"HTTP (\S+)", line)[1]  # type: ignore[index]
        job = start_job(ray_head.address, "task_breakpoint.py")

        def person_runs(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                person.command(sys.executable, "-m", "raydap.bridge", *args), input=stdin,
                capture_output=True, text=True, timeout=60, cwd=base, env=person.env(**team_folder),
            )  # fmt: skip

        # Before: the person's raydap finds the bridge, which wants a token of them
        refused = person_runs("list")
        assert refused.returncode == 1 and "raydap login" in refused.stderr, refused.stderr
        # The operator (root) gives them one; the file keeps its owner, group and mode
        added = subprocess.run(
            [sys.executable, "-m", "raydap.bridge", "token", "--file", str(tokens), "add",
             "alice", "--role", "debug"], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert added.returncode == 0, added.stderr
        secret = added.stdout.split(": ", 1)[1].strip()
        found = tokens.stat()
        assert (found.st_uid, found.st_gid, found.st_mode & 0o777) == (0, TEAM_GID, 0o640)
        # The running bridge reads the file again within a second, no worker let go
        wait_until(lambda: "alice (debug)" in (base / "bridge.log").read_text(), timeout=10,
                   what="the bridge to read the token file again")  # fmt: skip
        # The person, once: `raydap login`; then their commands use their own token
        logged_in = person_runs("login", stdin=secret + "\n")
        assert logged_in.returncode == 0, logged_in.stderr
        saved = person.home / ".config" / "raydap" / "tokens.json"
        assert json.loads(saved.read_text()) == {url: secret}
        assert saved.stat().st_uid == PERSON_UID and saved.stat().st_mode & 0o077 == 0

        def paused() -> list[dict[str, object]] | None:
            listed = person_runs("list", "--json")
            assert listed.returncode == 0, listed.stderr
            found = [r for r in json.loads(listed.stdout) if r["job_id"] == job.job_id]
            return [r for r in found if r["task_name"]] or None  # (once it is named)

        [record] = wait_until(
            paused, timeout=60, what="the paused worker, listed by alice",
            context=lambda: person_runs("list").stdout + (base / "bridge.log").read_text()[-3000:],
        )  # fmt: skip
        assert record["task_name"] == "square"
        asyncio.run(attach_as(person, str(record["id"]), team_folder))
        assert job.result() == "49"
    finally:
        if job is not None and job.process.poll() is None:
            job.process.kill()
        stop_process_tree(bridge.pid, grace=10)
        bridge.wait(timeout=20)
        log.close()
    # The bridge took its connection files with it, the team's copy included
    assert not list(where["/run/raydap-team"].glob("bridge-*.json"))


async def attach_as(person: User, worker: str, env: dict[str, str]) -> None:
    """``raydap dap`` as the person, attached as an editor attaches: stopped at the line."""
    process = await asyncio.create_subprocess_exec(
        *person.command(sys.executable, "-m", "raydap.bridge", "dap", "--breakpoint", worker),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=person.env(**env),
    )  # fmt: skip
    assert process.stdout is not None and process.stdin is not None
    client = DapClient(StreamChannel(process.stdout, process.stdin, peer="raydap dap"))
    try:
        await client.attach()
        stopped = await client.wait_event("stopped", timeout=30)
        trace = await client.request("stackTrace", {"threadId": stopped.body["threadId"]})
        frame = trace.body["stackFrames"][0]
        value = await client.request("evaluate", {"expression": "y", "frameId": frame["id"],
                                                  "context": "repl"})  # fmt: skip
        assert value.body["result"] == "49"
        await client.request("continue", {"threadId": stopped.body["threadId"]})
    finally:
        await client.close()
        if process.returncode is None:
            process.kill()
        await process.wait()
