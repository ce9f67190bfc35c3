"""Legacy pdb breakpoints as records: listed beside the held workers, so one ``raydap list``
shows every paused worker and says how to reach each."""

from __future__ import annotations

from raydap.bridge.cluster.pdb_keys import PdbEntry
from raydap.bridge.workers.records import BreakpointRecord, Location
from raydap.bridge.workers.registry import Registry


def record_from_entry(entry: PdbEntry) -> BreakpointRecord:
    host, _, port = entry.pdb_address.rpartition(":")
    title = entry.proctitle or ""
    task = title.removeprefix("ray::").split(" ", 1)[0] or None
    return BreakpointRecord(
        id="pdb-" + entry.key[:8],
        kind="legacy-pdb",
        job_id=entry.job_id,
        task_name=task,
        actor_id=entry.actor_id,
        node_id=entry.node_id,
        node_ip=host or "?",
        worker_id=entry.worker_id,
        debugger_port=int(port) if port.isdigit() else None,
        paused_since=float(entry.timestamp or 0),
        location=Location(
            path=entry.filename or "?", line=int(entry.lineno or 0), function=task or "?"
        ),
    )


def reconcile(registry: Registry, entries: list[PdbEntry]) -> None:
    """List exactly the legacy breakpoints GCS announces now."""
    found = {record.id: record for record in map(record_from_entry, entries)}
    for record in registry.records():
        if record.kind == "legacy-pdb" and record.id not in found:
            registry.remove(record.id)
    for record in found.values():
        registry.put(record)
