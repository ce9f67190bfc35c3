"""When an unwatched running worker is detached: only once it has run, unwatched, for the whole
grace since its last resume (a detach during a stop's arrival loses the stop)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from raydap.adapter import State
from raydap.bridge.workers.policy import HoldPolicy

GRACE = 0.3


@dataclass
class Worker:
    """What the policy reads of an upstream: its state and clients; and its detaches."""

    state: State = State.RUNNING
    clients: list[Any] = field(default_factory=list)
    detached_at: list[float] = field(default_factory=list)

    async def detach(self) -> None:
        self.detached_at.append(asyncio.get_running_loop().time())


def changed(policy: HoldPolicy, worker: Worker, state: State) -> None:
    worker.state = state
    policy.update("w", worker)  # type: ignore[arg-type]


async def test_a_resume_during_the_grace_starts_it_again() -> None:
    policy, worker = HoldPolicy(detach_grace=GRACE), Worker()
    loop = asyncio.get_running_loop()
    changed(policy, worker, State.RUNNING)
    await asyncio.sleep(GRACE / 2)
    changed(policy, worker, State.STOPPED)  # its next breakpoint(), held
    changed(policy, worker, State.RUNNING)  # continued again, still unwatched
    resumed = loop.time()
    await asyncio.sleep(GRACE * 0.8)
    assert worker.detached_at == []  # the first grace has ended, this one has not
    await asyncio.sleep(GRACE)
    assert len(worker.detached_at) == 1 and worker.detached_at[0] >= resumed + GRACE
    await policy.close()


async def test_a_worker_stopped_or_watched_when_the_grace_ends_stays_held() -> None:
    policy = HoldPolicy(detach_grace=GRACE)
    stopped, watched = Worker(), Worker()
    changed(policy, stopped, State.RUNNING)
    policy.update("v", watched)  # type: ignore[arg-type]
    stopped.state = State.STOPPED
    watched.clients.append(object())
    await asyncio.sleep(GRACE * 2)
    assert stopped.detached_at == [] and watched.detached_at == []
    await policy.close()


async def test_a_kept_worker_is_never_detached() -> None:
    policy, worker = HoldPolicy(detach_grace=0.0), Worker()
    policy.keep("w")
    changed(policy, worker, State.RUNNING)
    await asyncio.sleep(0.05)
    assert worker.detached_at == []
    await policy.close()
