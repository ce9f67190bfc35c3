"""DAP session logic: one upstream connection per worker, any number of client sessions."""

from raydap.adapter.capabilities import bridge_capabilities
from raydap.adapter.channel import Channel, StreamChannel, adopt_tcp_channel, open_tcp_channel
from raydap.adapter.errors import UpstreamClosed, UpstreamError
from raydap.adapter.mux import WorkerMux
from raydap.adapter.phases import Phase
from raydap.adapter.session import AttachError, ClientSession
from raydap.adapter.session_workers import SingleWorker, Worker, WorkerFeed
from raydap.adapter.upstream import Upstream
from raydap.adapter.upstream_handover import Carried
from raydap.adapter.upstream_life import State

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
