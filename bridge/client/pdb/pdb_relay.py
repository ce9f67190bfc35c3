"""``raydap attach pdb-...``: a legacy ``RAY_DEBUG=legacy`` pdb, through the bridge.

The bridge relays the worker's pdb socket over a WebSocket on its one port (``/pdb``), so
the pdb is reachable wherever the bridge is. Text goes through as typed, with readline's
history; pdb's own prompt is shown as the input prompt.

Ray's legacy pdb takes one connection only: once it closes, pdb quits (the task raises
``BdbQuit``) unless ``c`` was sent first. Leaving therefore asks first.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import re
import signal
import sys
import threading
from ssl import SSLContext
from urllib.parse import quote

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from raydap.bridge.client.connection import BridgeTarget
from raydap.bridge.client.pdb.console import History, LoopThread, history_file

MAX_FRAME_BYTES = 1024 * 1024
#: pdb's prompts, and how long other unfinished output waits to be taken for a question.
_PROMPT = re.compile(r"(\(Pdb\) |>>> |\.\.\. )$")
_QUIET_SECONDS = 0.3
_LEAVE = (
    "Leaving closes this legacy pdb, and pdb then quits: the task fails with BdbQuit. "
    "Type c to let it run instead. Leave anyway? [y/N] "
)


class _Screen:
    """pdb's output: whole lines printed as they come; the unfinished last one, once it is
    pdb's prompt (or nothing more came for a moment), kept for ``input``."""

    def __init__(self) -> None:
        self._pending = ""
        self._ready = threading.Condition()
        self.closed = False
        self.reading = False

    def feed(self, text: str) -> None:
        with self._ready:
            head, newline, tail = (self._pending + text).rpartition("\n")
            if newline:
                sys.stdout.write(head + newline)
                sys.stdout.flush()
            self._pending = tail
            self._ready.notify_all()

    def close(self) -> None:
        with self._ready:
            self.closed = True
            self._ready.notify_all()
            if self.reading:  # wake ``input``: pdb is gone, nothing will read the line
                signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    def prompt(self) -> str | None:
        """pdb's prompt once it asks for input; ``None`` once the connection is closed."""
        with self._ready:
            while not self.closed:
                if _PROMPT.search(self._pending):
                    break
                if not self._ready.wait(_QUIET_SECONDS) and self._pending:
                    break  # a question of its own (``Clear all breaks?``)
            if self.closed:
                return None
            prompt, self._pending = self._pending, ""
            self.reading = True
            return prompt


def _url(bridge: BridgeTarget, record_id: str) -> str:
    base = bridge.url.replace("https://", "wss://", 1).replace("http://", "ws://", 1)
    return f"{base}/pdb?breakpoint={quote(record_id)}"


async def _open(url: str, headers: dict[str, str], ssl: SSLContext | None) -> ClientConnection:
    return await connect(
        url, additional_headers=headers, proxy=None, max_size=MAX_FRAME_BYTES,
        ssl=ssl if url.startswith("wss:") else None, compression=None,
    )  # fmt: skip


async def _pump(socket: ClientConnection, screen: _Screen) -> None:
    try:
        async for frame in socket:
            screen.feed(frame if isinstance(frame, str) else frame.decode(errors="replace"))
    except ConnectionClosed:
        pass
    finally:
        screen.close()


def _read(prompt: str, screen: _Screen) -> str | None:
    """A line for pdb, or ``None`` when the user confirms leaving (Ctrl-D, Ctrl-C) or pdb
    has closed the connection."""
    try:
        while True:
            try:
                return input(prompt)
            except (EOFError, KeyboardInterrupt):
                print()
                if screen.closed:
                    return None
                try:
                    if input(_LEAVE).strip().lower() in ("y", "yes"):
                        return None
                except (EOFError, KeyboardInterrupt):
                    return None
    finally:
        screen.reading = False


def relay(bridge: BridgeTarget, record_id: str) -> int:
    loop = LoopThread()
    history = History(history_file())
    headers = {"Authorization": f"Bearer {bridge.token}"} if bridge.token else {}
    try:
        socket = loop.call(_open(_url(bridge, record_id), headers, bridge.ssl_context()))
    except InvalidStatus as exc:
        try:
            why = json.loads(exc.response.body or b"{}").get("error", "")
        except ValueError:
            why = ""
        print(f"raydap: {why or exc}")
        loop.stop()
        return 1
    except OSError as exc:
        print(f"raydap: cannot reach the bridge at {bridge.url}: {exc}")
        loop.stop()
        return 1
    screen = _Screen()
    pumping = asyncio.run_coroutine_threadsafe(_pump(socket, screen), loop.loop)
    try:
        while (prompt := screen.prompt()) is not None:
            line = _read(prompt, screen)
            if line is None and not screen.closed:
                return 0
            if line is not None:
                loop.call(socket.send(line + "\n"))
        print("raydap: the legacy pdb closed the connection (the worker runs on)")
        return 0
    except ConnectionClosed:
        return 0
    finally:
        history.save()
        with contextlib.suppress(concurrent.futures.TimeoutError, OSError):
            loop.call(socket.close(), timeout=5)
        pumping.cancel()
        loop.stop()
