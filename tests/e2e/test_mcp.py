"""A coding agent's MCP client against a real Ray head and bridge: the official one (the Python
SDK's stdio client, starting `raydap mcp` as an agent does) and an independent one (the MCP
Inspector's CLI, from npm, over stdio and over /mcp)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.mcp import catalog
from tests import waiting
from tests.e2e.conftest import JOBS, BridgeProcess, Job, break_line, require_ptrace, require_tools

ROOT = Path(__file__).resolve().parents[2]
DEMO_JOB = ROOT / "examples" / "demo_job.py"
INSPECTOR = ROOT / ".tools/mcp-inspector/node_modules/@modelcontextprotocol/inspector-cli"


def env_for(bridge: BridgeProcess) -> dict[str, str]:
    """What an agent's MCP configuration gives `raydap mcp`: where the bridge is, its token."""
    return dict(os.environ, RAYDAP_URL=bridge.url, RAYDAP_TOKEN=bridge.token or "")


@asynccontextmanager
async def agent(bridge: BridgeProcess) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "raydap.bridge", "mcp"], env=env_for(bridge)
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    result = await session.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    return json.loads(text)


async def until(session: ClientSession, tool: str, done: Callable[[Any], bool], **arguments: Any
                ) -> Any:  # fmt: skip
    """Ask again until the answer is what a person waits for (workers start, name themselves)."""
    last: list[Any] = []

    async def asked() -> Any:
        last[:] = [await call(session, tool, **arguments)]
        return last[0] if done(last[0]) else None

    return await waiting.until(asked, timeout=90, every=0.3, what=f"{tool} as awaited")


def inspector(*arguments: str, env: dict[str, str] | None = None) -> Any:
    """The Inspector's CLI, run from its own build folder (it finds its package.json from the
    working directory)."""
    done = subprocess.run(
        ["node", "index.js", *arguments], cwd=INSPECTOR / "build",
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def demo_paused(answer: dict[str, Any]) -> bool:
    """The demo job's three workers are paused, in its file, named with their job."""
    mine = [w for w in answer["workers"]
            if w.get("at", {}).get("path") == str(DEMO_JOB) and w.get("job")]  # fmt: skip
    return len(mine) == 3 and all(w["state"] == "paused" for w in mine)


async def test_an_agent_debugs_the_demo_job(bridge: BridgeProcess, ray_head: LocalRay) -> None:
    require_tools(INSPECTOR / ".installed")
    job = subprocess.Popen(
        [sys.executable, str(DEMO_JOB)], env=dict(os.environ, RAY_ADDRESS=ray_head.address),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        async with agent(bridge) as session:
            tools = {tool.name for tool in (await session.list_tools()).tools}
            assert {"list_workers", "evaluate", "set_breakpoints", "wait_for_pause"} <= tools
            assert len(tools) == len(catalog.TOOLS)  # a debug token is offered them all
            listed = await until(session, "list_workers", demo_paused)
            workers = [w for w in listed["workers"] if w.get("at", {}).get("path") == str(DEMO_JOB)]
            by_function = {w["at"]["function"]: w for w in workers}
            assert set(by_function) == {"square", "add", "divide"}
            assert by_function["divide"]["exception"]["type"] == "ZeroDivisionError"
            job_id = by_function["square"]["job"]

            square = {"job": job_id, "task": "square"}
            evaluated = await call(session, "evaluate", expression="y", filter=square)
            assert [r["result"] for r in evaluated["results"]] == ["49"]
            source = await call(session, "source", worker=by_function["square"]["id"])
            assert "→" in source["code"] and "breakpoint()" in source["code"]
            stepped = await call(session, "step", worker=by_function["square"]["id"])
            assert stepped["paused"]["at"]["line"] == source["line"] + 1  # `return y`
            assert stepped["paused"]["reason"] == "step"

            # An independent client: the Inspector, over stdio and over /mcp.
            listing = inspector(sys.executable, "-m", "raydap.bridge", "mcp",
                                "--method", "tools/list", env=env_for(bridge))  # fmt: skip
            assert {tool["name"] for tool in listing["tools"]} == tools
            answer = inspector(
                f"{bridge.url}/mcp", "--transport", "http",
                "--header", f"Authorization: Bearer {bridge.token}",
                "--method", "tools/call", "--tool-name", "evaluate",
                "--tool-arg", "expression=x", f"filter={json.dumps(square)}",
            )  # fmt: skip
            assert not answer["isError"]
            assert [r["result"] for r in json.loads(answer["content"][0]["text"])["results"]] == [
                "7"
            ]

            continued = await call(session, "continue_workers", filter={"job": job_id})
            assert sorted(continued["continued"]) == sorted(w["id"] for w in workers)
        out, _ = job.communicate(timeout=60)
        assert job.returncode == 0 and "OK" in out, out
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()


async def test_an_agent_stops_live_ranks_at_a_line_and_lets_them_finish(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    job = run_job("live_ranks.py")
    path, line = str(JOBS / "live_ranks.py"), break_line("live_ranks.py", "loop")
    ranks = {"job": job.job_id}
    async with agent(bridge) as session:
        await until(session, "list_workers", lambda a: len(a["workers"]) == 2, filter=ranks)

        given = await call(session, "set_breakpoints", path=path, lines=[line], job=job.job_id)
        assert len(given["workers"]) == 2
        assert all(w["breakpoints"] == [{"line": line, "verified": True}] for w in given["workers"])
        paused = await call(session, "wait_for_pause", filter=ranks, count=2, timeout_s=60)
        assert paused["count"] == 2 and "timed_out" not in paused
        assert {(w["at"]["line"], w["reason"]) for w in paused["paused"]} == {(line, "breakpoint")}

        evaluated = await call(session, "evaluate", expression="rank", filter=ranks)
        assert sorted(r["result"] for r in evaluated["results"]) == ["0", "1"]
        assert evaluated["distinct_values"] == 2

        cleared = await call(session, "clear_breakpoints", path=path, job=job.job_id)
        assert all(w["breakpoints"] == [] for w in cleared["workers"])
        await call(session, "evaluate", expression="setattr(self, 'finish', 1)", filter=ranks)
        continued = await call(session, "continue_workers", filter=ranks)
        assert len(continued["continued"]) == 2
    assert job.result() == "[1, 11]"


async def test_an_agent_finds_and_frees_the_straggler_of_a_hung_job(
    bridge: BridgeProcess, run_job: Callable[[str], Job]
) -> None:
    """docs/mcp.md's worked example: four torch.distributed ranks, rank 3 stuck in its data
    loader while ranks 0-2 wait in all_reduce."""
    pytest.importorskip("torch")
    require_ptrace()
    job = run_job("gloo_hang.py")

    def group(answer: dict[str, Any], function: str) -> list[int]:
        """The ranks whose stacks pass through ``function``."""
        ranks = {w["id"]: w.get("rank") for w in answer["workers"]}
        nodes, found = [answer["tree"]], set()
        while nodes:
            node = nodes.pop()
            nodes += node["children"]
            if node["function"].endswith(function):
                found |= {ranks.get(w) for w in node["workers"]}
        return sorted(r for r in found if r is not None)

    def hung(answer: dict[str, Any]) -> bool:
        return group(answer, "all_reduce") == [0, 1, 2] and group(answer, "fetch_batch") == [3]

    async with agent(bridge) as session:
        answer = await until(session, "stacks", hung, filter={"job": job.job_id})
        [straggler] = [w["id"] for w in answer["workers"] if w.get("rank") == 3]

        paused = await call(session, "pause_workers", worker=straggler)
        if paused.get("pending"):  # blocked in native code a moment: it pauses on return
            await call(session, "wait_for_pause", filter={"job": job.job_id}, timeout_s=60)
        source = await call(session, "source", worker=straggler, context_lines=3)
        assert source["function"] == "fetch_batch" and "while not ready:" in source["code"]
        seen = await call(session, "variables", worker=straggler)
        assert {"name": "ready", "value": "False", "type": "bool"} in seen["variables"]
        await call(session, "evaluate", worker=straggler, expression="ready = True")
        assert (await call(session, "continue_workers", worker=straggler))["continued"]
    assert job.result(timeout=120) == "[48.0, 48.0, 48.0, 48.0]"
