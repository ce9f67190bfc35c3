"""Caps on connections, so one client (or address) cannot exhaust the bridge."""

from __future__ import annotations

from collections import Counter


class ConnectionLimiter:
    def __init__(self, total: int = 256, per_address: int = 32) -> None:
        self.total = total
        self.per_address = per_address
        self._open: Counter[str] = Counter()

    @property
    def open(self) -> int:
        """Connections open now."""
        return sum(self._open.values())

    def acquire(self, address: str) -> str | None:
        """Count a new connection; returns why it is refused, or None if it may proceed."""
        if self.open >= self.total:
            return f"the bridge already serves {self.total} connections"
        if self._open[address] >= self.per_address:
            return f"{address} already has {self.per_address} connections open"
        self._open[address] += 1
        return None

    def release(self, address: str) -> None:
        self._open[address] -= 1
        if self._open[address] <= 0:
            del self._open[address]
