"""Ports handed to processes that bind them later: outside the kernel's own range, free, and
never handed twice while reserved, even to processes picking at the same moment (a CI run lost a
Ray head to a port taken between its pick and its bind)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raydap.bridge.client import ports

#: Picks 40 ports at once in a child, through the ledger named on its command line.
PICK = (
    "import sys; from pathlib import Path; from raydap.bridge.client import ports; "
    "ports.LEDGER = Path(sys.argv[1]); print(*ports.free_ports(40))"
)


@pytest.fixture(autouse=True)
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(ports, "LEDGER", tmp_path / "ports.json")
    return tmp_path / "ports.json"


def test_ports_are_free_and_outside_the_kernels_range() -> None:
    picked = ports.free_ports(20)

    assert len(set(picked)) == 20
    low, _ = ports.ephemeral_range()
    assert all(ports.LOWEST <= port < low for port in picked)
    for port in picked:
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))  # raises if it was not free


def test_processes_picking_at_once_never_share_a_port(ledger: Path) -> None:
    command = [sys.executable, "-c", PICK, str(ledger)]
    children = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    picks = [child.communicate(timeout=60)[0].split() for child in children]

    every = [port for pick in picks for port in pick]
    assert len(every) == 160 and len(set(every)) == 160


def test_a_port_in_use_is_never_handed_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first port drawn is one this test holds, the second one it just let go (each the
    first of the range that could be bound: other tests' processes hold ports of it too)."""
    with socket.socket() as taken:
        held = _bind_first(taken, ports.LOWEST)
        taken.listen()
        with socket.socket() as probe:
            free = _bind_first(probe, held + 1)
        draws = iter([held, free])
        monkeypatch.setattr(ports.random, "randint", lambda low, high: next(draws))

        assert ports.free_ports(1) == [free]


def _bind_first(sock: socket.socket, start: int) -> int:
    for port in range(start, ports.ephemeral_range()[0]):
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            continue
        return port
    raise AssertionError(f"no port from {start} could be bound")


def test_a_reservation_ends_and_a_broken_ledger_is_started_afresh(
    ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger.write_text("not json")
    first = ports.free_ports(1)[0]
    assert list(json.loads(ledger.read_text())) == [str(first)]

    monkeypatch.setattr(ports.random, "randint", lambda low, high: first)
    with pytest.raises(OSError, match="no 1 free ports"):  # reserved: drawn, and refused
        ports.free_ports(1)

    ledger.write_text(json.dumps({str(first): time.time() - 1}))  # its reservation ran out
    assert ports.free_ports(1) == [first]
