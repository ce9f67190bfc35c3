"""``raydap serve --replace``: a new bridge process takes over from the running one, with its
listening sockets and every worker's debugpy connection, so no paused worker is let go.

A worker's stop lives in its debugpy connection: debugpy resumes the worker when that
connection closes. So the connections are not drained, as Envoy or HAProxy drain theirs on a
reload; they are passed, open, to the new process (``SCM_RIGHTS``) with what it needs to go on.
The running bridge listens on a Unix socket beside its connection file (owner-only, in an
owner-only directory), and talks only to a process of its own user (``SO_PEERCRED``):

    new -> old   Hello      the hand-over versions it speaks, its pid
    old -> new   Offer      the workers' records and state, and how many descriptors follow
                 (or Refusal: why it cannot hand over; it serves on)
    old -> new   descriptors, in batches: the HTTP and DAP listeners, then one per worker
    new -> old   Taken      the new bridge serves: the old one lets go and exits

If the new process says anything else, exits, or is silent for ``TAKE_WITHIN`` seconds, the old
one reads its workers again and serves on. Client connections are not passed (TLS sessions cannot
be): each client is sent what it needs to resume its session on the new process
(:mod:`raydap.adapter.resume`), and raydap's own clients do so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from raydap.adapter import Carried
from raydap.bridge.hangs.verdicts import HangMemory
from raydap.bridge.workers.records import BreakpointRecord

log = logging.getLogger(__name__)

#: The hand-over format this raydap speaks: a newer raydap keeps reading older versions.
VERSION = 1
SPOKEN = (1, 1)
#: Larger messages are not a bridge's (a record is about 1 KB).
MAX_MESSAGE = 256 * 2**20
#: Descriptors per message (Linux allows 253).
BATCH = 200
#: How long the old bridge waits for the new one to serve, once it has sent everything.
TAKE_WITHIN = 60.0
#: How long either side waits for the other's next message before giving up.
TALK_TIMEOUT = 30.0


class HandoverError(Exception):
    """A hand-over that did not happen, and why; whoever was serving serves on."""


class Hello(BaseModel):
    versions: tuple[int, int]
    pid: int


class HandedWorker(BaseModel):
    """A worker's record, where its socket is among the descriptors, and its state."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")
    record: BreakpointRecord
    descriptor: int
    carried: Carried


class Offer(BaseModel):
    version: int
    pid: int
    #: Indexes into the descriptors that follow.
    http: int
    dap: int
    workers: list[HandedWorker]
    descriptors: int
    #: The debug token the old bridge made for itself, if it was given none: a new bridge
    #: given none either keeps it, so clients that have it still get in.
    generated_token: str | None = None
    #: The hang watch's memory (None: the watch was off).
    hangs: HangMemory | None = None


class Refusal(BaseModel):
    refused: str


class Taken(BaseModel):
    taken: bool = True


@dataclass
class Lent:
    """What the running bridge offers: the offer and the descriptors it names."""

    offer: Offer
    descriptors: list[int]


def socket_path(runtime_dir: Path, pid: int) -> Path:
    return runtime_dir / f"bridge-{pid}.sock"


# -- the wire: length-prefixed JSON, and descriptors ----------------------------------------


def _send(sock: socket.socket, message: BaseModel) -> None:
    body = message.model_dump_json().encode()
    sock.sendall(struct.pack("!I", len(body)) + body)


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 2**20))
        if not chunk:
            raise HandoverError("the other bridge closed the hand-over")
        data += chunk
    return bytes(data)


def _receive(sock: socket.socket) -> dict[str, Any]:
    (size,) = struct.unpack("!I", _receive_exactly(sock, 4))
    if size > MAX_MESSAGE:
        raise HandoverError(f"a hand-over message of {size} bytes is over the limit")
    try:
        message = json.loads(_receive_exactly(sock, size))
    except ValueError as exc:
        raise HandoverError(f"the other bridge sent bad JSON: {exc}") from None
    if not isinstance(message, dict):
        raise HandoverError("the other bridge sent something other than an object")
    return message


def _send_descriptors(sock: socket.socket, descriptors: list[int]) -> None:
    for start in range(0, len(descriptors), BATCH):
        socket.send_fds(sock, [b"D"], descriptors[start : start + BATCH])


def _receive_descriptors(sock: socket.socket, count: int) -> list[int]:
    received: list[int] = []
    try:
        while len(received) < count:
            data, descriptors, flags, _ = socket.recv_fds(sock, 1, BATCH)
            received += descriptors
            if flags & socket.MSG_CTRUNC:
                raise HandoverError("descriptors were lost (the open file limit?)")
            if not data:
                raise HandoverError("the other bridge closed the hand-over")
    except BaseException:
        for descriptor in received:
            os.close(descriptor)
        raise
    return received


def _check_peer(sock: socket.socket) -> int:
    """The peer's pid, if it runs as this user; raises HandoverError otherwise."""
    credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, _ = struct.unpack("3i", credentials)
    if uid != os.geteuid():
        raise HandoverError(f"refusing a hand-over with pid {pid} of another user (uid {uid})")
    return int(pid)


# -- the running bridge's side --------------------------------------------------------------


@dataclass
class Giver:
    """Listens for a new bridge and hands over to it. ``lend`` stops the bridge's work and
    lends everything (raising HandoverError to refuse), ``taken`` lets go once the new bridge
    serves, ``kept`` takes everything back when it does not."""

    path: Path
    lend: Callable[[int], Awaitable[Lent]]
    taken: Callable[[int], Awaitable[None]]
    kept: Callable[[str], Awaitable[None]]
    take_within: float = TAKE_WITHIN
    _listener: socket.socket | None = field(default=None, init=False)
    _task: asyncio.Task[None] | None = field(default=None, init=False)

    def start(self) -> None:
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        self.path.chmod(0o600)
        listener.listen(4)
        listener.setblocking(False)
        self._listener = listener
        self._task = asyncio.create_task(self._serve(listener), name="hand-over listener")

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self._listener is not None:
            self._listener.close()
            self.path.unlink(missing_ok=True)

    async def _serve(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            connection, _ = await loop.sock_accept(listener)
            with connection:  # one hand-over at a time
                connection.setblocking(True)
                connection.settimeout(TALK_TIMEOUT)
                try:
                    if await self._hand_over(connection):
                        return
                except (HandoverError, OSError, ValidationError) as exc:
                    log.warning("no hand-over: %s", exc)
                except Exception:  # a bug: this bridge serves on, and can hand over later
                    log.exception("no hand-over")

    async def _hand_over(self, connection: socket.socket) -> bool:
        """One conversation; True once the new bridge has taken over."""
        pid = _check_peer(connection)
        hello = Hello.model_validate(await asyncio.to_thread(_receive, connection))
        low, high = hello.versions
        if not low <= VERSION <= high:
            why = f"this bridge hands over in version {VERSION}; pid {pid} reads {low}-{high}"
            await asyncio.to_thread(_send, connection, Refusal(refused=why))
            raise HandoverError(why)
        log.info("pid %d asks to take over", pid)
        try:
            lent = await self.lend(pid)
        except HandoverError as exc:
            await asyncio.to_thread(_send, connection, Refusal(refused=str(exc)))
            raise
        try:
            await asyncio.to_thread(self._offer, connection, lent)
            connection.settimeout(self.take_within)
            answer = await asyncio.to_thread(_receive, connection)
            Taken.model_validate(answer)
        except BaseException as exc:
            why = str(exc) or type(exc).__name__
            await self.kept(f"the new bridge (pid {pid}) did not take over: {why}")
            raise
        log.info("pid %d took over %d workers", pid, len(lent.offer.workers))
        await self.taken(pid)
        return True

    @staticmethod
    def _offer(connection: socket.socket, lent: Lent) -> None:
        _send(connection, lent.offer)
        _send_descriptors(connection, lent.descriptors)


# -- the new bridge's side ------------------------------------------------------------------


@dataclass
class Received:
    """What a new bridge took: the offer, and the sockets it names (owned from now on)."""

    offer: Offer
    sockets: list[socket.socket]
    connection: socket.socket

    def acknowledge(self) -> None:
        """Tell the old bridge this one serves: it lets go of everything and exits."""
        _send(self.connection, Taken())
        self.connection.close()

    def close(self) -> None:
        """Give up: the old bridge takes everything back. Closing our copies of its sockets
        shuts nothing down: the old bridge's copies keep them open."""
        for sock in self.sockets:
            sock.close()
        self.connection.close()


def take(path: Path) -> Received:
    """Ask the bridge listening at ``path`` for everything it holds (blocking)."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    connection.settimeout(TALK_TIMEOUT)
    try:
        try:
            connection.connect(str(path))
        except OSError as exc:
            raise HandoverError(f"cannot reach the running bridge at {path}: {exc}") from None
        _check_peer(connection)
        _send(connection, Hello(versions=SPOKEN, pid=os.getpid()))
        answer = _receive(connection)
        if "refused" in answer:
            raise HandoverError(Refusal.model_validate(answer).refused)
        offer = Offer.model_validate(answer)
        descriptors = _receive_descriptors(connection, offer.descriptors)
    except BaseException:
        connection.close()
        raise
    sockets = [socket.socket(fileno=descriptor) for descriptor in descriptors]
    return Received(offer, sockets, connection)
