"""A worker's connection handed to another bridge process between two messages
(``raydap serve --replace``, :mod:`raydap.bridge.server.handover`): what is lent, and how the
other process adopts it, standing where it stood. Done to an :class:`~.connection.Upstream`
through what it offers for it (:class:`Handed`), never through its insides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from raydap.adapter.channel import Channel, StreamChannel
from raydap.adapter.errors import Kind, UpstreamClosed, UpstreamError
from raydap.adapter.upstream.life import Happening, Life, State
from raydap.adapter.upstream.stops import Stops
from raydap.protocol import Event, parse_message


class Handed(Protocol):
    """What a hand-over needs of a worker's connection (:class:`~.connection.Upstream`)."""

    name: str
    channel: Channel
    capabilities: dict[str, Any]
    stops: Stops
    process_event: Event | None
    stops_in_ray_hook: bool | None
    child_pid: int | None
    close_reason: str

    @property
    def life(self) -> Life: ...

    @property
    def state(self) -> State: ...

    @property
    def quiet(self) -> bool: ...

    @property
    def reading(self) -> bool: ...

    def happen(self, happening: Happening) -> None: ...

    def stand(self) -> None:
        """The handshake's waits are over: it stands attached, where it stopped."""
        ...

    def start(self) -> None: ...

    async def stop_reading(self) -> None: ...

    async def close(self, reason: str) -> None: ...


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


def stand_as_carried(upstream: Handed, carried: Carried) -> None:
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
    upstream.stand()


async def lend(upstream: Handed) -> tuple[int, Carried]:
    """Stop reading, between two messages, and give the socket's descriptor and the state
    another process needs to go on (:func:`adopt`). Requests fail while it is lent. Raises
    UpstreamError if something is under way, or for a connection that cannot be lent."""
    if upstream.life is Life.CLOSED:
        raise UpstreamClosed(f"worker {upstream.name} is gone ({upstream.close_reason})")
    if (
        not isinstance(upstream.channel, StreamChannel)
        or not upstream.reading
        or upstream.life is not Life.ATTACHED
    ):
        raise UpstreamError(f"{upstream.name}: its connection cannot be handed over")
    if not upstream.quiet:
        raise UpstreamError(
            f"{upstream.name} is busy (a request or a stop is under way)", Kind.UNAVAILABLE
        )
    upstream.happen(Happening.LEND)
    await upstream.stop_reading()
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


def take_back(upstream: Handed) -> None:
    """The hand-over failed: read again from where :func:`lend` stopped."""
    if upstream.life is Life.LENT and isinstance(upstream.channel, StreamChannel):
        upstream.happen(Happening.TAKE_BACK)
        upstream.channel.take_back()
        upstream.start()


async def abandon(upstream: Handed, reason: str) -> None:
    """The hand-over succeeded: close this process's end of the socket, which the other
    process holds as well, so the worker sees no disconnect and stays where it is (it reads
    no more since :func:`lend`)."""
    await upstream.close(reason)
