"""The bridge as a Ray driver, for the little that must run on a worker's own node (reading
stacks with py-spy, pausing a worker in place): zero-CPU tasks pinned to that node.

The driver is a child process (:mod:`raydap.bridge.cluster.driver_process`): Ray can abort the
process it runs in, and that must cost the child, never the bridge. It is started on first use
only, so a bridge that never needs it never joins the cluster as a job; once started, it is
started again with backoff whenever it ends. While it is down, every call fails at once with
why, and the rest of the bridge (the relay, live workers, captures) never needs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from raydap.bridge.cluster.driver_process import HEADER, MOST_BYTES, encode

log = logging.getLogger(__name__)

#: Seconds between a driver's end and its next start: doubling up to the last.
BACKOFF = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0)
#: A driver that lived this long starts the backoff over.
STEADY_AFTER = 120.0
#: A call waits at most this long for a driver that is still joining Ray.
JOIN_WAIT = 20.0

DriverState = Literal["idle", "joining", "joined", "down"]


class DriverUnavailable(Exception):
    """Ray could not be joined as a driver; the message says why."""


class RemoteFailure(Exception):
    """The task failed on its node (or the node did); the message is its exception's."""


@dataclass(frozen=True)
class DriverStatus:
    """What ``doctor``, ``/healthz`` and each answer that needs the driver say of it."""

    state: DriverState
    #: Why it is down (or how its last try ended), "" when nothing went wrong.
    why: str = ""
    #: Seconds until it is started again, while down.
    retry_in: float | None = None


class RayDriver:
    def __init__(self, gcs_address: str | None, *, python: str = sys.executable) -> None:
        self.gcs_address = gcs_address
        self.python = python
        self._state: DriverState = "idle"
        self._why = ""
        self._retry_at = 0.0
        self._failures = 0
        self._settled = asyncio.Event()
        self._process: asyncio.subprocess.Process | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)
        self._closed = False

    @property
    def status(self) -> DriverStatus:
        retry = max(0.0, self._retry_at - time.monotonic()) if self._state == "down" else None
        return DriverStatus(self._state, self._why, retry)

    async def _ready(self, timeout: float) -> asyncio.StreamWriter:
        """The joined driver's socket; DriverUnavailable at once where it is known to be down,
        or once it has not joined within ``timeout`` (capped at :data:`JOIN_WAIT`)."""
        if not self.gcs_address:
            raise DriverUnavailable(
                "the bridge knows no Ray GCS address (started with --dashboard-url only): "
                "start it with --address to read stacks on the nodes"
            )
        if self._closed:
            raise DriverUnavailable("the bridge is stopping")
        if self._keeper is None:
            self._keeper = asyncio.create_task(self._keep(), name="ray driver")
        if self._state == "down":
            raise DriverUnavailable(self._down_text())
        if self._state != "joined":
            waited = min(timeout, JOIN_WAIT)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._settled.wait(), waited)
            if self.status.state == "down":  # (it changed while this waited)
                raise DriverUnavailable(self._down_text())
            if self.status.state != "joined" or self._writer is None:
                raise DriverUnavailable(
                    f"still joining Ray at {self.gcs_address} after {waited:g} s; try again"
                )
        assert self._writer is not None
        return self._writer

    def _down_text(self) -> str:
        retry = self.status.retry_in
        again = f"; trying again in {retry:.0f} s" if retry else ""
        return f"the bridge's Ray driver is down: {self._why}{again}"

    async def _keep(self) -> None:
        """Start the driver, and start it again with backoff each time it ends."""
        while not self._closed:
            started = time.monotonic()
            try:
                await self._run_once()
            except Exception as exc:  # could not even start the child
                self._why = f"cannot start the driver process: {exc}"
            if self._closed:
                return
            if time.monotonic() - started > STEADY_AFTER:
                self._failures = 0
            delay = BACKOFF[min(self._failures, len(BACKOFF) - 1)]
            self._failures += 1
            self._state, self._retry_at = "down", time.monotonic() + delay
            self._settled.set()  # wakes the calls that waited for it to join
            log.warning("Ray driver down (%s); starting it again in %g s", self._why, delay)
            await asyncio.sleep(delay)
            self._settled = asyncio.Event()  # (nobody waits while it is down)

    async def _run_once(self) -> None:
        assert self.gcs_address is not None
        ours, theirs = socket.socketpair()
        self._state = "joining"
        try:
            self._process = await asyncio.create_subprocess_exec(
                self.python, "-m", "raydap.bridge.cluster.driver_process",
                str(theirs.fileno()), self.gcs_address,
                pass_fds=(theirs.fileno(),), stdin=asyncio.subprocess.DEVNULL,
                stdout=sys.stderr.fileno(), start_new_session=True,
            )  # fmt: skip
        finally:
            theirs.close()
        reader, self._writer = await asyncio.open_connection(sock=ours, limit=MOST_BYTES)
        try:
            await self._read(reader)
        finally:
            self._writer.close()
            self._writer = None
            code = await self._process.wait()
            self._process = None
            if self.status.state == "joined" or not self._why:
                self._why = f"its process exited ({exit_text(code)}); Ray's words are in the log"
            self._fail_pending(self._why)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        import pickle

        while True:
            try:
                header = await reader.readexactly(HEADER.size)
                (size,) = HEADER.unpack(header)
                if size > MOST_BYTES:
                    raise ValueError(f"the driver sent {size} bytes")
                message = pickle.loads(await reader.readexactly(size))  # (our own child's)
            except asyncio.IncompleteReadError:
                return
            kind = message[0]
            if kind == "joined":
                self._state, self._why = "joined", ""
                self._settled.set()
                log.info("joined Ray at %s as a driver (pid %s)", self.gcs_address,
                         self._process.pid if self._process else "?")  # fmt: skip
            elif kind == "failed":
                self._why = str(message[1])
                return
            elif kind == "done":
                _, ident, ok, value = message
                future = self._pending.pop(ident, None)
                if future is not None and not future.done():
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(RemoteFailure(str(value)))

    def _fail_pending(self, why: str) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(DriverUnavailable(f"the bridge's Ray driver ended: {why}"))

    async def start_on_node(
        self, node_id: str, function: Callable[..., Any], *args: Any, timeout: float = JOIN_WAIT
    ) -> asyncio.Future[Any]:
        """Start ``function(*args)`` there (a function of a module, shipped by value); the
        future resolves with what it returns, or fails with :class:`RemoteFailure`."""
        writer = await self._ready(timeout)
        ident = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ident] = future
        writer.write(encode(("run", ident, node_id, function.__module__, function.__name__, args)))
        future.add_done_callback(lambda done: self._cancelled(ident, done))
        return future

    def _cancelled(self, ident: int, future: asyncio.Future[Any]) -> None:
        if future.cancelled() and self._writer is not None:
            self._pending.pop(ident, None)
            self._writer.write(encode(("cancel", ident)))

    async def run_on_node(
        self, node_id: str, function: Callable[..., Any], *args: Any, timeout: float
    ) -> Any:
        """``function(*args)`` on that node; its result, or RemoteFailure saying why not."""
        started = time.monotonic()
        future = await self.start_on_node(node_id, function, *args, timeout=timeout)
        left = max(0.1, timeout - (time.monotonic() - started))
        return await asyncio.wait_for(future, left)  # cancelling it cancels the task

    async def close(self) -> None:
        """Stop the driver: its process has 3 s to leave Ray, then is killed."""
        self._closed = True
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), 3)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
        if self._keeper is not None:
            self._keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._keeper
        self._fail_pending("the bridge is stopping")


def exit_text(code: int) -> str:
    """How a child process ended, in words."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"
