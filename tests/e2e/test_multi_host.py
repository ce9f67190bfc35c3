"""Two hosts and a client: a client that can reach the Ray head and nothing else debugs a
worker on another node through the bridge; then that node is lost under a job's rank, and the
job's verdict names the rank lost with it.

Three network namespaces stand for three hosts: the Ray head (with the bridge), a second Ray
node, and the client, whose only route is to the head's address. The namespaces, addresses
and processes are this test's own; every process is stopped by its pid and the namespaces
are removed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
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
    #: The network devices between the head and the node: the head's end, the node's.
    link: tuple[str, str] = ("", "")

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
    temp = Path(tempfile.mkdtemp(prefix="rdp", dir="/tmp"))
    found = Hosts(head, node, client, [], temp, (f"rn{tag}a", f"rn{tag}b"))
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


@pytest.fixture(scope="module")
def cluster(hosts: Hosts) -> Hosts:
    """A Ray head (resource ``near``) with the bridge, and a node (``far``). The head calls a
    node lost after 2 s of failed health checks (Ray's default: 15 s)."""
    (hosts.temp / "tokens").write_text(f"ops debug {TOKEN}\n")
    health = ["env", "RAY_health_check_period_ms=500", "RAY_health_check_failure_threshold=4"]
    hosts.run(hosts.head, [*health, RAY, "start", "--head", "--block",
                           f"--node-ip-address={HEAD_IP}", "--port=6380",
                           "--include-dashboard=true", "--dashboard-host=0.0.0.0",
                           "--dashboard-port=8266", f"--temp-dir={hosts.temp}/head",
                           "--num-cpus=1", '--resources={"near": 1}',
                           "--disable-usage-stats"], "head.log")  # fmt: skip
    wait_for_nodes(hosts, 1)
    hosts.run(hosts.node, [RAY, "start", "--block", f"--address={HEAD_IP}:6380",
                           f"--node-ip-address={NODE_IP}", f"--temp-dir={hosts.temp}/node",
                           "--num-cpus=1", '--resources={"far": 1}',
                           "--disable-usage-stats"], "node.log")  # fmt: skip
    wait_for_nodes(hosts, 2)
    hosts.run(hosts.head, [sys.executable, "-m", "raydap.bridge", "serve",
                           f"--address={HEAD_IP}:6380", "--host", HEAD_FOR_CLIENT,
                           "--token-file", str(hosts.temp / "tokens"),
                           "--hang-sample-interval", "1"], "bridge.log")  # fmt: skip
    return hosts


def test_a_client_that_reaches_only_the_head_debugs_a_worker_on_another_node(
    cluster: Hosts,
) -> None:
    hosts = cluster
    job = hosts.run(hosts.head, ["env", f"RAY_ADDRESS={HEAD_IP}:6380", sys.executable,
                                 str(ROOT / "tests/e2e/jobs/far_task.py")], "job.log")  # fmt: skip

    seen = json.loads(hosts.python(hosts.client, CLIENT, timeout=120).strip().splitlines()[-1])
    assert seen["node_reachable"] is False  # the client has no route to the worker's node
    assert seen["record"]["node_ip"] == NODE_IP  # yet the worker there is listed ...
    assert seen["evaluated"] == f"('{NODE_IP}', 5)"  # ... and debugged through the bridge
    job.wait(timeout=60)
    assert f"RESULT (15, '{NODE_IP}')" in (hosts.temp / "job.log").read_text()


BRIDGE_API = f"""
import json, sys, time, urllib.request

def get(path):
    request = urllib.request.Request("http://{HEAD_FOR_CLIENT}:7800" + path,
                                     headers={{"Authorization": "Bearer {TOKEN}"}})
    return json.loads(urllib.request.urlopen(request, timeout=5).read())
"""

RANKS_HELD = (
    BRIDGE_API
    + """
for _ in range(240):  # until both ranks are held, with their pids
    ranks = {w["rank"]: w for w in get("/api/v1/workers")["workers"]
             if w["rank"] is not None and w["live"] and w["task_name"] == "Rank.train"}
    if sorted(ranks) == [0, 1]:
        print(json.dumps(ranks))
        break
    time.sleep(0.25)
else:
    raise SystemExit(f"the two ranks were not held: {get('/api/v1/workers')['workers']}")
"""
)

NAMED_LOST = (
    BRIDGE_API
    + """
job = sys.argv[1]
started, verdict = time.monotonic(), None
while time.monotonic() - started < 100:
    verdict = next((v for v in get("/api/v1/hangs")["jobs"] if v["job"] == job), None)
    if verdict and any("was lost" in (d["cause"] or "") for d in verdict["dead"]):
        print(json.dumps({"verdict": verdict, "after": time.monotonic() - started}))
        break
    time.sleep(0.25)
else:
    raise SystemExit(f"the lost rank was not named: {verdict}")
"""
)


@pytest.mark.timeout(300)  # its own waits (90 s, 100 s) say what they saw when they end
def test_a_node_lost_under_a_rank_is_named_in_its_jobs_verdict(cluster: Hosts) -> None:
    """Rank 1 of a gloo job runs on the node; every process of the node is killed at once, as
    a machine that is gone. Rank 0 waits on its own node; the job's verdict names rank 1
    dead, its node lost, as soon as Ray says so. (Last in this module: the node is gone.)"""
    pytest.importorskip("torch", reason="torch==2.13.0 is in the test extras on Python 3.11")
    hosts = cluster
    job = str(ROOT / "tests/e2e/jobs/two_node_ranks.py")
    hosts.run(hosts.head, ["env", f"RAY_ADDRESS={HEAD_IP}:6380", f"HEAD_IP={HEAD_IP}",
                           f"GLOO_DEVICES={','.join(hosts.link)}", sys.executable, job],
              "ranks.log")  # fmt: skip
    try:
        ranks = json.loads(hosts.python(hosts.head, RANKS_HELD, timeout=90).strip())
    except AssertionError as exc:
        raise AssertionError((hosts.temp / "ranks.log").read_text()[-3000:]) from exc
    far = ranks["1"]
    assert (far["node_ip"], ranks["0"]["node_ip"]) == (NODE_IP, HEAD_IP)
    node = hosts.processes[1]  # the node's `ray start --block`: its raylet and workers
    for pid in process_tree(node.pid):
        os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    said = subprocess.run(
        ["ip", "netns", "exec", hosts.head, sys.executable, "-c", NAMED_LOST, far["job_id"]],
        capture_output=True, text=True, timeout=150, cwd=ROOT,
    )  # fmt: skip
    assert said.returncode == 0, (
        said.stdout + said.stderr + (hosts.temp / "bridge.log").read_text()[-3000:]
    )
    verdict = json.loads(said.stdout.strip())["verdict"]
    print(
        f"rank 1 named lost {time.monotonic() - killed:.1f} s after its node:", verdict["summary"]
    )
    [dead] = verdict["dead"]
    assert (dead["rank"], dead["pid"], dead["node_ip"]) == (1, far["pid"], NODE_IP)
    assert dead["cause"].startswith(f"its node {NODE_IP} was lost"), dead
    assert verdict["state"] == "suspected_hang"
    assert verdict["summary"].startswith(f"rank 1 died (pid {far['pid']} on {NODE_IP}: its node")
