"""Two real gloo ranks, each a Python process running a script (torch is on Python 3.11 here)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest


def run_two_ranks(script: str, reporter: int, timeout: float = 90) -> str:
    """Run ``script`` as ranks 0 and 1 (``sys.argv``: rank, port) and return what rank
    ``reporter`` printed; both are killed by pid at the end."""
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_")}
    ranks = [subprocess.Popen([sys.executable, "-c", script, str(r), port], env=env,
                              stdout=subprocess.PIPE, text=True) for r in (0, 1)]  # fmt: skip
    try:
        out, _ = ranks[reporter].communicate(timeout=timeout)
    finally:
        for process in ranks:
            process.kill()
            process.wait()
    return out
