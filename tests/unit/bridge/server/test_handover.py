"""The hand-over conversation between a running bridge and the one replacing it, over a real
Unix socket with real descriptors (the bridges around it: tests/e2e/test_replace.py)."""

from __future__ import annotations

import asyncio
import os
import socket
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from raydap.bridge.server import handover
from tests.waiting import until


class Running:
    """The running bridge's side: lends one listening socket, and says what happened."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.taken: list[int] = []
        self.kept: list[str] = []
        self.refuse = ""

    async def lend(self, pid: int) -> handover.Lent:
        if self.refuse:
            raise handover.HandoverError(self.refuse)
        offer = handover.Offer(
            version=handover.VERSION, pid=os.getpid(), http=0, dap=0, workers=[], descriptors=1
        )
        return handover.Lent(offer, [self.listener.fileno()])

    async def on_taken(self, pid: int) -> None:
        self.taken.append(pid)

    async def on_kept(self, why: str) -> None:
        self.kept.append(why)


@pytest.fixture
async def running() -> AsyncIterator[tuple[Running, Path]]:
    with tempfile.TemporaryDirectory(prefix="raydap-handover-") as directory:
        bridge = Running()
        path = handover.socket_path(Path(directory), os.getpid())
        giver = handover.Giver(path, bridge.lend, bridge.on_taken, bridge.on_kept)
        giver.start()
        yield bridge, path
        await giver.close()
        bridge.listener.close()


async def test_the_new_bridge_gets_the_listening_socket_and_the_old_one_lets_go(
    running: tuple[Running, Path],
) -> None:
    bridge, path = running
    assert path.stat().st_mode & 0o777 == 0o600
    received = await asyncio.to_thread(handover.take, path)
    [sock] = received.sockets
    assert sock.getsockname() == bridge.listener.getsockname()  # the same socket, not a copy
    await asyncio.to_thread(received.acknowledge)
    await until(lambda: bridge.taken, what="the old bridge told it was taken over")
    assert bridge.taken == [os.getpid()] and not bridge.kept
    sock.close()


async def test_a_new_bridge_that_goes_away_leaves_the_old_one_with_everything(
    running: tuple[Running, Path],
) -> None:
    bridge, path = running
    received = await asyncio.to_thread(handover.take, path)
    received.close()  # as if the new process died before it served
    await until(lambda: bridge.kept, what="the old bridge taking everything back")
    assert "did not take over" in bridge.kept[0] and not bridge.taken
    with socket.create_connection(bridge.listener.getsockname()):
        pass  # the old listener still accepts
    again = await asyncio.to_thread(handover.take, path)  # and it can hand over later
    again.close()


async def test_a_bridge_that_cannot_hand_over_says_why(running: tuple[Running, Path]) -> None:
    bridge, path = running
    bridge.refuse = "workers still busy after 10 s: a1b2c3"
    with pytest.raises(handover.HandoverError, match="still busy"):
        await asyncio.to_thread(handover.take, path)
    assert not bridge.taken and not bridge.kept


async def test_an_unknown_version_is_refused(
    running: tuple[Running, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, path = running
    monkeypatch.setattr(handover, "SPOKEN", (handover.VERSION + 1, handover.VERSION + 2))
    with pytest.raises(handover.HandoverError, match="hands over in version"):
        await asyncio.to_thread(handover.take, path)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to connect as another user")
async def test_another_user_is_refused_even_where_the_socket_lets_it_in(
    running: tuple[Running, Path],
) -> None:
    bridge, path = running
    path.parent.chmod(0o755)  # a mistake the peer-credential check still covers
    path.chmod(0o666)
    hello = handover.Hello(versions=handover.SPOKEN, pid=0).model_dump_json().encode()
    child = os.fork()
    if child == 0:  # as user nobody: connect, ask, and expect the connection closed unanswered
        try:
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(10)
                sock.connect(str(path))
                sock.sendall(len(hello).to_bytes(4, "big") + hello)
                os._exit(0 if sock.recv(1) == b"" else 1)
        except (BrokenPipeError, ConnectionResetError):  # closed before or after it asked
            os._exit(0)
        except BaseException:
            os._exit(2)
    _, status = await asyncio.to_thread(os.waitpid, child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert not bridge.taken and not bridge.kept
