"""deploy/kuberay run as Kubernetes runs it (:mod:`tests.e2e.pods`): the head pod's containers
(Ray's, the bridge's) and a worker pod, from raycluster.yaml's own templates, as Ray's image
user, with the Secret as Kubernetes mounts it; a person's client in a third pod reaches only
the Service's address.

What a person does there: a live job's ranks listed, their merged stacks, a Pause and an
editor breakpoint; a hung job that is not live read on its nodes through the bridge's Ray
driver, and called a hang; ``raydap doctor`` run as docs/kubernetes.md says. The one change
to the manifest: the bridge's container is told to call a hang after 4 s of stillness
(RAYDAP_HANG_AFTER, RAYDAP_HANG_SAMPLE_INTERVAL), so that the test ends within its time.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import break_line
from tests.e2e.pods import Container, Network, Pod, stop_pods
from tests.kubernetes import container_env, manifest, service_variables
from tests.waiting import nodes_alive_script

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
JOBS = ROOT / "tests" / "e2e" / "jobs"
NAMESPACE = "team-a"
HEAD_IP, WORKER_IP, SERVICE_IP, CLIENT_IP = "10.79.0.1", "10.79.0.2", "10.79.1.1", "10.79.1.2"
#: The addresses Kubernetes would give the Services (only their variables use them).
CLUSTER_IPS = {"raydap": "10.96.0.17", "raycluster-head-svc": "10.96.0.18"}


@dataclass
class Cluster:
    head: Pod
    worker: Pod
    client_netns: str
    token: str
    base: Path

    @property
    def ray(self) -> Container:
        return self.head.containers["ray-head"]

    @property
    def bridge(self) -> Container:
        return self.head.containers["raydap"]


def kuberay_env(head_address: str) -> dict[str, str]:
    """What KubeRay adds to Ray's own container (only there)."""
    return {"RAY_ADDRESS": head_address, "RAY_CLUSTER_NAME": "raycluster", "RAY_PORT": "6379",
            "RAY_USAGE_STATS_KUBERAY_IN_USE": "1", "RAY_USAGE_STATS_ENABLED": "0"}  # fmt: skip


def ray_start(group: dict[str, Any], container: dict[str, Any], *, head: bool) -> list[str]:
    """KubeRay's ``ray start`` for a group: its rayStartParams, CPUs from its limits."""
    params = dict(group.get("rayStartParams") or {})
    cpus = str(container["resources"]["limits"]["cpu"])
    command = ["ray", "start", "--block", f"--num-cpus={cpus}"]
    command += ["--head", "--port=6379"] if head else [f"--address={HEAD_IP}:6379"]
    return command + [f"--{k}={v}" for k, v in params.items()]


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    if os.geteuid() != 0 or not all(shutil.which(t) for t in ("ip", "unshare", "nsenter")):
        pytest.skip("pods need root, iproute2 and util-linux")
    spec = manifest("raycluster.yaml")["spec"]
    service = manifest("service.yaml")
    secret = manifest("secret.yaml")
    token = secrets.token_hex(32)  # as docs/kubernetes.md makes it
    secrets_data = {secret["metadata"]["name"]: {"tokens": f"alice debug {token}\n"}}
    services = service_variables({
        "raydap": (CLUSTER_IPS["raydap"], service["spec"]["ports"]),
        "raycluster-head-svc": (CLUSTER_IPS["raycluster-head-svc"],
                                [{"name": "gcs", "port": 6379}]),
    })  # fmt: skip
    network = Network(str(os.getpid() % 100000))
    base = Path(tempfile.mkdtemp(prefix="rdpods", dir="/var/tmp"))
    base.chmod(0o755)
    pods: list[Pod] = []
    try:
        head_ns, worker_ns, client_ns = (network.namespace(n) for n in ("rph", "rpw", "rpc"))
        network.link(head_ns, HEAD_IP, worker_ns, WORKER_IP, default_for=(head_ns, worker_ns))
        network.link(head_ns, SERVICE_IP, client_ns, CLIENT_IP, default_for=(client_ns,))
        head_group, [worker_group] = spec["headGroupSpec"], spec["workerGroupSpecs"]
        head = Pod("head", head_group["template"]["spec"], head_ns, base, secrets_data)
        pods.append(head)
        for container in head.spec["containers"]:
            is_ray = container["name"] == "ray-head"
            kuberay = kuberay_env("127.0.0.1:6379") if is_ray else None
            env = container_env(container, namespace=NAMESPACE, pod_ip=HEAD_IP,
                                services=services, kuberay=kuberay)  # fmt: skip
            if not is_ray:
                env |= {"RAYDAP_HANG_AFTER": "4", "RAYDAP_HANG_SAMPLE_INTERVAL": "1"}
            command = ray_start(head_group, container, head=True) if is_ray else None
            head.start(container, env, command)
        wait_in(head.containers["ray-head"], "Ray's head", "http://127.0.0.1:8265", 1)
        worker = Pod("worker", worker_group["template"]["spec"], worker_ns, base, secrets_data)
        pods.append(worker)
        [container] = worker.spec["containers"]
        env = container_env(container, namespace=NAMESPACE, pod_ip=WORKER_IP, services=services,
                            kuberay=kuberay_env(f"{HEAD_IP}:6379"))  # fmt: skip
        worker.start(container, env, ray_start(worker_group, container, head=False))
        wait_in(head.containers["ray-head"], "the worker pod's node",
                "http://127.0.0.1:8265", 2)  # fmt: skip
        yield Cluster(head, worker, client_ns, token, base)
    finally:
        stop_pods(pods)
        network.remove()
        shutil.rmtree(base, ignore_errors=True)


def wait_in(container: Container, what: str, url: str, alive: int) -> None:
    """Wait, from inside a container, until the dashboard lists ``alive`` nodes."""
    code = nodes_alive_script(url, alive, tries=360)
    waited = container.exec([sys.executable, "-c", code])
    assert waited.wait(timeout=120) == 0, f"no {what}:\n{container.log.read_text()[-3000:]}"


def start_job(cluster: Cluster, script: str) -> tuple[subprocess.Popen[str], str]:
    """``kubectl exec ... -c ray-head -- python JOB``: a job driver in Ray's container."""
    job = cluster.ray.exec([sys.executable, str(JOBS / script)], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)  # fmt: skip
    assert job.stdout is not None
    for line in job.stdout:
        if line.startswith("JOB "):
            return job, line.split()[1]
    raise AssertionError(f"{script} printed no job id:\n{cluster.ray.log.read_text()[-2000:]}")


def test_a_person_debugs_through_the_service_of_the_manifests_pods(cluster: Cluster) -> None:
    live, live_id = start_job(cluster, "live_ranks.py")
    hung, hung_id = start_job(cluster, "hung_ranks.py")
    try:
        given = {"service": SERVICE_IP, "host": f"raydap.{NAMESPACE}.svc", "token": cluster.token,
                 "live_job": live_id, "hung_job": hung_id, "script": str(JOBS / "live_ranks.py"),
                 "loop": break_line("live_ranks.py", "loop")}  # fmt: skip
        client = subprocess.run(
            ["ip", "netns", "exec", cluster.client_netns, sys.executable,
             str(ROOT / "tests" / "e2e" / "pod_client.py"), json.dumps(given)],
            capture_output=True, text=True, timeout=240, cwd=ROOT,
        )  # fmt: skip
        logs = client.stdout + client.stderr + cluster.bridge.log.read_text()[-4000:]
        assert client.returncode == 0, logs
        seen = json.loads(client.stdout.strip().splitlines()[-1])
        assert live.wait(timeout=60) == 0 and live.stdout is not None
        assert "RESULT [5, 15]" in live.stdout.read()
    finally:
        for job in (live, hung):
            if job.poll() is None:
                job.kill()
            job.wait()
    # The bridge read its tokens as the image's user, and answers to the Service's names
    assert seen["healthz"]["status"] == "ok"
    assert seen["other_names"] == {"raydap": 200, "raydap.elsewhere.svc": 403,
                                   "evil.example": 403}  # fmt: skip
    # A live job: listed running on both pods, stacks read in the ranks, a Pause, a gutter click
    assert sorted(r["node_ip"] for r in seen["live_ranks"]) in (
        [HEAD_IP, WORKER_IP],
        [HEAD_IP] * 2,
        [WORKER_IP] * 2,
    )
    assert all(r["live"] and r["state"] == "running" for r in seen["live_ranks"])
    assert seen["live_stacks"]["workers"] == 2 and not seen["live_stacks"]["failed"]
    assert "Rank.run" in seen["live_stacks"]["functions"]
    assert seen["paused"]["function"] == "run"
    assert seen["verified"] == [True] and seen["stops"] == ["breakpoint", "breakpoint"]
    assert seen["listed_lines"] == [break_line("live_ranks.py", "loop")] * 2
    # A job that is not live: read on its nodes through the bridge's Ray driver, and hung
    assert {"wait_for_peers", "compute"} <= set(seen["hung_stacks"]), seen["hung_stacks"]
    assert seen["verdict"]["state"] == "suspected_hang"
    assert seen["driver"]["state"] == "joined", seen["driver"]


def test_doctor_in_the_bridges_container_finds_ray_and_the_bridge(cluster: Cluster) -> None:
    doctor = cluster.bridge.exec(["raydap", "doctor"], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True)  # fmt: skip
    said, _ = doctor.communicate(timeout=180)
    assert f"Ray cluster at {HEAD_IP}:6379" in said, said  # RAY_ADDRESS, as Ray resolves it
    assert "the bridge accepts this client's token" in said, said
    assert said.count("debugpy 1.") == 2, said  # a probe on each pod's node
    assert doctor.returncode == 0 and "all checks passed" in said, said
