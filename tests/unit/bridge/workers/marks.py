"""Live marks held in memory: a test double for the GCS store of
:mod:`raydap.bridge.cluster.live_marks`, for tests that run no Ray."""

from __future__ import annotations

from typing import Any

from raydap.bridge.cluster.live_marks import LiveMark


class MemoryMarks:
    """Marks and kept breakpoints in memory, as the GCS would keep them."""

    def __init__(self, marks: dict[str, LiveMark] | None = None) -> None:
        self.marks = dict(marks or {})
        self.breakpoints: list[dict[str, Any]] = []

    async def read(self, worker_ids: list[str]) -> dict[str, LiveMark]:
        return {w: self.marks[w] for w in worker_ids if w in self.marks}

    async def forget(self, worker_id: str) -> None:
        self.marks.pop(worker_id, None)

    async def load_breakpoints(self) -> list[dict[str, Any]]:
        return list(self.breakpoints)

    async def save_breakpoints(self, requests: list[dict[str, Any]]) -> None:
        self.breakpoints = list(requests)
