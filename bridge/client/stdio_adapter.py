"""``raydap dap``: a debug adapter on stdin/stdout that relays to the bridge on this machine.

Editors start debug adapters as programs (nvim-dap's ``executable``, VS Code's
``DebugAdapterExecutable``, Emacs, vimspector, Helix, Zed, JetBrains), so
``ssh head raydap dap --follow job=02000000`` is a debug adapter for any of them: SSH
authenticates the person, and the bridge's token comes from its connection file, so there is
no tunnel to open and nothing to paste.

To ``attach`` the relay adds the token and the worker (``--breakpoint``) or filter
(``--follow``) the command line names, where the editor's configuration does not say. When the
bridge is replaced, the session goes on with the new one (:mod:`.dap_relay`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable
from dataclasses import dataclass, field
from ssl import SSLContext
from typing import Any

from raydap.bridge.client.dap_relay import Editor, Reader, Relay, Writer
from raydap.bridge.workers.filters import parse_filter
from raydap.protocol import Decoder, ProtocolError, Request, encode, error_response, event


def parse_follow(text: str) -> dict[str, str] | bool:
    """``--follow``'s value as the attach argument: empty for every worker,
    ``job=02000000,task=train*``, or JSON. Raises :class:`BadFilter`."""
    return parse_filter(text).model_dump(exclude_none=True) or True


@dataclass(frozen=True)
class AttachDefaults:
    """What ``attach`` gets when the editor's configuration does not say."""

    token: str | None = None
    target: dict[str, Any] = field(default_factory=dict)  # {"breakpoint": id} or {"follow": ...}

    def apply(self, message: Request) -> Request:
        if message.command != "attach":
            return message
        arguments = dict(message.args)
        if self.token is not None:
            arguments.setdefault("token", self.token)
        if "breakpoint" not in arguments and "follow" not in arguments:
            arguments.update(self.target)
        return message.model_copy(update={"arguments": arguments})


class _FileReader:
    """stdin that is a regular file (not a pipe, socket or terminal), read in a thread."""

    async def read(self, n: int) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(None, os.read, 0, n)


class _FileWriter:
    """stdout that is a regular file: written directly (it never blocks for long)."""

    def write(self, data: bytes) -> None:
        sys.stdout.buffer.write(data)

    async def drain(self) -> None:
        sys.stdout.buffer.flush()


async def _stdio() -> tuple[Reader, Writer]:
    """stdin and stdout as asyncio streams (editors and SSH give pipes)."""
    loop = asyncio.get_running_loop()
    reader: Reader
    writer: Writer
    try:
        stream = asyncio.StreamReader(limit=2**20)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), sys.stdin)
        reader = stream
    except ValueError:
        reader = _FileReader()
    try:
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, sys.stdout
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    except ValueError:
        writer = _FileWriter()
    return reader, writer


async def relay(
    host: str, port: int, defaults: AttachDefaults, ssl: SSLContext | None = None
) -> int:
    """Serve the editor on stdin/stdout until either side closes; a replaced bridge's
    session is resumed on the new one (:mod:`.dap_relay`)."""
    editor_in, editor_out = await _stdio()

    def connect() -> Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
        return asyncio.open_connection(host, port, ssl=ssl, limit=2**20)

    try:
        bridge_in, bridge_out = await connect()
    except OSError as exc:
        return await refuse(editor_in, editor_out, f"cannot reach the bridge's DAP port: {exc}")
    session = Relay(Editor(editor_in, editor_out), connect, defaults.apply)
    try:
        return await session.run(bridge_in, bridge_out)
    finally:
        with contextlib.suppress(OSError):  # the editor closed its end first
            await editor_out.drain()


async def refuse(editor_in: Reader | None, editor_out: Writer | None, why: str) -> int:
    """No bridge to relay to: answer the editor's first request with why (an editor shows an
    error response; a bare exit is just "adapter exited"), then end the session."""
    print(f"raydap dap: {why}", file=sys.stderr)
    if editor_in is None or editor_out is None:
        editor_in, editor_out = await _stdio()
    decoder = Decoder()
    with contextlib.suppress(ProtocolError):
        while data := await editor_in.read(65536):
            requests = [m for m in decoder.feed(data) if isinstance(m, Request)]
            if requests:
                first = requests[0]
                reply = error_response(first.seq, first.command, f"raydap: {why}")
                editor_out.write(encode(reply, 1) + encode(event("terminated"), 2))
                await editor_out.drain()
                break
    return 1
