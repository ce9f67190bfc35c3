"""Several paused workers in one session: list them, switch, evaluate in all."""

from __future__ import annotations

import asyncio

from raydap.bridge.client.pdb import evaluation
from raydap.bridge.client.pdb.debugger import Debugger
from raydap.bridge.client.pdb.handlers.registry import STAY, Next, handles


@handles("workers")
async def do_workers(dbg: Debugger, argument: str) -> Next:
    dbg.drain()
    await dbg.live_threads()
    for number, thread in enumerate(dbg.paused, 1):
        mark = "*" if thread == dbg.current else " "
        dbg.out(f"{mark} {number}  {dbg.worker_label(thread)}  ({dbg.paused[thread].reason})")
    return STAY


@handles("worker")
async def do_worker(dbg: Debugger, argument: str) -> Next:
    dbg.drain()
    threads = list(dbg.paused)
    if not argument.isdigit() or not 1 <= int(argument) <= len(threads):
        dbg.out(f"*** No paused worker {argument!r}: `workers` lists them")
        return STAY
    await dbg.select(threads[int(argument) - 1])
    return STAY


@handles("each")
async def do_each(dbg: Debugger, argument: str) -> Next:
    if not argument:
        dbg.out("*** Argument expected: each expression")
        return STAY
    dbg.drain()
    await dbg.live_threads()

    async def one(thread: int) -> str:
        trace = await dbg.client.request(
            "stackTrace", {"threadId": thread, "levels": 1}, check=False
        )
        frames = (trace.body or {}).get("stackFrames", []) if trace.success else []
        if not frames:
            return "*** not paused"
        answer = await dbg.client.request(
            "evaluate",
            {"expression": evaluation.shown(argument), "frameId": frames[0]["id"],
             "context": "repl"},
            check=False,
        )  # fmt: skip
        if not answer.success:
            return evaluation.error_line(answer.message)
        result = str((answer.body or {}).get("result", ""))
        return evaluation.decode(result) or result

    threads = list(dbg.paused)
    values = await asyncio.gather(*(one(thread) for thread in threads))
    width = max((len(dbg.worker_label(t)) for t in threads), default=0)
    for thread, value in zip(threads, values, strict=True):
        dbg.out(f"{dbg.worker_label(thread).ljust(width)}  {value}")
    return STAY
