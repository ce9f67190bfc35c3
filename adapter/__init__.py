"""DAP session logic: one upstream connection per worker, any number of client sessions."""

from raydap.adapter.channel import Channel, StreamChannel, adopt_tcp_channel, open_tcp_channel
from raydap.adapter.errors import UpstreamClosed, UpstreamError
from raydap.adapter.sessions.capabilities import bridge_capabilities
from raydap.adapter.sessions.mux import WorkerMux
from raydap.adapter.sessions.phases import Phase
from raydap.adapter.sessions.session import AttachError, ClientSession
from raydap.adapter.sessions.workers import SingleWorker, Worker, WorkerFeed
from raydap.adapter.upstream.connection import Upstream
from raydap.adapter.upstream.handover import Carried
from raydap.adapter.upstream.life import State

__all__ = [
    "AttachError",
    "Carried",
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
    "adopt_tcp_channel",
    "bridge_capabilities",
    "open_tcp_channel",
]
