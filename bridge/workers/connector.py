"""Opens a worker's debugpy connection, or takes one an earlier bridge held, and wires it.

The holder (:mod:`.holder`) decides which worker to hold and what holding it means; this
module only makes the connection and gives it what every held worker's connection is given:
the capture settings, a gate for a live worker's stops, and the holder's listeners, passed
in as callables so nothing here names the holder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from raydap.adapter import Carried, Channel, Upstream, UpstreamError, open_tcp_channel
from raydap.adapter.upstream.breakpoints import Gate
from raydap.bridge.workers.records import BreakpointRecord


class PortRefused(UpstreamError):
    """The worker's debug port refuses connections: its debugpy adapter has exited."""


class Connector:
    """Makes held workers' connections. ``on_change(record id, upstream)`` hears every change
    of one; ``on_child(record id, pid)`` every child process its debugpy adapter names."""

    def __init__(
        self,
        *,
        on_change: Callable[[str, Upstream], None],
        on_child: Callable[[str, int], None],
        handshake_timeout: float = 10.0,
        request_timeout: float = 30.0,
        observe_request: Callable[[str, float, bool], None] | None = None,
    ) -> None:
        self._on_change = on_change
        self._on_child = on_child
        self.handshake_timeout = handshake_timeout
        self.request_timeout = request_timeout
        self._observe_request = observe_request
        #: What each capture point given to a worker carries (the bridge's ``--redact``).
        self.capture_settings: dict[str, Any] = {}
        #: Told of each capture event a worker sends: ``(record id, body)`` (:mod:`.captures`).
        self.on_capture: Callable[[str, object], None] | None = None
        #: The gate of each live worker held: what a stop of it passes first
        #: (:mod:`.collective_gate`; None: stops go through at once).
        self.gate_for: Callable[[str], Gate] | None = None

    async def connect(
        self,
        record: BreakpointRecord,
        *,
        stops_in_ray_hook: bool | None = None,
        configure: Callable[[Upstream], Awaitable[None]] | None = None,
    ) -> Upstream:
        """Connect to the worker's debugpy and finish the handshake, or raise UpstreamError
        saying what a person can do about it. ``stops_in_ray_hook``: what the worker's Python
        says of its ``breakpoint()`` stops, where known; ``configure``: what a live worker is
        given before its configuration is done (its job's kept breakpoints)."""
        assert record.debugger_port is not None
        try:
            channel = await open_tcp_channel(record.node_ip, record.debugger_port)
        except ConnectionRefusedError:
            raise PortRefused(
                f"its debugpy port {record.debugger_port} refuses connections: debugpy's "
                "adapter has exited, so no debugger can attach and the worker waits "
                "forever; restart the worker or its job"
            ) from None
        except (OSError, asyncio.TimeoutError) as exc:
            raise UpstreamError(f"cannot connect to its debugpy: {exc!r}") from None
        child_pid = record.pid if record.parent is not None else None
        options = self._options(record)
        upstream = Upstream(channel, name=record.label, child_pid=child_pid, **options)
        upstream.stops_in_ray_hook = stops_in_ray_hook
        # Before the handshake: debugpy names waiting children as soon as it is done, a live
        # worker is given its job's kept breakpoints during it, and its restored capture
        # points fire at once.
        self._wire(record, upstream)
        try:
            await upstream.handshake(
                timeout=self.handshake_timeout,
                expect_stop=not record.live,
                configure=(lambda: configure(upstream)) if configure else None,
            )
        except asyncio.TimeoutError:
            await upstream.close("handshake failed")
            raise UpstreamError(
                f"its debugpy did not finish the handshake within {self.handshake_timeout:g} s"
                " (another debugger, or another raydap bridge, may be attached to it)"
            ) from None
        except BaseException:
            await upstream.close("handshake failed")
            raise
        return upstream

    def adopt(self, record: BreakpointRecord, channel: Channel, carried: Carried) -> Upstream:
        """The connection an earlier bridge held to this worker, as it stood there (not yet
        reading: the holder starts it once it hands it out)."""
        upstream = Upstream.adopt(channel, carried, name=record.label, **self._options(record))
        self._wire(record, upstream)
        return upstream

    def _wire(self, record: BreakpointRecord, upstream: Upstream) -> None:
        """What every held worker's connection is given, new or adopted (an adopted worker's
        capture points capture on into this bridge)."""
        upstream.breakpoints.capture_settings = self.capture_settings
        upstream.news.on_child = lambda pid: self._on_child(record.id, pid)
        if (on_capture := self.on_capture) is not None:
            upstream.news.on_capture = lambda body: on_capture(record.id, body)
        if record.live and self.gate_for is not None:
            upstream.gate = self.gate_for(record.id)

    def _options(self, record: BreakpointRecord) -> dict[str, Any]:
        return {
            "request_timeout": self.request_timeout,
            "on_change": lambda upstream: self._on_change(record.id, upstream),
            "observe": self._observe_request,
        }
