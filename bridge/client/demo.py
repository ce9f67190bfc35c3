"""``raydap demo``: a whole session on one machine, for a first look.

Starts a local Ray head (unless one is given), the bridge, and ``examples/demo_job.py``, whose
three workers pause; then says how to attach. ``--headless`` plays the person too: it attaches
to each paused worker through the bridge, prints its stack and locals, continues it, and
succeeds only if the job finishes with the right results.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from pathlib import Path

from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.client.render import breakpoints_table
from raydap.bridge.cluster.locate import Cluster, ClusterNotFound, locate
from raydap.bridge.server import directories
from raydap.bridge.server.bridge import Bridge, ListenError, prepare_directories
from raydap.bridge.server.settings import Settings
from raydap.bridge.workers.records import RecordState

DEMO_JOB = Path(__file__).resolve().parents[2] / "examples" / "demo_job.py"
EXPECTED_PAUSES = 3


def say(text: str) -> None:
    print(text, flush=True)


class Stopped(Exception):
    """The demo ends early for a reason a person is told (a bridge that cannot start ...)."""


async def run_demo(*, headless: bool, port: int, dap_port: int, timeout: float = 120.0) -> int:
    """Run the demo; every way it ends says why. A cancellation (Ctrl-C, SIGTERM: see
    :func:`raydap.bridge.client.cli.cmd_demo`) stops the job, the bridge and the Ray head."""
    if not DEMO_JOB.exists():
        say(f"raydap demo needs the example job at {DEMO_JOB} (run it from a raydap checkout)")
        return 2
    # The demo's failed task waits to be looked at for as long as the demo runs (a bridge
    # on a cluster lets a post-mortem stop go after --post-mortem-hold, once captured).
    settings = Settings(port=port, dap_port=dap_port, post_mortem_hold=7 * 86_400)
    local: LocalRay | None = None
    address = os.environ.get("RAY_ADDRESS")
    try:
        # Before Ray starts: a directory that cannot be used fails in milliseconds, not after it.
        prepare_directories(settings)
        if address:
            url = locate(address, None).dashboard_url
        else:
            say("starting a local Ray head (loopback, temporary directory) ...")
            local = await asyncio.to_thread(LocalRay().start)
            address, url = local.address, local.dashboard_url
            say(f"Ray head at {address}, dashboard {url}")
        return await _with_cluster(settings, address, url, headless, timeout)
    except (ClusterNotFound, Stopped, directories.DirectoryError) as exc:
        say(f"raydap demo: {exc}")
        return 2
    finally:
        if local is not None:
            say("stopping the local Ray head ...")
            await asyncio.to_thread(local.stop)
            say("stopped")


async def _with_cluster(
    settings: Settings, address: str, url: str, headless: bool, timeout: float
) -> int:
    bridge = Bridge(settings, Cluster(url, address))
    try:
        await bridge.start()  # stops what it started if it fails
    except ListenError as exc:
        raise Stopped(f"the bridge cannot start: {exc}") from None
    try:
        return await _with_bridge(bridge, address, headless, timeout)
    finally:
        say("stopping the bridge ...")
        await bridge.stop()


async def _with_bridge(bridge: Bridge, address: str, headless: bool, timeout: float) -> int:
    dap_host, dap_port = bridge.dap_address
    say(f"raydap bridge: HTTP {bridge.url}, DAP {dap_host}:{dap_port}")
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"raydap-demo-job-{os.getpid()}.log"
    with open(log_path, "wb") as log:  # noqa: ASYNC230 (a local file, opened once)
        # A session of its own: a Ctrl-C or a SIGTERM to the terminal's process group reaches
        # the demo, which stops the job in order; the job's driver would otherwise die first.
        job = await asyncio.create_subprocess_exec(
            sys.executable, str(DEMO_JOB), env=dict(os.environ, RAY_ADDRESS=address),
            stdout=log, stderr=log, start_new_session=True,
        )  # fmt: skip
    try:
        say(f"running {DEMO_JOB.name} (its output: {log_path}) ...")
        if not await _wait_for_pauses(bridge, job, timeout):
            say(f"the demo job did not pause as expected; see {log_path}")
            return 1
        records = [r.model_dump(mode="json") for r in bridge.registry.records()]
        say("\n" + breakpoints_table(records) + "\n")
        if headless:
            for record in bridge.registry.records():
                await _inspect_and_continue(record.id, dap_host, dap_port, bridge.debug_secret)
        else:
            _explain(bridge, records[0]["id"])
        code = await asyncio.wait_for(job.wait(), None if not headless else timeout)
        output = log_path.read_text(errors="replace")
        result = next((line for line in output.splitlines() if "demo job results" in line), "")
        say(result or f"the demo job exited with {code}; see {log_path}")
        ok = code == 0 and result.endswith("OK")
        say("the demo job finished" + ("" if ok else f" wrong (see {log_path})"))
        return 0 if ok else 1
    finally:
        if job.returncode is None:
            say("stopping the demo job ...")
            job.terminate()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(job.wait(), 3)
            if job.returncode is None:
                job.kill()
                await job.wait()


async def _wait_for_pauses(bridge: Bridge, job: asyncio.subprocess.Process, timeout: float) -> bool:
    """Until the demo's workers are held and located (and named, which Ray reports about a
    second later: a few seconds are allowed for it)."""
    deadline = time.monotonic() + timeout
    named_by: float | None = None
    while time.monotonic() < deadline and job.returncode is None:
        records = bridge.registry.records()
        located = [r for r in records if r.state == RecordState.PAUSED and r.location is not None]
        if len(located) >= EXPECTED_PAUSES:
            named_by = named_by or time.monotonic() + 5
            if all(r.task_name for r in located) or time.monotonic() > named_by:
                return True
        await asyncio.sleep(0.1)
    return False


async def _inspect_and_continue(record_id: str, host: str, port: int, token: str | None) -> None:
    client = await DapClient.connect(host, port)
    try:
        await client.attach(breakpoint=record_id, token=token)
        stopped = await client.wait_event("stopped")
        body = stopped.body or {}
        thread_id = body["threadId"]
        frames = (await client.request("stackTrace", {"threadId": thread_id})).body["stackFrames"]
        say(f"[{record_id}] stopped ({body.get('reason')}"
            + (f": {body.get('text')}: {body.get('description')}" if body.get("text") else "")
            + ")")  # fmt: skip
        for frame in frames[:4]:
            path = (frame.get("source") or {}).get("path", "?")
            say(f"    {frame['name']} at {path}:{frame['line']}")
        scopes = (await client.request("scopes", {"frameId": frames[0]["id"]})).body["scopes"]
        ref = scopes[0]["variablesReference"]
        variables = (await client.request("variables", {"variablesReference": ref})).body
        shown = [f"{v['name']}={v['value']}" for v in variables["variables"]
                 if v.get("presentationHint", {}).get("kind") != "class"
                 and not v["name"].endswith(" variables")]  # fmt: skip
        say(f"    locals: {', '.join(shown)}")
        await client.request("continue", {"threadId": thread_id})
        say(f"[{record_id}] continued")
    finally:
        await client.close()


def _explain(bridge: Bridge, example_id: str) -> None:
    raydap = Path(sys.executable).with_name("raydap")
    with contextlib.suppress(ValueError):
        raydap = raydap.relative_to(Path.cwd())
    dap_port = bridge.dap_address[1]
    # The token only to a terminal (see raydap serve's banner); elsewhere, where to find it.
    secret = bridge.debug_secret if sys.stdout.isatty() else None
    token = secret or "<the token in the connection file>"
    login = f"{bridge.url}/?token={secret}" if secret else f"{bridge.url}/ (the same token)"
    say(
        f"""The three workers above are paused and held by the bridge. To attach:

  terminal:   {raydap} list            {raydap} attach {example_id}
              {raydap} eval 'x'        {raydap} continue --all
              (they find this bridge and its token in {bridge.connection_file})
  web page:   {login}
  VS Code:    the raydap extension (make vsix; code --install-extension
              vscode-ext/raydap.vsix) lists them in Run and Debug > Ray once given the
              token (Ray: Set Bridge Token), or a launch.json entry of the stock Python
              debugger: {{"type": "debugpy", "request": "attach", "connect": {{"host":
              "127.0.0.1", "port": {dap_port}}}, "breakpoint": "{example_id}",
              "token": "{token}"}}  (leave out "breakpoint" to follow all three)
  any DAP client: start `{raydap} dap --breakpoint {example_id}` as its debug
              adapter (stdin/stdout; `ssh HOST raydap dap` from another machine; no
              token needed), or connect to 127.0.0.1:{dap_port} and send
              {{"command": "attach", "arguments": {{"breakpoint": "{example_id}",
              "token": "{token}"}}}}   (docs/clients.md: every editor)
  coding agents: `{raydap} mcp` as an MCP server (stdio), or {bridge.url}/mcp with
              the token as a Bearer header   (docs/mcp.md: Claude Code, Cursor, Codex ...)

The job finishes once all three are continued ({raydap} continue --all).
Ctrl-C stops the demo."""
    )
