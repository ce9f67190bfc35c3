"""Events from a live worker to the bridge, on the debug connection the bridge holds.

pydevd's writer thread sends what is queued to debugpy's adapter, which relays an event it does
not know to its client: the bridge. Queuing is safe from any thread and never blocks; with no
client connected (the bridge is being replaced) there is no writer and the event is dropped.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()


def send_event(event: str, body: dict[str, Any]) -> bool:
    """Queue ``event`` for the bridge; False when no debugger client is connected."""
    import pydevd  # type: ignore[import-not-found]
    from _pydevd_bundle.pydevd_comm_constants import CMD_RETURN  # type: ignore[import-not-found]
    from _pydevd_bundle.pydevd_net_command import NetCommand  # type: ignore[import-not-found]

    writer = getattr(pydevd.get_global_debugger(), "writer", None)
    if writer is None:
        return False
    with _lock:
        message = {"type": "event", "event": event, "body": body}
        writer.add_command(NetCommand(CMD_RETURN, 0, message, is_json=True))
    return True
