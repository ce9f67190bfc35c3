"""A worker's files as a session sees them: where its package lies (learned before its
breakpoints are mapped), and the text of a file the client cannot open, read through the
worker itself (debugpy serves no file by path, and the worker may be on another node)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from typing import Any

from raydap.adapter.errors import Kind, UpstreamError
from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.sessions.routing import RoutingError
from raydap.adapter.sessions.translate import Translation
from raydap.adapter.sessions.workers import Worker
from raydap.adapter.upstream import in_worker
from raydap.protocol import Request, Response, response_to


async def learn_paths(paths: PathMapper, worker: Worker) -> None:
    """Learn the worker's package directory (from the directory a live worker reports, or by
    reading the stack once)."""
    if not paths.active:
        return
    if worker.working_dir:
        paths.to_client(worker.key, worker.working_dir)
    if not worker.upstream.stops:
        return
    try:
        _, frames = await worker.upstream.stack(levels=50)
    except UpstreamError:
        return
    for frame in frames:
        path = (frame.get("source") or {}).get("path")
        if isinstance(path, str):
            paths.to_client(worker.key, path)


async def read_unopenable(
    request: Request,
    workers: Mapping[str, Worker],
    ids: Translation,
    audit: Callable[[str, str, dict[str, Any]], None],
) -> Response:
    """Answer ``source`` for a reference :meth:`Translation.unopenable` names: the file read
    in a paused frame of its worker."""
    found = ids.unopenable(request.args["sourceReference"])
    assert found is not None  # routed here because it is one
    key, path = found
    # Read-only (a view token may), but it runs bridge-written code in the worker: audited.
    audit("source", key, {"path": path})
    worker = workers.get(key)
    frame = next((c for c in ids.frames.ids_of(key)), None) if worker else None
    if worker is None or frame is None:
        raise RoutingError(f"{path} can be read only while its worker is paused", Kind.NOT_PAUSED)
    worker_frame = ids.frames.to_worker(frame)[1]  # type: ignore[index]
    answer = await worker.upstream.request(
        "evaluate",
        {"expression": in_worker.read_file(path), "frameId": worker_frame, "context": "clipboard"},
    )
    if not answer.success:
        raise RoutingError(f"cannot read {path} in {worker.label}: {answer.message}", Kind.REFUSED)
    try:
        text = ast.literal_eval(str((answer.body or {}).get("result", "")))
    except (ValueError, SyntaxError):
        raise RoutingError(f"cannot read {path} in {worker.label}", Kind.REFUSED) from None
    content = "# file too large to show" if text is None else str(text)
    return response_to(request, {"content": content, "mimeType": "text/x-python"})
