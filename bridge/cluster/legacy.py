"""Breakpoints of jobs run with ``RAY_DEBUG=legacy``: pdb on a TCP socket, announced in GCS.

The bridge cannot hold these (they speak pdb, not DAP), but it lists them, so that one
``raydap list`` shows every paused worker and says how to reach each.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from raydap.bridge.workers.records import BreakpointRecord, Location
from raydap.bridge.workers.registry import Registry

log = logging.getLogger(__name__)

NAMESPACE = b"ray_pdb"
PREFIX = b"RAY_PDB_"
_INTERNAL = b"RAY_PDB_CONTINUE_"  # Ray's own hand-over between tasks, not a breakpoint
MAX_ENTRY_BYTES = 1024 * 1024


def record_from_entry(key: bytes, entry: dict[str, Any]) -> BreakpointRecord:
    """A listing record from one ``RAY_PDB_<uuid>`` value."""
    host, _, port = str(entry.get("pdb_address", "")).rpartition(":")
    title = str(entry.get("proctitle") or "")
    task = title.removeprefix("ray::").split(" ", 1)[0] or None
    return BreakpointRecord(
        id="pdb-" + key[len(PREFIX) :].decode(errors="replace")[:8],
        kind="legacy-pdb",
        job_id=entry.get("job_id"),
        task_name=task,
        actor_id=entry.get("actor_id"),
        node_id=entry.get("node_id"),
        node_ip=host or "?",
        worker_id=entry.get("worker_id"),
        debugger_port=int(port) if port.isdigit() else None,
        paused_since=float(entry.get("timestamp") or 0),
        location=Location(
            path=str(entry.get("filename") or "?"),
            line=int(entry.get("lineno") or 0),
            function=task or "?",
        ),
    )


class LegacyPdbDiscovery:
    def __init__(self, gcs_address: str, registry: Registry, interval: float = 1.0) -> None:
        self.gcs_address = gcs_address
        self.registry = registry
        self.interval = interval
        self._client: Any = None

    async def run(self) -> None:
        while True:
            try:
                entries = await asyncio.to_thread(self._read)
            except Exception as exc:  # Ray raises its own RPC error types
                log.debug("legacy pdb discovery: %s", exc)
            else:
                self._reconcile(entries)
            await asyncio.sleep(self.interval)

    def _read(self) -> dict[str, BreakpointRecord]:
        if self._client is None:
            from ray._raylet import GcsClient  # type: ignore[attr-defined]

            self._client = GcsClient(address=self.gcs_address)
        found = {}
        for key in self._client.internal_kv_keys(PREFIX, namespace=NAMESPACE):
            if key.startswith(_INTERNAL):
                continue
            value = self._client.internal_kv_get(key, namespace=NAMESPACE)
            if not value or len(value) > MAX_ENTRY_BYTES:
                continue
            try:
                record = record_from_entry(key, json.loads(value))
            except (ValueError, TypeError) as exc:
                log.info("ignoring malformed %s: %s", key[:40], exc)
                continue
            found[record.id] = record
        return found

    def _reconcile(self, found: dict[str, BreakpointRecord]) -> None:
        for record in self.registry.records():
            if record.kind == "legacy-pdb" and record.id not in found:
                self.registry.remove(record.id)
        for record in found.values():
            self.registry.put(record)
