"""``raydap serve`` for the simulated cluster's live workers (P7): the bridge itself, given
the workers' live marks in memory, since the fake cluster has no GCS to hold them.

    python -m bench.live_bridge DASHBOARD_URL

prints what ``raydap serve`` prints (HTTP and DAP addresses), serves without a token.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from raydap.bridge.cluster.live_marks import LiveMark
from raydap.bridge.cluster.locate import Cluster
from raydap.bridge.server.bridge import Bridge
from raydap.bridge.server.process import serve_until_stopped
from raydap.bridge.server.settings import Settings


class EveryWorkerMarked:
    """Every simulated worker with an open port is a ``raydap.live`` one; breakpoints are
    kept in memory (the :class:`~raydap.bridge.cluster.live_marks.Marks` a bridge uses)."""

    def __init__(self) -> None:
        self.breakpoints: list[dict[str, Any]] = []

    async def read(self, worker_ids: list[str]) -> dict[str, LiveMark]:
        return {w: LiveMark(cwd="/fake") for w in worker_ids}

    async def forget(self, worker_id: str) -> None:
        pass

    async def load_breakpoints(self) -> list[dict[str, Any]]:
        return list(self.breakpoints)

    async def save_breakpoints(self, requests: list[dict[str, Any]]) -> None:
        self.breakpoints = list(requests)


def main() -> int:
    settings = Settings(port=0, dap_port=0, no_token=True, dashboard_url=sys.argv[1])
    bridge = Bridge(settings, Cluster(sys.argv[1]), marks=EveryWorkerMarked())
    return asyncio.run(serve_until_stopped(bridge))


if __name__ == "__main__":
    sys.exit(main())
