"""Breakpoints of jobs run with ``RAY_DEBUG=legacy``: pdb on a TCP socket, announced in GCS.

Ray's legacy debugger writes one ``RAY_PDB_<uuid>`` key per paused worker into GCS internal KV
(namespace ``ray_pdb``). This reads them, validated and size-capped, for the bridge to list.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import psutil
from pydantic import BaseModel, ConfigDict, ValidationError

from raydap.bridge.cluster.gcs_thread import GcsThread
from raydap.bridge.cluster.locate import gcs_client, is_loopback

log = logging.getLogger(__name__)

NAMESPACE = b"ray_pdb"
PREFIX = b"RAY_PDB_"
_INTERNAL = b"RAY_PDB_CONTINUE_"  # Ray's own hand-over between tasks, not a breakpoint
MAX_ENTRY_BYTES = 1024 * 1024


class PdbEntry(BaseModel):
    """One ``RAY_PDB_<uuid>`` value: where the worker's pdb listens and where it stopped."""

    model_config = ConfigDict(extra="ignore")

    key: str
    pdb_address: str = ""
    filename: str | None = None
    lineno: int | None = None
    job_id: str | None = None
    worker_id: str | None = None
    node_id: str | None = None
    actor_id: str | None = None
    proctitle: str | None = None
    timestamp: float | None = None


class LegacyPdbDiscovery:
    def __init__(
        self,
        gcs_address: str,
        on_poll: Callable[[list[PdbEntry]], None],
        interval: float = 1.0,
    ) -> None:
        self.gcs_address = gcs_address
        self.interval = interval
        self._on_poll = on_poll
        self._client: Any = None
        self._thread = GcsThread("gcs pdb keys")

    async def run(self) -> None:
        while True:
            try:
                entries = await self._thread.call(self._read)
            except Exception as exc:  # Ray raises its own RPC error types
                log.debug("legacy pdb discovery: %s", exc)
            else:
                self._on_poll(entries)
            await asyncio.sleep(self.interval)

    def _read(self) -> list[PdbEntry]:
        if self._client is None:
            self._client = gcs_client(self.gcs_address)
        found = []
        for key in self._client.internal_kv_keys(PREFIX, namespace=NAMESPACE):
            if key.startswith(_INTERNAL):
                continue
            value = self._client.internal_kv_get(key, namespace=NAMESPACE)
            if not value or len(value) > MAX_ENTRY_BYTES:
                continue
            name = key[len(PREFIX) :].decode(errors="replace")
            try:
                data = json.loads(value)
                found.append(PdbEntry.model_validate({**data, "key": name}))
            except (ValueError, TypeError, ValidationError) as exc:
                log.info("ignoring malformed %s: %s", key[:40], exc)
        return found


class Unreachable(Exception):
    """A legacy pdb the bridge cannot connect to; the message says what would make it so."""


_EXTERNAL = (
    "start that node's Ray with --ray-debugger-external (legacy pdb then listens on every "
    "interface of the node, without authentication: anyone who reaches it runs code there)"
)


def local_addresses() -> set[str]:
    return {a.address for addrs in psutil.net_if_addrs().values() for a in addrs}


async def pdb_address(
    host: str, port: int | None, node_id: str | None,
    node_ip: Callable[[str], Awaitable[str | None]],
) -> tuple[str, int]:  # fmt: skip
    """Where the bridge connects to a worker's legacy pdb. Ray announces ``localhost`` unless
    the node runs with ``--ray-debugger-external``: then the worker must be on this machine,
    else connecting would reach whatever listens on that port here."""
    if port is None:
        raise Unreachable("its pdb announced no port")
    if not is_loopback(host):
        return host, port
    where = await node_ip(node_id) if node_id else None
    if where is None or where not in local_addresses():
        raise Unreachable(
            f"its pdb listens on localhost of node {where or node_id or '?'}, which is not the "
            f"bridge's machine: {_EXTERNAL}"
        )
    return "127.0.0.1", port
