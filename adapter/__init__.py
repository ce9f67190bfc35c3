"""DAP session logic: one upstream connection per worker, any number of client sessions."""

from adapter.capabilities import bridge_capabilities
from adapter.channel import Channel, StreamChannel, open_tcp_channel
from adapter.session import AttachError, ClientSession, Phase
from adapter.upstream import State, Upstream, UpstreamClosed, UpstreamError

__all__ = [
    "AttachError",
    "Channel",
    "ClientSession",
    "Phase",
    "State",
    "StreamChannel",
    "Upstream",
    "UpstreamClosed",
    "UpstreamError",
    "bridge_capabilities",
    "open_tcp_channel",
]
