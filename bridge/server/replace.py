"""Which bridge ``raydap serve --replace`` takes over from, and SIGHUP: the running bridge
starts its own replacement (same executable, same flags, read afresh) and hands over to it."""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
from pathlib import Path

from raydap.bridge.server import connection_file, handover

log = logging.getLogger(__name__)


def bridge_to_replace(runtime_dir: Path, pid: int | None) -> Path:
    """The hand-over socket of the running bridge ``pid`` names, or of the only one running
    here; raises HandoverError saying what to do otherwise."""
    running = [c.pid for c in connection_file.live_connections(runtime_dir) if c.pid != os.getpid()]
    if pid is None:
        if not running:
            raise handover.HandoverError(
                f"no running bridge has a connection file in {runtime_dir}"
            )
        if len(running) > 1:
            pids = ", ".join(str(p) for p in sorted(running))
            raise handover.HandoverError(f"several bridges run here (pids {pids}): --replace PID")
        pid = running[0]
    elif pid not in running:
        raise handover.HandoverError(f"no running bridge with pid {pid} in {runtime_dir}")
    path = handover.socket_path(runtime_dir, pid)
    if not path.exists():
        raise handover.HandoverError(f"the bridge with pid {pid} cannot hand over (no {path})")
    return path


def reload_command(argv: list[str], pid: int) -> list[str]:
    """This process's own command line, to replace bridge ``pid`` (any ``--replace`` it was
    given dropped)."""
    kept: list[str] = []
    skip = False
    for position, argument in enumerate(argv):
        if skip:
            skip = False
            continue
        if argument == "--replace":
            following = argv[position + 1] if position + 1 < len(argv) else ""
            skip = following.isdigit()
            continue
        if argument.startswith("--replace="):
            continue
        kept.append(argument)
    return [sys.executable, "-m", "raydap.bridge", *kept, "--replace", str(pid)]


class Reloader:
    """Starts the replacement on SIGHUP, one at a time, and says when it does not take over."""

    def __init__(self, command: list[str], replaced: asyncio.Event) -> None:
        self._command = command
        self._replaced = replaced
        self._running: asyncio.Task[None] | None = None

    def reload(self) -> None:
        if self._running is not None and not self._running.done():
            log.info("SIGHUP: a replacement is already starting")
            return
        self._running = asyncio.create_task(self._replace(), name="reload")

    async def _replace(self) -> None:
        log.info("SIGHUP: starting a new bridge to hand over to: %s", " ".join(self._command))
        # Not asyncio's subprocess: its transport kills a child still running when this loop
        # closes, and this child is to outlive it. Popen only forks and execs.
        process = subprocess.Popen(self._command, stdin=subprocess.DEVNULL)  # noqa: ASYNC220
        # Polled, not waited for in a thread: once it takes over, this process exits while
        # the new one runs on, and a thread blocked in wait() would hold the exit up.
        while process.poll() is None:
            if self._replaced.is_set():
                return
            await asyncio.sleep(0.2)
        if not self._replaced.is_set():
            log.warning(
                "SIGHUP: the new bridge (pid %d) exited with %s before taking over: serving on",
                process.pid,
                process.returncode,
            )
