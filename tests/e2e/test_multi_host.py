"""Reach only the head: a client that can reach the Ray head and nothing else debugs a worker
on another node through the bridge.

Three network namespaces stand for three hosts: the Ray head (with the bridge), a second Ray
node, and the client, whose only route is to the head's address. The namespaces, addresses
and processes are this test's own; every process is stopped by its pid and the namespaces
are removed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from raydap.bridge.client.local_ray import process_tree, stop_process_tree
from tests.waiting import nodes_alive_script

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
HEAD_IP, NODE_IP, HEAD_FOR_CLIENT, CLIENT_IP = "10.77.1.1", "10.77.1.2", "10.77.2.1", "10.77.2.2"
TOKEN = "far-secret-0123456789abcdef"
RAY = str(Path(sys.executable).with_name("ray"))


@dataclass
class Hosts:
    head: str
    node: str
    client: str
    processes: list[subprocess.Popen[bytes]]
    temp: Path

    def run(self, namespace: str, command: list[str], log: str) -> subprocess.Popen[bytes]:
        """Start a process on a host, in a session of its own (so its tree can be stopped)."""
        out = open(self.temp / log, "wb")  # noqa: SIM115 (the process writes to it)
        process = subprocess.Popen(
            ["ip", "netns", "exec", namespace, *command], stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, cwd=ROOT,
        )  # fmt: skip
        self.processes.append(process)
        return process

    def python(self, namespace: str, code: str, timeout: float = 60) -> str:
        done = subprocess.run(
            ["ip", "netns", "exec", namespace, sys.executable, "-c", code],
            capture_output=True, text=True, timeout=timeout, cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def hosts() -> Iterator[Hosts]:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2")
    tag = str(os.getpid() % 100000)
    head, node, client = f"rdh{tag}", f"rdn{tag}", f"rdc{tag}"
    for namespace in (head, node, client):
        ip("netns", "add", namespace)
        ip("-n", namespace, "link", "set", "lo", "up")
    for (a, a_ip), (b, b_ip), name in (
        ((head, HEAD_IP), (node, NODE_IP), f"rn{tag}"),
        ((head, HEAD_FOR_CLIENT), (client, CLIENT_IP), f"rc{tag}"),
    ):
        ip("link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b")
        for namespace, device, address in ((a, f"{name}a", a_ip), (b, f"{name}b", b_ip)):
            ip("link", "set", device, "netns", namespace)
            ip("-n", namespace, "addr", "add", f"{address}/24", "dev", device)
            ip("-n", namespace, "link", "set", device, "up")
    found = Hosts(head, node, client, [], Path(tempfile.mkdtemp(prefix="rdp", dir="/tmp")))
    try:
        yield found
    finally:
        # Every host's processes at once, each by pid (Ray's daemons: SIGKILL after 3 s)
        first, *rest = (process.pid for process in found.processes)
        stop_process_tree(first, grace=3, also=lambda: {m for r in rest for m in process_tree(r)})
        for process in found.processes:
            process.wait(timeout=10)
        for namespace in (head, node, client):
            subprocess.run(["ip", "netns", "del", namespace], capture_output=True)
        shutil.rmtree(found.temp, ignore_errors=True)


def wait_for_nodes(hosts: Hosts, count: int) -> None:
    code = nodes_alive_script("http://127.0.0.1:8266", count)
    hosts.python(hosts.head, code, timeout=90)


CLIENT = f"""
import asyncio, json, socket, time, urllib.request
from raydap.bridge.client.dap_client import DapClient

request = urllib.request.Request(
    "http://{HEAD_FOR_CLIENT}:7800/api/v1/breakpoints",
    headers={{"Authorization": "Bearer {TOKEN}"}},
)
held = []
for _ in range(240):  # until the bridge is up and holds the far task
    try:
        records = json.loads(urllib.request.urlopen(request, timeout=5).read())["breakpoints"]
    except OSError:
        records = []
    held = [r for r in records if r["state"] == "paused" and r["task_name"] == "far"]
    if held:
        break
    time.sleep(0.25)

probe = socket.socket()  # straight to the worker's debugpy, as tools do today
probe.settimeout(2)
try:
    probe.connect(("{NODE_IP}", held[0]["debugger_port"]))
    node_reachable = True
except OSError:
    node_reachable = False


async def debug():
    client = await DapClient.connect("{HEAD_FOR_CLIENT}", 7801)
    await client.attach(breakpoint=held[0]["id"], token="{TOKEN}")
    stopped = await client.wait_event("stopped")
    thread = stopped.body["threadId"]
    frame = (await client.request("stackTrace", {{"threadId": thread}})).body["stackFrames"][0]
    answer = await client.request(
        "evaluate", {{"expression": "here, x", "frameId": frame["id"], "context": "repl"}}
    )
    await client.request("continue", {{"threadId": thread}})
    await client.close()
    return answer.body["result"]

print(json.dumps({{"node_reachable": node_reachable, "record": held[0],
                  "evaluated": asyncio.run(debug())}}))
"""


def test_a_client_that_reaches_only_the_head_debugs_a_worker_on_another_node(
    hosts: Hosts,
) -> None:
    (hosts.temp / "tokens").write_text(f"ops debug {TOKEN}\n")
    hosts.run(hosts.head, [RAY, "start", "--head", "--block", f"--node-ip-address={HEAD_IP}",
                           "--port=6380", "--include-dashboard=true", "--dashboard-host=0.0.0.0",
                           "--dashboard-port=8266", f"--temp-dir={hosts.temp}/head",
                           "--num-cpus=1", "--disable-usage-stats"], "head.log")  # fmt: skip
    wait_for_nodes(hosts, 1)
    hosts.run(hosts.node, [RAY, "start", "--block", f"--address={HEAD_IP}:6380",
                           f"--node-ip-address={NODE_IP}", f"--temp-dir={hosts.temp}/node",
                           "--num-cpus=1", '--resources={"far": 1}',
                           "--disable-usage-stats"], "node.log")  # fmt: skip
    wait_for_nodes(hosts, 2)
    hosts.run(hosts.head, [sys.executable, "-m", "raydap.bridge", "serve",
                           f"--address={HEAD_IP}:6380", "--host", HEAD_FOR_CLIENT,
                           "--token-file", str(hosts.temp / "tokens")], "bridge.log")  # fmt: skip
    job = hosts.run(hosts.head, ["env", f"RAY_ADDRESS={HEAD_IP}:6380", sys.executable,
                                 str(ROOT / "tests/e2e/jobs/far_task.py")], "job.log")  # fmt: skip

    seen = json.loads(hosts.python(hosts.client, CLIENT, timeout=120).strip().splitlines()[-1])
    assert seen["node_reachable"] is False  # the client has no route to the worker's node
    assert seen["record"]["node_ip"] == NODE_IP  # yet the worker there is listed ...
    assert seen["evaluated"] == f"('{NODE_IP}', 5)"  # ... and debugged through the bridge
    job.wait(timeout=60)
    assert f"RESULT (15, '{NODE_IP}')" in (hosts.temp / "job.log").read_text()
