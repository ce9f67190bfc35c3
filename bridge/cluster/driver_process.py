"""The bridge's Ray driver, a process of its own: ``python -m raydap.bridge.cluster.driver_process
FD GCS_ADDRESS``, talking to the bridge over the socket ``FD``.

Ray's driver can end the process that runs it: a raylet it sees but cannot reach is a fatal
check (``raylet_ipc_client.cc``), so here it costs this child, never the bridge. Messages are
length-prefixed pickles both ways (the child is the bridge's own, started by it):

- bridge to child: ``("run", id, node_id, module, function, args)`` and ``("cancel", id)``;
- child to bridge: ``("joined",)`` once, or ``("failed", why)`` before it exits; then
  ``("done", id, True, result)`` or ``("done", id, False, "Type: message")`` per run.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import pickle
import socket
import struct
import sys
import threading
from typing import Any

#: A message's length, before it.
HEADER = struct.Struct("!I")
#: No message between the bridge and its driver is this large (stacks of one node are less).
MOST_BYTES = 256 * 1024 * 1024


def encode(message: tuple[Any, ...]) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return HEADER.pack(len(body)) + body


def _receive(connection: socket.socket) -> tuple[Any, ...] | None:
    """The next message, or None at the end."""
    header = _exactly(connection, HEADER.size)
    if header is None:
        return None
    (size,) = HEADER.unpack(header)
    if size > MOST_BYTES:
        raise ValueError(f"a message of {size} bytes")
    body = _exactly(connection, size)
    return None if body is None else pickle.loads(body)  # (the bridge's own)


def _exactly(connection: socket.socket, size: int) -> bytes | None:
    parts = bytearray()
    while len(parts) < size:
        part = connection.recv(size - len(parts))
        if not part:
            return None
        parts += part
    return bytes(parts)


class _Child:
    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self._sending = threading.Lock()
        self._running: dict[int, Any] = {}

    def send(self, message: tuple[Any, ...]) -> None:
        with self._sending:
            self.connection.sendall(encode(message))

    def join(self, gcs_address: str) -> None:
        import ray
        from ray import cloudpickle

        from raydap.bridge.cluster import on_node

        # Shipped by value: the nodes need not have raydap installed.
        cloudpickle.register_pickle_by_value(on_node)  # type: ignore[no-untyped-call]
        with contextlib.suppress(ImportError):  # its handler prints a stack on SIGTERM
            from ray._private import ray_constants

            ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
        ray.init(
            address=gcs_address, namespace="raydap", logging_level=logging.ERROR,
            log_to_driver=False, configure_logging=False,
        )  # fmt: skip

    def run(self, ident: int, node_id: str, module: str, name: str, args: tuple[Any, ...]) -> None:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        try:
            function = getattr(importlib.import_module(module), name)
            remote = ray.remote(num_cpus=0, max_retries=0)(function)
            reference = remote.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                name=f"raydap.{name}",
            ).remote(*args)
        except Exception as exc:  # refused at once: a bad node id, a lost GCS
            self.send(("done", ident, False, _said(exc)))
            return
        self._running[ident] = reference
        reference.future().add_done_callback(lambda future: self._done(ident, future))

    def _done(self, ident: int, future: Any) -> None:
        self._running.pop(ident, None)
        try:
            self.send(("done", ident, True, future.result()))
        except Exception as exc:  # the task's own failure, or its node's
            self.send(("done", ident, False, _said(exc)))

    def cancel(self, ident: int) -> None:
        import ray

        reference = self._running.pop(ident, None)
        if reference is not None:
            with contextlib.suppress(Exception):  # already finished, or its node is gone
                ray.cancel(reference, force=True)

    def serve(self) -> None:
        while (message := _receive(self.connection)) is not None:
            if message[0] == "run":
                self.run(*message[1:])
            elif message[0] == "cancel":
                self.cancel(message[1])


def _said(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".strip()


def main(argv: list[str]) -> int:
    connection = socket.socket(fileno=int(argv[0]))
    child = _Child(connection)
    try:
        child.join(argv[1])
    except Exception as exc:  # Ray raises many kinds; all mean "not joined"
        child.send(("failed", f"could not join Ray at {argv[1]}: {_said(exc)}"))
        return 1
    child.send(("joined",))
    child.serve()  # until the bridge closes its end
    return 0


if __name__ == "__main__":
    sys.stdout = sys.stderr  # the bridge's log; nothing here prints for a reader
    raise SystemExit(main(sys.argv[1:]))
