"""Stopping a local Ray head stops what it started, orphans too: a debugpy adapter whose worker
died is reparented to init, in no process tree, and was left running after the tests (found
once after a CI run on 3.13). It carries the head's mark in its environment."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from raydap.bridge.client.local_ray import MARK, marked, stop_process_tree

#: Starts a child in a session of its own (as debugpy starts its adapter), says its pid, exits.
ORPHANING = (
    "import subprocess, sys; child = subprocess.Popen([sys.executable, '-c', "
    "'import time; time.sleep(120)'], start_new_session=True, stdout=subprocess.DEVNULL, "
    "stderr=subprocess.DEVNULL); print(child.pid, flush=True)"
)


def test_an_orphan_under_a_head_is_found_by_its_mark_and_stopped(tmp_path: Path) -> None:
    env = dict(os.environ, **{MARK: str(tmp_path)})
    head = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], env=env,
                            start_new_session=True)  # fmt: skip
    said = subprocess.run([sys.executable, "-c", ORPHANING], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    orphan = psutil.Process(int(said.stdout))
    try:
        assert orphan.ppid() != head.pid and os.getsid(orphan.pid) != head.pid  # in no tree
        assert marked(str(tmp_path)) == {head.pid, orphan.pid}
        assert orphan.pid not in marked(str(tmp_path / "another head"))

        stop_process_tree(head.pid, grace=5, also=lambda: marked(str(tmp_path)))

        assert head.wait(timeout=5) is not None
        assert not orphan.is_running() or orphan.status() == psutil.STATUS_ZOMBIE
    finally:
        for process in (orphan, psutil.Process(head.pid) if head.poll() is None else None):
            if process is not None:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()


def test_the_heads_token_auth_is_chosen_as_ray_would_and_told_to_what_joins_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ray start`` turns token auth on where ~/.ray/auth_token exists (any local ray.init()
    since Ray 2.52 writes one), and a driver joining it does not: the demo's job was refused."""
    from raydap.bridge.client.local_ray import LocalRay

    def chosen() -> tuple[dict[str, str], dict[str, str]]:  # a head not started: its choice
        head = LocalRay()
        head.stop()  # removes its directory
        return head.env, head.client_env

    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN_PATH", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert chosen()[1] == {"RAY_AUTH_MODE": "disabled"}

    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("a" * 32)
    env, client_env = chosen()
    assert env["RAY_AUTH_MODE"] == client_env["RAY_AUTH_MODE"] == "token"

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # chosen by the caller: kept as it is
    env, client_env = chosen()
    assert client_env == {"RAY_AUTH_MODE": "disabled"} and "RAY_AUTH_MODE" not in env
