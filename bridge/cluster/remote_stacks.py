"""Stacks of workers nobody holds, read on their own nodes with py-spy.

Ray's dashboard can answer one worker's py-spy dump (``/worker/traceback``), but only where
the head enables profiling, which Ray's defaults do not. So it is tried once, and otherwise
(or after it said no, or could not read the first worker) one zero-CPU task pinned to each
node reads all of that node's workers.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from dataclasses import dataclass, field

from raydap.bridge.cluster import on_node, pyspy
from raydap.bridge.cluster.dashboard import DashboardClient, DashboardError, ProfilingDisabled
from raydap.bridge.cluster.driver import DriverUnavailable, RayDriver
from raydap.bridge.cluster.pyspy import BadDump, ThreadStack

#: At most this many dashboard requests at once (a thousand ranks are read in waves).
DASHBOARD_PARALLEL = 64


@dataclass(frozen=True)
class Target:
    """A worker to read: where it runs."""

    node_id: str
    pid: int


@dataclass(frozen=True)
class Reading:
    """What was read of one worker: its threads, and the variables of its environment that
    were asked for (empty through the dashboard, which does not read them)."""

    threads: list[ThreadStack]
    environment: dict[str, str] = field(default_factory=dict)


Outcome = Reading | str  # or why it could not be read


class RemoteStacks:
    def __init__(self, dashboard: DashboardClient, driver: RayDriver, timeout: float) -> None:
        self.dashboard = dashboard
        self.driver = driver
        self.timeout = timeout
        #: Unknown until asked; False once the dashboard said profiling is off.
        self._dashboard_profiling: bool | None = None

    async def read(
        self,
        targets: dict[str, Target],
        flags: tuple[str, ...] = (),
        environment: tuple[str, ...] = (),
    ) -> dict[str, Outcome]:
        """Each target's threads. ``flags`` (py-spy's ``--locals``, ``--native``) need the
        nodes themselves; ``environment`` (variables to read) is read where the nodes are
        asked, and left empty where the dashboard answers (it reads stacks only)."""
        if not targets:
            return {}
        if self._dashboard_profiling is not False and not flags:
            try:
                return await self._through_dashboard(targets)
            except ProfilingDisabled:
                self._dashboard_profiling = False
        return await self._on_nodes(targets, flags, environment)

    async def _through_dashboard(self, targets: dict[str, Target]) -> dict[str, Outcome]:
        gate = asyncio.Semaphore(DASHBOARD_PARALLEL)

        async def one(target: Target) -> Outcome:
            async with gate:
                try:
                    text = await asyncio.wait_for(
                        self.dashboard.traceback(target.pid, target.node_id), self.timeout
                    )
                    return Reading(pyspy.parse_text(text))
                except ProfilingDisabled:
                    raise
                except asyncio.TimeoutError:
                    return f"no stack within {self.timeout:g} s"
                except (DashboardError, BadDump) as exc:
                    return str(exc)

        first_id, *rest = targets
        first = await one(targets[first_id])  # ProfilingDisabled ends the attempt here
        if isinstance(first, str):  # enabled, but failing (py-spy missing on the agents?)
            raise ProfilingDisabled(first)
        self._dashboard_profiling = True
        others = await asyncio.gather(*(one(targets[i]) for i in rest))
        return {first_id: first, **dict(zip(rest, others, strict=True))}

    async def _on_nodes(
        self, targets: dict[str, Target], flags: tuple[str, ...], environment: tuple[str, ...]
    ) -> dict[str, Outcome]:
        by_node: dict[str, dict[int, str]] = defaultdict(dict)
        for worker, target in targets.items():
            by_node[target.node_id][target.pid] = worker

        async def node(node_id: str, workers: dict[int, str]) -> dict[str, Outcome]:
            try:  # (a first task on a node starts a worker: more time)
                answers = await self.driver.run_on_node(
                    node_id, on_node.read_stacks, list(workers), self.timeout, flags,
                    environment, timeout=self.timeout + 30,
                )  # fmt: skip
            except asyncio.TimeoutError:
                return dict.fromkeys(workers.values(), f"node {node_id[:8]} did not answer")
            except DriverUnavailable as exc:
                return dict.fromkeys(workers.values(), str(exc))
            except Exception as exc:  # the pinned task failed (its node died, ...)
                return dict.fromkeys(workers.values(), f"node {node_id[:8]}: {exc}")
            outcomes: dict[str, Outcome] = {}
            for pid, worker in workers.items():
                answer = answers.get(pid, {"error": "no answer"})
                try:
                    outcomes[worker] = (
                        Reading(pyspy.parse_json(answer["json"]), _variables(answer.get("env")))
                        if "json" in answer
                        else str(answer["error"])
                    )
                except BadDump as exc:
                    outcomes[worker] = str(exc)
            return outcomes

        parts = await asyncio.gather(*(node(n, w) for n, w in by_node.items()))
        return {worker: outcome for part in parts for worker, outcome in part.items()}


def _variables(found: object) -> dict[str, str]:
    """The environment a node read, checked (it is outside input)."""
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in list(found.items())[:16] if isinstance(v, str) and len(v) <= 64}
