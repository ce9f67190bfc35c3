"""The audit log: one JSON line for each attach, detach, continue, evaluate and write."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import IO, Any

from raydap.live import private


class AuditLog:
    def __init__(self, path: Path | None) -> None:
        """It records evaluated expressions: owner-only, and never through a link."""
        self._file: IO[Any] | None = private.open_private(path, "a") if path else None

    def record(self, action: str, *, client: str, token: str, **details: Any) -> None:
        if self._file is None:
            return
        entry = {"time": round(time.time(), 3), "action": action, "client": client, "token": token}
        entry.update({k: v for k, v in details.items() if v is not None})
        self._file.write(json.dumps(entry, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
