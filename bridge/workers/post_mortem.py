"""Post-mortem stops: captured first, then let go unless someone debugs them.

With ``RAY_DEBUG_POST_MORTEM=1`` (what verl's docs recommend) a task that raises waits for a
debugger, and under raydap the bridge is that debugger: the failed worker, and its GPUs, would
wait until someone continued it. So the bridge captures the stop as soon as it holds it (the
traceback's frames and locals and the exception, :func:`raydap.live.captures.capture_exception`
run by the stop's own ``evaluate``), and once nobody has been attached to the stop or followed
its job for ``hold`` seconds it continues the worker: the task fails exactly as it would with no
debugger, and the capture keeps the failure debuggable (``raydap attach cap-...``).
"""

from __future__ import annotations

import asyncio
import logging
import time

from raydap.adapter import State, Upstream, UpstreamError
from raydap.bridge.workers.group_timeouts import Follows
from raydap.bridge.workers.holder import Holder

log = logging.getLogger(__name__)

#: What the stop evaluates to capture itself (in the worker, on the stopped thread).
CAPTURE_CALL = "__import__('raydap.live.captures', fromlist=['_']).capture_exception()"
#: How often a held post-mortem stop is looked at.
CHECK_EVERY = 1.0
#: How long a stop is kept at most for its record to learn its job (its capture's name).
NAMED_WITHIN = 5.0


class PostMortems:
    def __init__(self, holder: Holder, follows: Follows, *, hold: float = 600.0) -> None:
        self.holder = holder
        self.follows = follows
        self.hold = hold
        #: Each post-mortem stop being handled, by worker: the stop's event, and its task.
        self._handling: dict[str, tuple[object, asyncio.Task[None]]] = {}
        #: How many post-mortem stops were let go after their capture.
        self.released = 0

    def changed(self, rid: str, upstream: Upstream) -> None:
        """A held worker changed: a new post-mortem stop is captured, then watched."""
        record = self.holder.registry.get(rid)
        stop = upstream.stops.top()
        if record is None or record.kind != "exception" or stop is None:
            return
        if upstream.state is not State.STOPPED or self._handling.get(rid, (None,))[0] is stop:
            return
        task = asyncio.create_task(self._handle(rid, upstream, stop))
        self._handling[rid] = (stop, task)
        task.add_done_callback(lambda _: self._handling.pop(rid, None))

    async def _handle(self, rid: str, upstream: Upstream, stop: object) -> None:
        captured = await self._capture(rid, upstream)
        await self._named(rid)
        since = time.monotonic()
        while upstream.state is State.STOPPED and upstream.stops.top() is stop:
            if self._debugged(rid, upstream):
                since = time.monotonic()  # the hold counts from when nobody looks
            elif time.monotonic() - since >= self.hold:
                await self._let_go(rid, captured)
                return
            await asyncio.sleep(min(CHECK_EVERY, max(0.05, self.hold)))

    def _debugged(self, rid: str, upstream: Upstream) -> bool:
        record = self.holder.registry.get(rid)
        return upstream.debugged or (
            record is not None and any(f.matches(record) for f in self.follows.filters())
        )

    async def _named(self, rid: str) -> None:
        """Until the worker's record names its job (about a second after it is held), or
        ``NAMED_WITHIN``: its capture is named from the record, never from what the worker
        says, so a stop let go at once must not leave before its record knows its job."""
        deadline = time.monotonic() + NAMED_WITHIN
        while time.monotonic() < deadline:
            record = self.holder.registry.get(rid)
            if record is None or record.job_id is not None:
                return
            await asyncio.sleep(0.1)

    async def _capture(self, rid: str, upstream: Upstream) -> bool:
        """Whether the stop was captured: it needs raydap where the worker runs."""
        try:
            _, frames = await upstream.stack(levels=1)
            response = await upstream.request(
                "evaluate", {"expression": CAPTURE_CALL, "frameId": frames[0]["id"],
                             "context": "repl"},
            )  # fmt: skip
        except (UpstreamError, IndexError, KeyError) as exc:
            log.warning("%s: its post-mortem stop was not captured: %s", rid, exc)
            return False
        said = (response.body or {}).get("result") if response.success else response.message
        if said != "'captured'":
            log.warning("%s: its post-mortem stop was not captured (is raydap installed where "
                        "the worker runs?): %s", rid, said)  # fmt: skip
            return False
        return True

    async def _let_go(self, rid: str, captured: bool) -> None:
        what = "captured and let go" if captured else "let go, not captured"
        log.info("%s: post-mortem stop %s (nobody debugged it for %g s): its task fails as it "
                 "would without a debugger", rid, what, self.hold)  # fmt: skip
        try:
            await self.holder.resume(rid)
            self.released += 1
        except Exception as exc:  # it left meanwhile, or refused: nothing else to do
            log.info("%s: could not let its post-mortem stop go: %s", rid, exc)

    async def close(self) -> None:
        for _, task in list(self._handling.values()):
            task.cancel()
