"""Plain-text views of paused workers for the terminal."""

from __future__ import annotations

import time
from typing import Any

from raydap.bridge.workers import meshes
from raydap.bridge.workers.ranks import describe


def duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def _short_path(path: str, width: int = 40) -> str:
    return path if len(path) <= width else "…" + path[-(width - 1) :]


def under_parents(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each worker followed by its child processes (a child whose parent is not listed stays
    where it was)."""
    ids = {r["id"] for r in records}
    children: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("parent") in ids:
            children.setdefault(r["parent"], []).append(r)
    ordered: list[dict[str, Any]] = []

    def add(record: dict[str, Any]) -> None:
        ordered.append(record)
        for child in children.get(record["id"], []):
            add(child)

    for r in records:
        if r.get("parent") not in ids:
            add(r)
    return ordered


def breakpoint_rows(records: list[dict[str, Any]], now: float | None = None) -> list[list[str]]:
    """One row per worker, each child process right under its worker (its task marked └)."""
    now = time.time() if now is None else now
    rows = []
    for r in under_parents(records):
        where = r.get("location") or {}
        kind = r.get("kind", "")
        if r.get("exception"):
            kind = f"{kind}: {r['exception']['type']}"
        running = r.get("state") == "running"
        if running:
            kind = "running (live)" if r.get("live") else "running"
        rows.append(
            [
                r["id"],
                kind,
                r.get("job_id") or "-",
                ("└ " if r.get("parent") else "") + (r.get("task_name") or "-"),
                describe(r.get("rank"), r.get("role"), meshes.text(r.get("mesh") or ())) or "-",
                r.get("node_ip") or "-",
                str(r.get("pid") or "-"),
                f"{_short_path(where['path'])}:{where['line']}" if where else "-",
                where.get("function", "-") if where else "-",
                "-" if running else duration(now - float(r.get("paused_since") or now)),
                str(r.get("clients", 0)),
            ]
        )
    return rows


HEADERS = [
    "ID", "KIND", "JOB", "TASK", "RANK", "NODE", "PID", "LOCATION", "FUNCTION", "PAUSED", "CLIENTS",
]  # fmt: skip


def table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), *(line(row) for row in rows)])


def breakpoints_table(records: list[dict[str, Any]], what: str = "paused workers") -> str:
    if not records:
        return f"no {what}"
    return table(HEADERS, breakpoint_rows(records))
