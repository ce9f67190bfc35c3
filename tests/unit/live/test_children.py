"""The worker side of child processes (``raydap.live.children``), each case in a fresh
Python: it changes process-wide hooks."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from raydap.live import children


def run(code: str, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env={**os.environ, **env},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_children_are_debugged_unless_the_job_says_0() -> None:
    on = "from raydap.live import children; print(children.enabled())"
    assert run(on) == "True" and run(on, RAYDAP_CHILDREN="1") == "True"
    assert run(on, RAYDAP_CHILDREN=" 0 ") == "False"


def test_turned_off_debugpy_is_told_to_leave_children_alone() -> None:
    code = (
        "from raydap.live import children; children.configure();"
        "from debugpy.server import api; print(api._config['subProcess'])"
    )
    assert run(code, RAYDAP_CHILDREN="0") == "False"


def test_the_worker_keeps_rays_breakpoint_and_its_children_get_raydaps() -> None:
    code = """
import os, sys, builtins
import ray.util.rpdb
from raydap import live
from raydap.live import children
children.configure()
import debugpy._vendored.force_pydevd  # what opening the listener imports: debugpy's hook
assert sys.breakpointhook is not ray.util.rpdb.set_trace
live.keep_rays_breakpoint()
builtins.breakpoint = print  # as Ray's hook does after its first stop
print(sys.breakpointhook is ray.util.rpdb.set_trace, os.environ["PYTHONBREAKPOINT"])
pid = os.fork()
if pid == 0:
    print(sys.breakpointhook is children.breakpoint, builtins.breakpoint is not print, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""
    worker, forked = run(code, PYTHONBREAKPOINT="ray.util.rpdb.set_trace").splitlines()
    assert worker == "True raydap.live.children.breakpoint"
    assert forked == "True True"


def test_a_childs_breakpoint_with_no_debugger_says_so_and_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger=children.__name__):
        children.breakpoint()  # no debugpy listens in this process: it must not wait
    assert f"breakpoint() in process {os.getpid()}" in caplog.text
    assert "no debugger holds it" in caplog.text
