"""A throwaway single-node Ray head on loopback, for ``raydap demo`` and the tests.

``ray start --head --block`` runs in a new session, so the head and every process it starts
share its process group; stopping signals that group by the id of the process we started and
touches no other Ray on the machine. The head's environment carries a mark (:data:`MARK`) that
every process under it inherits: a debugpy adapter whose worker died is reparented to init and
in no tree, and is found by it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import psutil

from raydap.bridge.client.ports import free_ports
from raydap.bridge.cluster.ray_auth import dashboard_headers, token_source

#: In the environment of every process a :class:`LocalRay` head starts: its temp dir.
MARK = "RAYDAP_LOCAL_RAY"


#: ``ray start`` options for the ports a head binds beside the GCS's and the dashboard's.
_PORT_OPTIONS = (
    "ray-client-server-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
    "runtime-env-agent-port", "metrics-export-port", "node-manager-port", "object-manager-port",
)  # fmt: skip


class LocalRay:
    def __init__(
        self, num_cpus: int = 4, startup_timeout: float = 60.0, env: dict[str, str] | None = None
    ) -> None:
        """``env`` is added to the head's environment (``RAY_AUTH_MODE=token`` ...)."""
        self.num_cpus = num_cpus
        self.env = dict(env or {})
        # Ray's own choice, made explicit: ``ray start`` turns token auth on where a token exists
        # (~/.ray/auth_token, which any local ray.init() writes since Ray 2.52), but a driver
        # joining it does not, and would be refused. Processes that join this head get the mode.
        if "RAY_AUTH_MODE" not in self.env and "RAY_AUTH_MODE" not in os.environ:
            self.env["RAY_AUTH_MODE"] = "token" if token_source() is not None else "disabled"
        mode = self.env.get("RAY_AUTH_MODE", os.environ.get("RAY_AUTH_MODE", ""))
        self.client_env = {"RAY_AUTH_MODE": mode}
        self._mode_before: str | None = None
        self.startup_timeout = startup_timeout
        # Every port the head binds is named: Ray's own defaults (10001, 52365...) are shared
        # by every head on the machine, and the ports it picks itself can be taken meanwhile.
        ports = free_ports(len(_PORT_OPTIONS) + 2)
        self.gcs_port, self.dashboard_port = ports[:2]
        self.other_ports = dict(zip(_PORT_OPTIONS, ports[2:], strict=True))
        # Short: Ray's socket paths under the temp dir must stay under 107 characters.
        self.temp_dir = Path(tempfile.mkdtemp(prefix="rdp", dir="/tmp"))
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def start(self) -> LocalRay:
        ray = Path(sys.executable).with_name("ray")
        command = [
            str(ray) if ray.exists() else "ray",
            "start", "--head", "--block",
            "--node-ip-address=127.0.0.1",
            f"--port={self.gcs_port}",
            "--include-dashboard=true",
            "--dashboard-host=127.0.0.1",
            f"--dashboard-port={self.dashboard_port}",
            f"--temp-dir={self.temp_dir}",
            f"--num-cpus={self.num_cpus}",
            "--disable-usage-stats",
            *(f"--{option}={port}" for option, port in self.other_ports.items()),
        ]  # fmt: skip
        log = open(self.temp_dir / "ray-start.log", "wb")  # noqa: SIM115 (kept for the process)
        env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", **self.env)
        env[MARK] = str(self.temp_dir)
        self.process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
        # This process, and what it starts (a job, a bridge), join the head in its mode.
        self._mode_before = os.environ.get("RAY_AUTH_MODE")
        os.environ.update(self.client_env)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        url = f"{self.dashboard_url}/api/v0/nodes?detail=1"
        token = self.env.get("RAY_AUTH_TOKEN")
        headers = {"Authorization": f"Bearer {token}"} if token else dashboard_headers()
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                log = (self.temp_dir / "ray-start.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"ray start exited with {self.process.returncode}:\n{log}")
            try:
                request = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(request, timeout=2) as response:
                    nodes = json.loads(response.read())["data"]["result"]["result"]
                if any(node.get("state") == "ALIVE" for node in nodes):
                    return
            except (OSError, ValueError, KeyError):
                pass
            time.sleep(0.25)
        raise TimeoutError(f"Ray head not ready within {self.startup_timeout:g} s")

    def stop(self) -> None:
        """Stop the head and everything it started, then remove its files.

        ``ray start --block`` alone is signalled first: it stops Ray's processes in order, in
        2-3 s. SIGTERM to all of them at once leaves the GCS and the raylet waiting on each
        other until the grace period runs out (15 s a head, measured); whatever is left after
        Ray's own shutdown is stopped as a tree, with a short grace: it is mostly workers
        stopped in a debugger, whose Python cannot run a SIGTERM handler while its main thread
        is suspended (the 15 s grace cost the test suite's head 24 s at its end)."""
        process, self.process = self.process, None
        if process is not None:
            if self._mode_before is None:
                os.environ.pop("RAY_AUTH_MODE", None)
            else:
                os.environ["RAY_AUTH_MODE"] = self._mode_before
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=10)
            stop_process_tree(process.pid, grace=3.0, also=lambda: marked(str(self.temp_dir)))
            process.wait(timeout=5)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> LocalRay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def process_tree(root: int) -> set[int]:
    """Live processes that belong to ``root``: its session (Ray gives each worker a process
    group of its own, but not a session) and, transitively, their children (debugpy's adapter
    starts a session of its own under its worker)."""
    members: set[int] = set()
    for process in psutil.process_iter():
        try:
            if process.pid == root or os.getsid(process.pid) == root:
                members.add(process.pid)
        except (ProcessLookupError, PermissionError):
            continue
    for pid in list(members):
        try:
            members.update(child.pid for child in psutil.Process(pid).children(recursive=True))
        except psutil.Error:
            continue
    alive = set()
    for pid in members:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.Error:
            continue
    return alive


def marked(value: str) -> set[int]:
    """Live processes whose environment carries :data:`MARK` with ``value``."""
    found: set[int] = set()
    for process in psutil.process_iter():
        try:
            if process.environ().get(MARK) == value and process.status() != psutil.STATUS_ZOMBIE:
                found.add(process.pid)
        except psutil.Error:
            continue
    return found


def stop_process_tree(
    root: int, grace: float = 15.0, also: Callable[[], set[int]] | None = None
) -> None:
    """SIGTERM ``root`` and every process of its tree (and those ``also`` names), then
    SIGKILL what is left."""

    def members() -> set[int]:
        return process_tree(root) | (also() if also is not None else set())

    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        pids = members()
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and members() & pids:
            time.sleep(0.1)
