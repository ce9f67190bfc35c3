"""Telling systemd (``Type=notify``) about the bridge: ready, and which process is the
service once a replace moved it (``MAINPID``), so a reload keeps the new process supervised.

The protocol is one datagram to ``$NOTIFY_SOCKET`` (``sd_notify(3)``); outside systemd the
variable is unset and nothing is sent.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


def notify(**fields: object) -> bool:
    """Send ``KEY=value`` lines to the service manager; True if one listens."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket
        address = "\0" + address[1:]
    message = "\n".join(f"{key}={value}" for key, value in fields.items()).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.connect(address)
            sock.sendall(message)
    except OSError as exc:
        log.warning("cannot tell the service manager %s: %s", sorted(fields), exc)
        return False
    return True


def ready() -> None:
    notify(READY=1, STATUS="serving")


def main_pid_moved(pid: int) -> None:
    """A new bridge process took over: it is the service's main process from now on (the
    unit needs ``NotifyAccess=all`` for the new process's own messages)."""
    notify(MAINPID=pid, STATUS=f"handed over to pid {pid}")
