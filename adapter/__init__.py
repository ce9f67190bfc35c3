"""DAP session logic: one upstream connection per worker, any number of client sessions."""

from raydap.adapter.capabilities import bridge_capabilities
from raydap.adapter.channel import Channel, StreamChannel, open_tcp_channel
from raydap.adapter.mux import SingleWorker, Worker, WorkerFeed, WorkerMux
from raydap.adapter.phases import Phase
from raydap.adapter.session import AttachError, ClientSession
from raydap.adapter.upstream import State, Upstream, UpstreamClosed, UpstreamError

__all__ = [
    "AttachError",
    "Channel",
    "ClientSession",
    "Phase",
    "SingleWorker",
    "State",
    "StreamChannel",
    "Upstream",
    "UpstreamClosed",
    "UpstreamError",
    "Worker",
    "WorkerFeed",
    "WorkerMux",
    "bridge_capabilities",
    "open_tcp_channel",
]
