"""The threads of a session's workers: those a joining worker announces, the list a client
asks for (under session-wide ids), and every stopped worker continued at once.

Functions of the workers and ids they are given, so the mux only decides when to call them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from raydap.adapter.errors import Kind, UpstreamError
from raydap.adapter.sessions.routing import RoutingError
from raydap.adapter.sessions.translate import Translation
from raydap.adapter.sessions.workers import Worker
from raydap.protocol import Response


def _shown(thread: dict[str, Any], stopped: set[int], all_threads: bool) -> bool:
    """A session shows a worker's stopped threads and its main thread, or all of them."""
    return all_threads or thread.get("id") in stopped or thread.get("name") == "MainThread"


async def running_threads(worker: Worker, all_threads: bool) -> list[int]:
    """The threads of a worker that joins running (a live one), to announce: its main
    thread, or all of them for a session that shows all threads."""
    if worker.upstream.stops:
        return []
    try:
        answer = await worker.upstream.request("threads")
    except UpstreamError:
        return []
    threads = (answer.body or {}).get("threads") or [] if answer.success else []
    return [
        t["id"] for t in threads if isinstance(t.get("id"), int) and _shown(t, set(), all_threads)
    ]


async def thread_list(
    workers: list[Worker], ids: Translation, all_threads: bool
) -> list[dict[str, Any]]:
    """Every shown thread of ``workers``, named after its worker; raises RoutingError when
    no worker could list its threads."""
    answers = await asyncio.gather(
        *(w.upstream.request("threads") for w in workers), return_exceptions=True
    )
    if workers and not any(isinstance(a, Response) and a.success for a in answers):
        first = answers[0]
        raise RoutingError(
            str(first.message if isinstance(first, Response) else first), Kind.REFUSED
        )
    threads: list[dict[str, Any]] = []
    for worker, answer in zip(workers, answers, strict=True):
        if not isinstance(answer, Response) or not answer.success:
            continue
        stopped = set(worker.upstream.stops)
        for thread in (answer.body or {}).get("threads", []):
            if _shown(thread, stopped, all_threads):
                threads.append(
                    {
                        "id": ids.threads.to_client(worker.key, thread["id"]),
                        "name": f"{worker.label}: {thread.get('name', '')}",
                        "worker": worker.facts(),
                    }
                )
    return threads


async def continue_all(workers: Iterable[Worker]) -> list[str]:
    """Continue each stopped worker at its stop; the keys of those that went on."""

    async def resume(worker: Worker) -> str | None:
        stop = worker.upstream.stops.top()
        if stop is None:
            return None
        thread_id = (stop.body or {}).get("threadId", 0)
        answer = await worker.upstream.request("continue", {"threadId": thread_id})
        return worker.key if answer.success else None

    done = await asyncio.gather(*(resume(w) for w in list(workers)))
    return [key for key in done if key]
