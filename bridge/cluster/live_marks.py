"""What ``raydap.live`` workers leave in GCS for the bridge, and the bridge's own note there.

A live worker marks itself before it opens its debugger port (:mod:`raydap.live`), so a running
worker with an open port and a mark is one to hold for its whole life. The bridge also keeps
the breakpoints its live workers have under one key, so a bridge that restarts gives them back.
Everything read here is outside input: size-capped and validated.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raydap.bridge.cluster.gcs_thread import GcsThread
from raydap.bridge.cluster.locate import gcs_client
from raydap.live import NAMESPACE, mark_key

log = logging.getLogger(__name__)

_NAMESPACE = NAMESPACE.encode()
#: Where the bridge keeps its live workers' breakpoints, for the one that restarts.
BREAKPOINTS_KEY = b"bridge:breakpoints"
MAX_MARK_BYTES = 64 * 1024
MAX_BREAKPOINTS_BYTES = 4 * 1024 * 1024


class LiveMark(BaseModel):
    model_config = ConfigDict(extra="ignore")

    pid: int | None = None
    #: The worker's working directory: its Ray package directory when the job ships a
    #: ``working_dir``, which lets editor paths map to it before it ever stops.
    cwd: str | None = None
    #: The worker's Python (major, minor).
    python: tuple[int, int] | None = None
    #: Whether its ``breakpoint()`` and post-mortem stops land inside Ray's hook (Python 3.12+
    #: where ``raydap.live`` could not patch the hook) and need moving by the bridge
    #: (:mod:`raydap.adapter.upstream.ray_hook`); None from a ``raydap.live`` that did not say.
    stops_in_ray_hook: bool | None = None
    #: What names its rank in its environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``).
    env: dict[str, str] = Field(default_factory=dict, max_length=16)
    #: The private hooks of debugpy and Ray raydap uses that this worker lacks, with why
    #: (:mod:`raydap.live.compat`).
    unsupported: tuple[Annotated[str, Field(max_length=500)], ...] = Field((), max_length=64)
    #: raydap's own requests it answers (``raydapStacks``): no other is sent to it.
    answers: tuple[Annotated[str, Field(max_length=64)], ...] = Field((), max_length=16)
    #: Its Ray job (hex): the job's kept breakpoints are the ones it is given when held.
    job: Annotated[str, Field(max_length=64, pattern=r"^[0-9a-fA-F]+$")] | None = None


class Marks(Protocol):
    """Where live marks and the kept breakpoints are (GCS; a dict in tests and benchmarks)."""

    async def read(self, worker_ids: list[str]) -> dict[str, LiveMark]: ...

    async def forget(self, worker_id: str) -> None: ...

    async def load_breakpoints(self) -> list[dict[str, Any]]: ...

    async def save_breakpoints(self, requests: list[dict[str, Any]]) -> None: ...


class GcsMarks:
    """The marks in GCS internal KV, read with Ray's client off the event loop (in a daemon
    thread: :mod:`.gcs_thread`)."""

    def __init__(self, gcs_address: str) -> None:
        self.gcs_address = gcs_address
        self._client: Any = None
        self._thread = GcsThread("gcs live marks")

    def _gcs(self) -> Any:
        if self._client is None:
            self._client = gcs_client(self.gcs_address)
        return self._client

    async def read(self, worker_ids: list[str]) -> dict[str, LiveMark]:
        def read() -> dict[str, LiveMark]:
            found = {}
            for worker_id in worker_ids:
                value = self._gcs().internal_kv_get(
                    mark_key(worker_id).encode(), namespace=_NAMESPACE
                )
                mark = _parse(value, worker_id)
                if mark is not None:
                    found[worker_id] = mark
            return found

        return await self._thread.call(read)

    async def forget(self, worker_id: str) -> None:
        key = mark_key(worker_id).encode()
        await self._thread.call(
            lambda: self._gcs().internal_kv_del(key, False, namespace=_NAMESPACE)
        )

    async def load_breakpoints(self) -> list[dict[str, Any]]:
        value = await self._thread.call(
            lambda: self._gcs().internal_kv_get(BREAKPOINTS_KEY, namespace=_NAMESPACE)
        )
        if not value or len(value) > MAX_BREAKPOINTS_BYTES:
            return []
        try:
            requests = json.loads(value)
        except ValueError:
            return []
        return [r for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []

    async def save_breakpoints(self, requests: list[dict[str, Any]]) -> None:
        value = json.dumps(requests).encode()
        if len(value) > MAX_BREAKPOINTS_BYTES:
            log.warning("live breakpoints too large to keep in GCS (%d bytes)", len(value))
            return
        await self._thread.call(
            lambda: self._gcs().internal_kv_put(BREAKPOINTS_KEY, value, True, namespace=_NAMESPACE)
        )


def _parse(value: bytes | None, worker_id: str) -> LiveMark | None:
    if not value or len(value) > MAX_MARK_BYTES:
        return None
    try:
        return LiveMark.model_validate(json.loads(value))
    except (ValueError, ValidationError) as exc:
        log.info("ignoring a malformed live mark of %s: %s", worker_id[:12], exc)
        return None
