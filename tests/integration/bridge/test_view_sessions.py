"""A view token only looks: its DAP sessions, whether they follow every worker or attach to
one, never count as debugging a job. They register no follow (so no collective timeout is
raised and no post-mortem stop is kept), and a worker they watch is still resumed by
``--hold-timeout``. A debug token's sessions keep today's meaning."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from raydap.adapter import State
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.server.auth import Token
from raydap.bridge.service import Workers
from raydap.bridge.workers.holder import record_id
from tests.integration.bridge import roles
from tests.waiting import until

WORKER_ID = "ab" * 28
VIEW, DEBUG = roles.VIEW, roles.DEBUG
JOB = "0a000000"
#: The ``--hold-timeout`` the bridge is given here, in seconds.
HOLD = 0.5


@pytest.fixture
async def served() -> AsyncIterator[tuple[Workers, int]]:
    async with roles.served(WORKER_ID, job=JOB) as found:
        yield found


async def attached(port: int, token: Token, **arguments: Any) -> DapClient:
    client = await DapClient.connect("127.0.0.1", port)
    await client.attach(token=token.secret, **arguments)
    await client.wait_event("stopped")
    return client


async def test_view_sessions_count_as_nobody_debugging(served: tuple[Workers, int]) -> None:
    workers, port = served
    rid = record_id(WORKER_ID)
    upstream = workers.holder.upstreams[rid]
    workers.holder.policy.hold_timeout = HOLD
    await asyncio.sleep(HOLD + 0.1)  # held a while ago: its hold has run out
    follower = await attached(port, VIEW)  # follows every worker
    single = await attached(port, VIEW, breakpoint=rid)  # one worker, as the page opens it
    _, _, variables = await workers.variables(rid, 0)  # what MCP's and HTTP's reads call
    assert variables and len(upstream.clients) == 2
    assert workers.follows.filters() == []  # no job counts as debugged
    assert not upstream.debugged

    stop = upstream.stops.top()
    await workers.holder.expire()  # looking touched nothing: the hold timeout resumes it
    # It runs on to its next breakpoint() at once: the stop it was held at is gone.
    await until(lambda: upstream.stops.top() is not stop, what="the hold timeout's resume")
    await follower.close()
    await single.close()


async def test_a_debug_session_still_holds_its_worker_and_debugs_its_job(
    served: tuple[Workers, int],
) -> None:
    workers, port = served
    rid = record_id(WORKER_ID)
    upstream = workers.holder.upstreams[rid]
    workers.holder.policy.hold_timeout = HOLD
    await asyncio.sleep(HOLD + 0.1)
    client = await attached(port, DEBUG, breakpoint=rid)
    assert upstream.debugged
    assert [f.job for f in workers.follows.filters()] == [JOB]  # its job is debugged

    await workers.holder.expire()
    assert upstream.state is State.STOPPED  # a person debugs it: kept
    await client.close()
    await until(lambda: not workers.follows.filters(), what="the follow gone with the session")
