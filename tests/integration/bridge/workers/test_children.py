"""Child processes of a held worker, with real debugpy and real processes (no Ray): the holder
holds each child a worker starts on that worker's debugpy adapter, and lets it go when it
exits, or when its parent does."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import psutil
import pytest

from raydap.adapter import State
from raydap.bridge.cluster.dashboard import WorkerRow
from raydap.bridge.cluster.discovery import PausedWorker
from raydap.bridge.cluster.live_marks import LiveMark
from raydap.bridge.workers.holder import Holder, record_id
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry
from tests.waiting import until

PARENT = Path(__file__).parents[2] / "adapter" / "parent_debuggee.py"


class Parent:
    def __init__(self, tmp_path: Path) -> None:
        self.go, self.done = tmp_path / "go", tmp_path / "done"
        self.process = subprocess.Popen(
            [sys.executable, str(PARENT), str(self.go), str(self.done)],
            stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"),
        )  # fmt: skip
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())
        self.registry = Registry()
        self.holder = Holder(self.registry, handshake_timeout=10)
        self.worker = WorkerRow(
            worker_id="cd" * 28, ip="127.0.0.1", pid=self.process.pid, debugger_port=self.port
        )
        self.id = record_id(self.worker.worker_id)
        #: Every process of the parent's tree seen so far: the parent may die before them.
        self.started: set[psutil.Process] = set()
        self.look()

    def look(self) -> None:
        """Remember the processes the parent has started (debugpy's adapter, its children)."""
        with contextlib.suppress(psutil.NoSuchProcess):
            root = psutil.Process(self.process.pid)
            self.started |= {root, *root.children(recursive=True)}

    def start_children(self, methods: str) -> None:
        """Tell the parent which children to start. The file appears whole (written beside,
        then renamed): the parent reads it as soon as it exists, and a file created empty and
        written after read as no children at all."""
        written = self.go.with_suffix(".writing")
        written.write_text(methods)
        written.replace(self.go)

    async def hold(self, working_dir: str) -> None:
        mark = LiveMark(pid=self.process.pid, cwd=working_dir)
        self.holder.hold(PausedWorker(self.worker, time.time()), live=mark)
        await self.holder.held_worker(self.id)

    def children(self) -> list[BreakpointRecord]:
        return [r for r in self.registry.records() if r.parent == self.id]

    def held_children(self) -> int:
        return len([c for c in self.children() if c.id in self.holder.upstreams])

    async def until(self, condition: Callable[[], object], timeout: float = 30) -> None:
        """Until ``condition`` holds, looking at the parent's children between tries."""

        def looked() -> object:
            self.look()
            return condition()

        await until(
            looked, timeout=timeout, every=0.05, context=lambda: str(self.registry.records())
        )

    def stop(self) -> None:
        """Every process of this test, by pid: the parent and whatever it started, orphans
        of a parent that died included (a ``psutil.Process`` knows its start time, so a
        reused pid is not mistaken for one of them)."""
        self.done.touch()
        self.look()
        for process in self.started:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(list(self.started), timeout=10)
        self.process.wait()


@pytest.fixture
async def parent(tmp_path: Path) -> AsyncIterator[Parent]:
    started = Parent(tmp_path)
    yield started
    await started.holder.close()
    started.stop()


async def test_children_are_held_beside_their_parent_and_leave_as_they_exit(
    parent: Parent, tmp_path: Path
) -> None:
    await parent.hold(str(tmp_path))
    parent.start_children("spawn fork")
    # The two children, and the resource tracker multiprocessing starts for spawned ones.
    await parent.until(lambda: parent.held_children() == 3)
    children = parent.children()
    started = {p.pid for p in psutil.Process(parent.process.pid).children(recursive=True)}
    assert {c.pid for c in children} <= started
    for child in children:
        assert child.live and child.working_dir == str(tmp_path)
        assert child.node_ip == "127.0.0.1" and child.debugger_port == parent.port
        assert not child.id.startswith(parent.id[:4])  # a prefix of the parent names it alone
        assert parent.holder.upstreams[child.id].state is State.RUNNING
        assert child.label.startswith(f"child of {parent.id} (pid {child.pid} ")

    parent.done.touch()  # the two exit; the tracker lives as long as the parent
    await parent.until(lambda: len(parent.children()) == 1)
    assert parent.id in parent.holder.upstreams  # the parent is held still


async def test_a_parent_that_dies_takes_its_children_with_it(
    parent: Parent, tmp_path: Path
) -> None:
    await parent.hold(str(tmp_path))
    parent.start_children("spawn spawn")
    await parent.until(lambda: parent.held_children() == 3)
    parent.process.send_signal(signal.SIGKILL)
    await parent.until(lambda: not parent.registry.records())
    assert not parent.holder.upstreams


async def test_a_childs_own_children_are_held_under_it(parent: Parent, tmp_path: Path) -> None:
    await parent.hold(str(tmp_path))
    parent.start_children("nested")
    await parent.until(lambda: parent.held_children() == 1)
    [child] = parent.children()
    await parent.until(
        lambda: any(r.parent == child.id and r.id in parent.holder.upstreams
                    for r in parent.registry.records())
    )  # fmt: skip
    [grandchild] = [r for r in parent.registry.records() if r.parent == child.id]
    assert grandchild.pid != child.pid and grandchild.working_dir == str(tmp_path)
    parent.done.touch()
    await parent.until(lambda: len(parent.registry.records()) == 1)  # the worker alone
