"""Detaching from a worker leaves its debugpy able to take the next debugger.

debugpy's adapter sends ``terminated`` while it handles ``disconnect`` and answers after; a
bridge that closed on ``terminated`` made that answer fail, and debugpy's adapter exits when a
handler fails (``os._exit(1)``), so the worker's next ``breakpoint()`` waited on a port that
refused (reproduced with ``bench.run.p1_discovery``: 3 in about 52 pauses before, see
docs/performance.md).
"""

from __future__ import annotations

from raydap.adapter import State
from tests.unit.adapter.peer import held_peer


async def test_a_detach_closes_only_once_debugpy_answered_its_disconnect() -> None:
    async with held_peer() as (peer, upstream):
        await upstream.detach("detached")
        assert peer.disconnect_answered is True
        assert upstream.state is State.CLOSED
        assert upstream.close_reason == "detached"
