"""Ports for processes raydap starts that bind them later (a Ray head, a bridge under test).

A port the kernel hands out for ``bind(("", 0))`` comes from its ephemeral range, which every
outgoing connection on the machine draws from too, so between picking one and the child binding
it a connection can take it (a CI run lost a Ray head so: "Failed to start the grpc server. The
specified port is 36699", while a second test lane ran its own Ray). Ports here come from
between Ray's worker ports (10002-19999 by default) and the ephemeral range, where only explicit
binds go; each is checked free and reserved for :data:`RESERVED_FOR` seconds in a file that
every process picking at once (two test lanes) reads and writes under one lock, so no two of
them are handed the same port before its owner binds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

#: The lowest port handed out: above Ray's default worker ports (``--max-worker-port`` 19999).
LOWEST = 20000
#: How long a port handed out stays out of the draw: time enough for its owner to bind it.
RESERVED_FOR = 120.0
#: The reservations shared by every process of this user on the machine.
LEDGER = Path(tempfile.gettempdir()) / f"raydap-ports-{os.getuid()}.json"


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for ports it picks itself (Linux; the usual default elsewhere)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports free on ``host`` now and handed to nobody else for a while."""
    low, high = LOWEST, ephemeral_range()[0] - 1
    if count <= 0:
        return []
    if high - low < 1000:  # a kernel that lends nearly every port: take its pick instead
        return [_kernel_pick(host) for _ in range(count)]
    picked: list[int] = []
    with _ledger() as reserved:
        now = time.time()
        for port in list(reserved):
            if reserved[port] < now:
                del reserved[port]
        for _ in range(100 * count):
            port = random.randint(low, high)
            if port not in reserved and port not in picked and _bindable(host, port):
                picked.append(port)
                if len(picked) == count:
                    break
        else:
            raise OSError(f"no {count} free ports found between {low} and {high} on {host}")
        reserved.update({port: now + RESERVED_FOR for port in picked})
    return picked


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def _bindable(host: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _kernel_pick(host: str) -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _ledger() -> Iterator[dict[int, float]]:
    """The reservations, read and written back under an exclusive lock on the ledger."""
    with open(LEDGER.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            try:
                reserved = {int(port): float(until) for port, until in
                            json.loads(LEDGER.read_text()).items()}  # fmt: skip
            except (OSError, ValueError, AttributeError):
                reserved = {}
            yield reserved
            LEDGER.write_text(json.dumps(reserved))
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
