"""A real debugpy process standing in for a paused Ray worker (no Ray needed)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

DEBUGGEE = Path(__file__).parent / "adapter" / "debuggee.py"


@dataclass
class Debuggee:
    process: subprocess.Popen[str]
    port: int

    def result_line(self) -> str:
        """The line the debuggee prints when ``work`` returns. (Not read to EOF: debugpy's
        adapter subprocess inherits the pipe and outlives the debuggee for a while.)"""
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("result"):
                return line.strip()
        return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start_debuggee(linger: float = 0, script: Path = DEBUGGEE) -> Debuggee:
    """A debuggee script (``debuggee.py`` unless told) in a process of its own, which prints
    its debugpy port first; ``debuggee.py`` stays alive ``linger`` seconds after its work is
    done (a Ray worker lives on after its task)."""
    process = subprocess.Popen(
        [sys.executable, "-Xfrozen_modules=off", str(script), str(linger)],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"),
    )
    assert process.stdout is not None
    return Debuggee(process, int(process.stdout.readline()))


@pytest.fixture
def debuggee() -> Iterator[Debuggee]:
    started = start_debuggee()
    yield started
    started.stop()
