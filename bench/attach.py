"""P2-P3b of ``python -m bench.run``: attaching to a held worker and asking it, directly against
debugpy and through the bridge over TCP, WebSocket and ``raydap dap`` (a process per session)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from bench.harness import (
    debuggee,
    fake_cluster,
    http,
    ms,
    serve,
    timed,
    until,
)
from raydap.adapter import StreamChannel
from raydap.bridge.client.dap_client import DapClient


async def p2_p3(rounds: int) -> dict[str, Any]:
    with (
        debuggee() as direct_port,
        debuggee() as held_port,
        fake_cluster(0, (held_port,)) as url,
        serve("--dashboard-url", url) as (_, http_url, dap_port),
    ):

        def held() -> list[dict[str, Any]]:
            records = http(http_url + "/api/v1/breakpoints")["breakpoints"]
            return [r for r in records if r["location"]]

        record_id = (await until(held, 30))[0]["id"]
        figures: dict[str, Any] = {}
        ws_url = http_url.replace("http://", "ws://") + "/dap"
        stdio = StdioAdapter(http_url)
        sides: list[tuple[str, int | str | StdioAdapter, dict[str, Any]]] = [
            ("direct", direct_port, {"justMyCode": False}),
            ("bridge_tcp", dap_port, {"breakpoint": record_id}),
            ("bridge_ws", ws_url, {"breakpoint": record_id}),
            ("bridge_stdio", stdio, {"breakpoint": record_id}),
        ]
        try:
            for side, where, args in sides:
                figures[side] = await _attach_and_ask(where, args, rounds)
        finally:
            await stdio.close()
    return figures


class StdioAdapter:
    """``raydap dap`` processes, as editors start them, relaying to the bridge at ``url``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.processes: list[asyncio.subprocess.Process] = []

    async def connect(self) -> DapClient:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "raydap.bridge", "dap",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env=dict(os.environ, RAYDAP_URL=self.url),
        )  # fmt: skip
        self.processes.append(child)
        assert child.stdout is not None and child.stdin is not None
        return DapClient(StreamChannel(child.stdout, child.stdin, peer="raydap dap"))

    async def close(self) -> None:
        for child in self.processes:
            if child.returncode is None:
                child.kill()
            await child.wait()


async def _connect(where: int | str | StdioAdapter) -> DapClient:
    """A DAP client on a TCP port, a ``ws://`` URL, or through ``raydap dap``."""
    if isinstance(where, StdioAdapter):
        return await where.connect()
    if isinstance(where, str):
        return await DapClient.connect_websocket(where)
    return await DapClient.connect("127.0.0.1", where)


async def _attach_and_ask(
    where: int | str | StdioAdapter, args: dict[str, Any], rounds: int
) -> dict[str, Any]:
    attaches = []
    for _ in range(rounds):
        start = time.perf_counter()
        client = await _connect(where)
        await client.attach(**args)
        thread_id = (await client.wait_event("stopped")).body["threadId"]
        await client.request("stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": 1})
        attaches.append(time.perf_counter() - start)
        await client.close()
        await asyncio.sleep(0.2)  # the direct debuggee pauses again for the next client
    client = await _connect(where)
    await client.attach(**args)
    thread_id = (await client.wait_event("stopped")).body["threadId"]
    frames = (await client.request("stackTrace", {"threadId": thread_id})).body["stackFrames"]
    scopes = (await client.request("scopes", {"frameId": frames[0]["id"]})).body["scopes"]
    reference = scopes[0]["variablesReference"]
    requests = [
        ("threads", None),
        ("stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": 20}),
        ("scopes", {"frameId": frames[0]["id"]}),
        ("variables", {"variablesReference": reference}),
    ]
    read_only = []
    for _ in range(rounds * 5):
        for command, arguments in requests:
            read_only.append(await timed(lambda c=command, a=arguments: client.request(c, a)))
    uncached = []
    for i in range(rounds * 2):
        expression = {"expression": f"payload['rank'] + {i}", "frameId": frames[0]["id"],
                      "context": "watch"}  # fmt: skip
        uncached.append(await timed(lambda e=expression: client.request("evaluate", e)))
    await client.close()
    return {"attach": ms(attaches), "read_only": ms(read_only), "uncached": ms(uncached)}
