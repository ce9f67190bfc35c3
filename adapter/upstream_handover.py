"""A worker's connection handed to another bridge process between two messages
(``raydap serve --replace``, :mod:`raydap.bridge.server.handover`): what is lent, and how the
other process adopts it, standing where it stood. A part of :class:`~.upstream.Upstream`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from raydap.adapter.channel import StreamChannel
from raydap.adapter.errors import Kind, UpstreamClosed, UpstreamError
from raydap.adapter.upstream_life import Happening, Life, State
from raydap.protocol import Event, parse_message

if TYPE_CHECKING:
    from raydap.adapter.upstream import Upstream


@dataclass(frozen=True)
class Carried:
    """What another bridge process needs to go on with a worker's connection it is handed
    (``raydap serve --replace``): the worker's debugpy state, as plain values."""

    capabilities: dict[str, Any]
    #: The ``stopped`` events in force, oldest first, in their wire form.
    stops: list[dict[str, Any]]
    process_event: dict[str, Any] | None
    stops_in_ray_hook: bool | None
    child_pid: int | None
    #: Bytes the worker sent that no message was made of yet.
    unread: bytes


def stand_as_carried(upstream: Upstream, carried: Carried) -> Upstream:
    """A new upstream on a connection another bridge process held (:func:`lend`), attached
    and standing where it stood there."""
    upstream.capabilities = dict(carried.capabilities)
    for wire in carried.stops:
        stop = parse_message(wire)
        if isinstance(stop, Event):
            upstream.stops.stopped(stop)
    if carried.process_event is not None:
        process = parse_message(carried.process_event)
        upstream.process_event = process if isinstance(process, Event) else None
    upstream.stops_in_ray_hook = carried.stops_in_ray_hook
    upstream._happen(Happening.ATTACHED)
    upstream._initialized.set()
    upstream._first_stop.set()
    return upstream


async def lend(upstream: Upstream) -> tuple[int, Carried]:
    """Stop reading, between two messages, and give the socket's descriptor and the state
    another process needs to go on (:func:`adopt`). Requests fail while it is lent. Raises
    UpstreamError if something is under way, or for a connection that cannot be lent."""
    if upstream.life is Life.CLOSED:
        raise UpstreamClosed(f"worker {upstream.name} is gone ({upstream.close_reason})")
    if (
        not isinstance(upstream.channel, StreamChannel)
        or upstream._reader is None
        or upstream.life is not Life.ATTACHED
    ):
        raise UpstreamError(f"{upstream.name}: its connection cannot be handed over")
    if not upstream.quiet:
        raise UpstreamError(
            f"{upstream.name} is busy (a request or a stop is under way)", Kind.UNAVAILABLE
        )
    upstream._happen(Happening.LEND)
    upstream._reader.cancel()
    await asyncio.gather(upstream._reader, return_exceptions=True)
    if upstream.state is State.CLOSED:  # closed while its reader stopped
        raise UpstreamClosed(f"worker {upstream.name} is gone ({upstream.close_reason})")
    descriptor, unread = upstream.channel.lend()
    return descriptor, Carried(
        capabilities=dict(upstream.capabilities),
        stops=[stop.to_dict() for stop in upstream.stops.values()],
        process_event=upstream.process_event.to_dict() if upstream.process_event else None,
        stops_in_ray_hook=upstream.stops_in_ray_hook,
        child_pid=upstream.child_pid,
        unread=unread,
    )


def take_back(upstream: Upstream) -> None:
    """The hand-over failed: read again from where :func:`lend` stopped."""
    if upstream.life is Life.LENT and isinstance(upstream.channel, StreamChannel):
        upstream._happen(Happening.TAKE_BACK)
        upstream.channel.take_back()
        upstream.start()


async def abandon(upstream: Upstream, reason: str) -> None:
    """The hand-over succeeded: close this process's end of the socket, which the other
    process holds as well, so the worker sees no disconnect and stays where it is."""
    await upstream.channel.close()
    upstream._closed(reason)
