"""A simulated cluster for the scale benchmark: a fake dashboard and many fake debugpys.

This is a fake because a thousand paused Ray workers cannot run on a 2-core machine. Each fake
worker is a small DAP server that behaves like debugpy 1.8 as the bridge sees it: the attach
handshake (``initialized`` after ``attach``; ``attach`` answered after ``configurationDone``),
a ``stopped`` event (``--live``: none until ``pause``), read-only requests, ``setBreakpoints``,
``continue`` and ``disconnect``. The dashboard lists
them as paused workers, and may also list real debugpy processes (``--real PORT``).

    python -m bench.fake_cluster --workers 1000 [--real 5678 ...]

prints ``READY <dashboard url>`` once everything listens.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
from typing import Any

from aiohttp import web

from raydap.protocol import Decoder, Request, encode, event, response_to

FRAMES = [
    {"id": 1, "name": "step", "line": 14, "column": 1, "source": {"path": "/fake/train.py"}},
    {"id": 2, "name": "actor_method_executor", "line": 740, "column": 1,
     "source": {"path": "/fake/ray/_private/function_manager.py"}},
    {"id": 3, "name": "main_loop", "line": 1069, "column": 1,
     "source": {"path": "/fake/ray/_private/worker.py"}},
]  # fmt: skip


class FakeWorker:
    def __init__(self, rank: int, live: bool = False) -> None:
        """A ``live`` one runs (``raydap.live``): held without a stop, it stops on ``pause``."""
        self.rank = rank
        self.port = 0
        self.live = live
        self.paused = not live

    async def serve(self) -> None:
        server = await asyncio.start_server(self._session, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder, seq = Decoder(), 0
        pending_attach: Request | None = None

        def send(message: Any) -> None:
            nonlocal seq
            seq += 1
            writer.write(encode(message, seq))

        while data := await reader.read(65536):
            for request in decoder.feed(data):
                if not isinstance(request, Request):
                    continue
                command = request.command
                if command == "attach":
                    pending_attach = request
                    send(event("initialized"))
                elif command == "configurationDone":
                    send(response_to(request))
                    if pending_attach is not None:
                        send(response_to(pending_attach))
                    if not self.live:
                        self.paused = True
                        send(event("stopped", {"reason": "breakpoint", "threadId": 1,
                                               "allThreadsStopped": True}))  # fmt: skip
                elif command == "pause":
                    send(response_to(request))
                    self.paused = True
                    send(event("stopped", {"reason": "pause", "threadId": 1,
                                           "allThreadsStopped": True}))  # fmt: skip
                elif command == "disconnect":
                    send(response_to(request))
                    await writer.drain()
                    writer.close()
                    return
                else:
                    send(response_to(request, self._answer(request)))
            await writer.drain()

    def _answer(self, request: Request) -> dict[str, Any] | None:
        command = request.command
        if command == "initialize":
            return {"supportsConfigurationDoneRequest": True}
        if command == "threads":
            return {"threads": [{"id": 1, "name": "MainThread"}]}
        if command == "stackTrace":
            return {"stackFrames": FRAMES, "totalFrames": len(FRAMES)}
        if command == "scopes":
            return {"scopes": [{"name": "Locals", "variablesReference": 7, "expensive": False}]}
        if command == "variables":
            return {
                "variables": [{"name": "rank", "value": str(self.rank), "variablesReference": 0}]
            }
        if command == "evaluate":
            return {"result": str(self.rank), "variablesReference": 0}
        if command == "continue":
            self.paused = False
            return {"allThreadsContinued": True}
        if command == "setBreakpoints":  # as debugpy answers for a file the worker has
            wanted = request.args.get("breakpoints") or []
            return {"breakpoints": [{"verified": True, "id": i, "line": b.get("line")}
                                    for i, b in enumerate(wanted)]}  # fmt: skip
        return None


def worker_id(index: int) -> str:
    return f"{index:012x}" + "f" * 44


#: What a simulated running rank's py-spy dump says (the dashboard's text form): most ranks
#: wait in one collective, every tenth is stuck in its data loader.
def traceback(pid: int) -> str:
    inner = (
        "    next_batch (loader.py:88)\n    train_step (train.py:40)\n" if pid % 10 == 0
        else "    all_reduce (collectives.py:12)\n    train_step (train.py:41)\n"
    )  # fmt: skip
    return (
        f"Process {pid}: ray::Rank.step\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
        f'Thread {pid} (idle): "MainThread"\n{inner}'
        "    step (train.py:60)\n    main_loop (worker.py:1069)\n"
        "    <module> (default_worker.py:323)\n"
    )


def dashboard(
    workers: list[FakeWorker], real_ports: list[int], running: int = 0
) -> web.Application:
    rows = [
        {"worker_id": worker_id(i), "ip": "127.0.0.1", "pid": 100000 + i, "node_id": "fake",
         "debugger_port": w.port, "num_paused_threads": 1, "is_alive": True}
        for i, w in enumerate(workers)
    ] + [
        {"worker_id": worker_id(len(workers) + i), "ip": "127.0.0.1", "pid": 1, "node_id": "real",
         "debugger_port": port, "num_paused_threads": 1, "is_alive": True}
        for i, port in enumerate(real_ports)
    ]  # fmt: skip

    running_rows = [
        {"worker_id": "b" * 4 + f"{i:08x}" + "f" * 44, "ip": "127.0.0.1", "pid": 200000 + i,
         "node_id": "fake", "num_paused_threads": 0, "is_alive": True, "worker_type": "WORKER"}
        for i in range(running)
    ]  # fmt: skip

    def state(result: list[dict[str, Any]]) -> web.Response:
        return web.json_response({"result": True, "data": {"result": {"result": result}}})

    async def list_workers(request: web.Request) -> web.Response:
        listed = list(zip(rows, workers + [None] * len(real_ports), strict=True))
        paused = [r for r, w in listed if w is None or w.paused]
        if request.query.get("filter_keys") == "is_alive":  # every live worker
            return state(paused + running_rows)
        if request.query.get("filter_keys") == "debugger_port":  # a port open, paused or not
            return state([{**r, "num_paused_threads": int(w is None or w.paused)}
                          for r, w in listed])  # fmt: skip
        return state(paused)

    async def list_tasks(request: web.Request) -> web.Response:
        wid = request.query.get("filter_values", "")
        if request.query.get("filter_keys") == "state":  # the running ones
            return state(
                [
                    {
                        "name": "Rank.step",
                        "state": "RUNNING",
                        "job_id": "01000000",
                        "worker_id": r["worker_id"],
                        "node_id": "fake",
                        "worker_pid": r["pid"],
                        "type": "ACTOR_TASK",
                    }
                    for r in running_rows
                ]
            )
        task = {"name": "Rank.step", "state": "RUNNING", "job_id": "01000000",
                "actor_id": "a" + wid[:11], "worker_id": wid}  # fmt: skip
        return state([task])

    async def worker_traceback(request: web.Request) -> web.Response:
        """As Ray's dashboard answers with profiling enabled: py-spy's text dump."""
        return web.Response(text=traceback(int(request.query.get("pid", "0"))))

    app = web.Application()
    app.router.add_get("/api/v0/workers", list_workers)
    app.router.add_get("/api/v0/tasks", list_tasks)
    app.router.add_get("/worker/traceback", worker_traceback)
    return app


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def main(count: int, real_ports: list[int], running: int = 0, live: bool = False) -> None:
    raise_fd_limit()
    workers = [FakeWorker(rank, live) for rank in range(count)]
    await asyncio.gather(*(w.serve() for w in workers))
    runner = web.AppRunner(dashboard(workers, real_ports, running), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    print(f"READY http://{host}:{port}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=1000)
    parser.add_argument("--real", type=int, nargs="*", default=[], help="real debugpy ports")
    parser.add_argument("--running", type=int, default=0, help="ranks running, not paused")
    parser.add_argument("--live", action="store_true", help="the workers are live: running")
    options = parser.parse_args()
    asyncio.run(main(options.workers, options.real, options.running, options.live))
