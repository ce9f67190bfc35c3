"""A worker's connection lent to another bridge process and adopted there (``raydap serve
--replace``): nothing the worker sent is lost or read twice, and its stop stands as it was.

Both ends live in this process: the descriptor is duplicated as ``SCM_RIGHTS`` would
(tests/e2e/test_replace.py passes it between real processes)."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable

import pytest

from raydap.adapter import State, StreamChannel, Upstream, UpstreamError, adopt_tcp_channel
from raydap.adapter.upstream import handover
from raydap.protocol import Event, encode, event
from tests.unit.adapter.peer import held_peer
from tests.waiting import until


class Listener:
    debugs = True

    """A client session of an upstream, keeping what it is told."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def upstream_event(self, upstream: Upstream, message: Event) -> None:
        self.events.append(message)

    def upstream_closed(self, upstream: Upstream, reason: str) -> None:
        pass


async def hand_over(upstream: Upstream, while_lent: Callable[[], None] = lambda: None) -> Upstream:
    """Lend ``upstream``'s connection and adopt it, as the new process does; ``while_lent``
    runs between the two (the worker may send then)."""
    await until(lambda: upstream.quiet, what="the stop's prefetch done")
    descriptor, carried = await handover.lend(upstream)
    while_lent()
    sock = socket.socket(fileno=os.dup(descriptor))
    channel = await adopt_tcp_channel(sock, carried.unread, peer="peer")
    adopted = Upstream.adopt(channel, carried, name="peer")
    await handover.abandon(upstream, "handed over")
    return adopted


def output(text: str) -> Event:
    return event("output", {"category": "console", "output": text})


async def test_an_adopted_connection_stands_at_the_same_stop_and_reads_on() -> None:
    async with held_peer() as (peer, upstream):
        stop = upstream.stops.top()
        adopted = await hand_over(upstream, lambda: peer.write(output("during")))
        listener = Listener()
        adopted.audience.add(listener)
        adopted.start()
        assert adopted.state is State.STOPPED
        assert adopted.stops.top() == stop
        peer.write(output("after"))
        await until(lambda: len(listener.events) >= 2, what="events sent during and after")
        assert [e.body["output"] for e in listener.events] == ["during", "after"]
        _, frames = await adopted.stack()
        assert frames[0]["name"] == "train_step"
        assert peer.disconnect_answered is None  # the worker saw no detach
        await adopted.close("test over")


async def test_a_message_cut_by_the_hand_over_arrives_whole_once() -> None:
    async with held_peer() as (peer, upstream):
        channel = upstream.channel
        assert isinstance(channel, StreamChannel)
        wire = encode(output("cut in two"), 99)
        await until(lambda: upstream.quiet, what="the stop's prefetch done")
        peer._writers[-1].write(wire[:30])
        await until(lambda: channel._decoder.buffered, what="the first half read")
        adopted = await hand_over(upstream)
        listener = Listener()
        adopted.audience.add(listener)
        adopted.start()
        peer._writers[-1].write(wire[30:])
        peer.write(output("next"))
        await until(lambda: len(listener.events) >= 2, what="both events")
        assert [e.body["output"] for e in listener.events] == ["cut in two", "next"]
        await adopted.close("test over")


async def test_a_hand_over_that_fails_gives_the_connection_back() -> None:
    async with held_peer() as (peer, upstream):
        listener = Listener()
        upstream.audience.add(listener)
        await until(lambda: upstream.quiet, what="the stop's prefetch done")
        await handover.lend(upstream)
        with pytest.raises(UpstreamError, match="handed to a new bridge"):
            await upstream.request("evaluate", {"expression": "1"})
        peer.write(output("while lent"))
        handover.take_back(upstream)
        await until(lambda: listener.events, what="the event sent while lent")
        assert listener.events[0].body["output"] == "while lent"
        assert (await upstream.request("evaluate", {"expression": "1"})).success
        assert upstream.state is State.STOPPED


async def test_a_busy_connection_is_not_lent() -> None:
    async with held_peer() as (peer, upstream):
        await until(lambda: upstream.quiet, what="the stop's prefetch done")
        peer.holding["evaluate"] = asyncio.Event()
        asking = asyncio.ensure_future(upstream.request("evaluate", {"expression": "1"}))
        await until(lambda: "evaluate" in peer.received, what="the request at the worker")
        assert not upstream.quiet
        with pytest.raises(UpstreamError, match="busy"):
            await handover.lend(upstream)
        peer.holding["evaluate"].set()
        assert (await asking).success
        assert upstream.quiet
