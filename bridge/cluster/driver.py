"""The bridge as a Ray driver, for the little that must run on a worker's own node (reading
stacks with py-spy, pausing a worker in place): zero-CPU tasks pinned to that node.

Connected on first use only, so a bridge that never needs it never joins the cluster as a
job. Ray's driver API blocks, so every call to it runs in one thread of its own.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from raydap.bridge.cluster import on_node

log = logging.getLogger(__name__)


class DriverUnavailable(Exception):
    """Ray could not be joined as a driver; the message says why."""


class RayDriver:
    def __init__(self, gcs_address: str | None) -> None:
        self.gcs_address = gcs_address
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ray-driver")
        self._connected = False

    async def _call(self, function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, function, *args)

    def _connect(self) -> None:
        if self._connected:
            return
        if not self.gcs_address:
            raise DriverUnavailable(
                "the bridge knows no Ray GCS address (started with --dashboard-url only): "
                "start it with --address to read stacks on the nodes"
            )
        import ray
        from ray import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[on_node.__name__])  # type: ignore[no-untyped-call]
        # Ray's failure signal handler would take SIGTERM from the bridge's own: it prints a
        # stack, and the bridge's ray.shutdown() then sometimes aborted the process (exit -6,
        # twice in one CI run; ray-project/ray#37288). The bridge stops itself cleanly. Ray
        # reads its environment variable for this when imported, long before: the constant
        # itself is what ray.init() reads.
        try:
            from ray._private import ray_constants

            ray_constants.RAY_DISABLE_FAILURE_SIGNAL_HANDLER = True
        except ImportError:  # moved in a later Ray: its handler stays, as before
            log.info("Ray's failure signal handler stays installed in the bridge")
        try:
            ray.init(
                address=self.gcs_address, namespace="raydap", logging_level=logging.ERROR,
                log_to_driver=False, configure_logging=False,
            )  # fmt: skip
        except Exception as exc:  # Ray raises many kinds; all mean "not joined"
            raise DriverUnavailable(f"could not join Ray at {self.gcs_address}: {exc}") from None
        self._connected = True

    def _submit(self, node_id: str, function: Callable[..., Any], *args: Any) -> Any:
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self._connect()
        remote = ray.remote(num_cpus=0, max_retries=0)(function)
        strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
        return remote.options(
            scheduling_strategy=strategy, name=f"raydap.{function.__name__}"
        ).remote(*args)

    async def run_on_node(
        self, node_id: str, function: Callable[..., Any], *args: Any, timeout: float
    ) -> Any:
        """``function(*args)`` on that node; its result, or its exception raised here."""
        reference = await self._call(self._submit, node_id, function, *args)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(reference.future()), timeout)
        except asyncio.TimeoutError:
            await self._call(_cancel, reference)
            raise

    async def start_on_node(
        self, node_id: str, function: Callable[..., Any], *args: Any
    ) -> asyncio.Future[Any]:
        """Start ``function(*args)`` there; the future resolves when it returns."""
        reference = await self._call(self._submit, node_id, function, *args)
        return asyncio.wrap_future(reference.future())

    async def close(self) -> None:
        if self._connected:
            import ray

            await self._call(ray.shutdown)
        self._thread.shutdown(wait=False)


def _cancel(reference: Any) -> None:
    import ray

    try:
        ray.cancel(reference, force=True)
    except Exception as exc:  # already finished, or its node is gone
        log.debug("cancel %s: %s", reference, exc)
