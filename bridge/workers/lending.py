"""The holder's side of a hand-over: its workers lent to a new bridge, taken back, or left
to it (the new bridge's side is :mod:`raydap.bridge.server.handover`).

While workers are lent none is handed out; :attr:`Lending.why` says why to whoever asks.
The holder is reached through :class:`Held`, the little of it a hand-over changes.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from raydap.adapter import Carried, State, Upstream, UpstreamError
from raydap.adapter.upstream import handover
from raydap.bridge.workers.holds import Hold, Holds, Step
from raydap.bridge.workers.records import BreakpointRecord
from raydap.bridge.workers.registry import Registry


class Held(Protocol):
    """The workers a holder holds, and how it stops holding one quietly."""

    @property
    def registry(self) -> Registry: ...

    @property
    def holds(self) -> Holds: ...

    @property
    def upstreams(self) -> dict[str, Upstream]: ...

    def forget(self, rid: str) -> Upstream | None:
        """Stop holding a worker without the side effects of its leaving."""
        ...


class Lending:
    """Every held worker lent at once, taken back or left: a hand-over is all or nothing."""

    def __init__(self, held: Held) -> None:
        self._held = held
        #: Why no worker is handed out: set while the workers are lent to a new bridge (each
        #: worker's phase is in the holder's holds).
        self.why = ""

    async def lend_all(
        self, why: str, *, within: float = 10.0
    ) -> list[tuple[BreakpointRecord, int, Carried]]:
        """Stop handing workers out, wait until nothing is under way with any of them, and
        lend every connection (record, socket descriptor, state); raises UpstreamError, with
        every connection taken back, if that cannot be done within ``within`` seconds."""
        self.why = why
        held = self._held
        lent: list[tuple[BreakpointRecord, int, Carried]] = []
        try:
            deadline = time.monotonic() + within
            while held.holds.in_phase(Hold.HOLDING) or not all(
                u.quiet for u in held.upstreams.values()
            ):
                if time.monotonic() > deadline:
                    busy = [rid for rid, u in held.upstreams.items() if not u.quiet]
                    raise UpstreamError(
                        f"workers still busy after {within:g} s: "
                        f"{', '.join(busy + held.holds.in_phase(Hold.HOLDING))}"
                    )
                await asyncio.sleep(0.02)
            for rid, upstream in list(held.upstreams.items()):
                record = held.registry.get(rid)
                if record is None or upstream.state is State.CLOSED:
                    continue
                descriptor, carried = await handover.lend(upstream)
                held.holds.step(rid, Step.LENT)
                lent.append((record, descriptor, carried))
        except BaseException:
            self.take_back_all()
            raise
        return lent

    def take_back_all(self) -> None:
        """The hand-over failed: read every lent connection again and hand workers out."""
        held = self._held
        for rid, upstream in list(held.upstreams.items()):
            handover.take_back(upstream)
            if held.holds.of(rid) is Hold.LENT:
                held.holds.step(rid, Step.TAKEN_BACK)
        self.why = ""

    async def abandon_all(self, why: str) -> None:
        """The new bridge holds every connection now: close ours, which it keeps open, and
        forget them without the side effects of a worker leaving."""
        for rid in list(self._held.upstreams):
            if (upstream := self._held.forget(rid)) is not None:
                await handover.abandon(upstream, why)
