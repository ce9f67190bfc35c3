"""Stacks of running workers, read where it costs least: in a held live worker itself, over
the debug connection the bridge already holds (``raydapStacks``, :mod:`raydap.live.stacks`),
and on their nodes with py-spy for every other (:mod:`raydap.bridge.cluster.remote_stacks`).

Read in the worker, a live job's stacks and hang samples need neither py-spy, nor ptrace, nor
the bridge's Ray driver: what a Kubernetes "restricted" pod allows. A live worker that could
not answer is read with py-spy after all. What it answers is outside input: checked and capped.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raydap.adapter import State, UpstreamError
from raydap.bridge.cluster.pyspy import MAX_THREADS, Frame, ThreadStack, short
from raydap.bridge.cluster.remote_stacks import Outcome, Reading, RemoteStacks, Target
from raydap.bridge.workers.holder import Holder
from raydap.protocol.extension import STACKS

#: How long a live worker may take to tell its stacks (its reader thread answers at once).
READ_TIMEOUT = 5.0
#: What a worker's answer may weigh.
MAX_BYTES = 4 * 1024 * 1024

_Text = Annotated[str, Field(max_length=4096)]


class _LiveFrame(BaseModel):
    model_config = ConfigDict(extra="ignore")
    function: _Text
    path: _Text
    line: int = Field(ge=0)
    locals: dict[_Text, _Text] | None = Field(None, max_length=64)


class _LiveThread(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: _Text
    os_thread_id: int | None = None
    frames: list[_LiveFrame] = Field(max_length=256)


class _LiveStacks(BaseModel):
    model_config = ConfigDict(extra="ignore")
    threads: list[_LiveThread] = Field(max_length=MAX_THREADS)
    environment: dict[_Text, _Text] = Field(default_factory=dict, max_length=16)


def reading(body: Any) -> Reading | str:
    """A worker's ``raydapStacks`` answer as a reading, or why it is not one."""
    if len(json.dumps(body)) > MAX_BYTES:
        return f"its stacks weigh over {MAX_BYTES} bytes"
    try:
        found = _LiveStacks.model_validate(body)
    except ValidationError as exc:
        return f"its stacks could not be read: {exc.errors()[0]['msg']}"
    if not found.threads:
        return "it has no thread to show"
    threads = [
        ThreadStack(
            name=t.name, os_thread_id=t.os_thread_id,
            frames=[
                Frame(function=f.function, path=f.path, line=f.line,
                      locals=None if f.locals is None
                      else {k: short(v) for k, v in f.locals.items()})
                for f in t.frames
            ],
        )
        for t in found.threads
    ]  # fmt: skip
    return Reading(threads, dict(found.environment))


async def _read_live(
    holder: Holder, rid: str, with_locals: bool, environment: tuple[str, ...]
) -> Outcome:
    upstream = holder.upstreams.get(rid)
    if upstream is None:
        return "the worker is gone"
    arguments = {"locals": with_locals, "environment": list(environment)}
    try:
        response = await upstream.request(STACKS, arguments, timeout=READ_TIMEOUT)
    except UpstreamError as exc:
        return str(exc)
    if not response.success:
        return f"it did not tell its stacks: {response.message}"
    return reading(response.body)


def _live(holder: Holder, rid: str) -> bool:
    record = holder.registry.get(rid)
    upstream = holder.upstreams.get(rid)
    return (
        record is not None
        and STACKS in record.answers
        and upstream is not None
        and upstream.state is State.RUNNING
    )


async def read_running(
    holder: Holder,
    remote: RemoteStacks,
    targets: dict[str, Target],
    flags: tuple[str, ...] = (),
    environment: tuple[str, ...] = (),
) -> dict[str, Outcome]:
    """Each target's threads, as :meth:`RemoteStacks.read`: held live workers read in
    themselves (``--locals`` in ``flags`` reads their locals), the rest, and any live worker
    that could not answer, with py-spy. ``--native`` frames need py-spy: then all are."""
    live = [] if "--native" in flags else [rid for rid in targets if _live(holder, rid)]
    with_locals = "--locals" in flags
    answers = await asyncio.gather(*(_read_live(holder, r, with_locals, environment) for r in live))
    outcomes: dict[str, Outcome] = {
        rid: found for rid, found in zip(live, answers, strict=True) if isinstance(found, Reading)
    }
    rest = {rid: target for rid, target in targets.items() if rid not in outcomes}
    return {**outcomes, **(await remote.read(rest, flags, environment) if rest else {})}
