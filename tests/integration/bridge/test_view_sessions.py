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
from raydap.bridge.workers.policy import HoldPolicy
from tests.integration.bridge import roles
from tests.waiting import until

WORKER_ID = "ab" * 28
VIEW, DEBUG = roles.VIEW, roles.DEBUG
JOB = "0a000000"


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
    follower = await attached(port, VIEW)  # follows every worker
    single = await attached(port, VIEW, breakpoint=rid)  # one worker, as the page opens it
    assert len(upstream.clients) == 2
    assert workers.follows.filters() == []  # no job counts as debugged
    assert not upstream.debugged

    policy = HoldPolicy(hold_timeout=0.2)
    policy.touch(rid)
    await asyncio.sleep(0.3)
    await policy.expire(workers.holder.upstreams, workers.holder.resume)
    await until(lambda: upstream.state is not State.STOPPED, what="the hold timeout's resume")
    await follower.close()
    await single.close()


async def test_a_debug_session_still_holds_its_worker_and_debugs_its_job(
    served: tuple[Workers, int],
) -> None:
    workers, port = served
    rid = record_id(WORKER_ID)
    upstream = workers.holder.upstreams[rid]
    client = await attached(port, DEBUG, breakpoint=rid)
    assert upstream.debugged
    assert [f.job for f in workers.follows.filters()] == [JOB]  # its job is debugged

    policy = HoldPolicy(hold_timeout=0.2)
    policy.touch(rid)
    await asyncio.sleep(0.3)
    await policy.expire(workers.holder.upstreams, workers.holder.resume)
    assert upstream.state is State.STOPPED  # a person debugs it: kept
    await client.close()
    await until(lambda: not workers.follows.filters(), what="the follow gone with the session")
