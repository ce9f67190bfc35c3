"""A real Ray head and a real ``raydap serve`` process, shared by the end-to-end tests.

Every process started here is stopped by its pid (the Ray head with its whole process tree).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tokenize
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bench.harness import gdb_refusal, ptrace_refusal
from raydap.adapter import StreamChannel
from raydap.bridge.client.dap_client import DapClient
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.server import connection_file
from tests.conftest import runtime_dir
from tests.waiting import wait_until

JOBS = Path(__file__).with_name("jobs")
pytestmark = pytest.mark.e2e


def require_ptrace() -> None:
    """Skip a test of reading or pausing running workers where this machine forbids it
    (those features need ptrace on the node; the test says why it did not run)."""
    refusal = ptrace_refusal()
    if refusal is not None:
        pytest.skip(f"py-spy and gdb need ptrace, which this machine refuses: {refusal}")


def require_gdb_calls() -> None:
    """Skip a test of pausing or rescuing a worker from outside (gdb calls into it) where this
    machine's gdb cannot do that safely; the refusal itself is tested where it can't
    (tests/e2e/test_stacks_and_pause.py)."""
    require_ptrace()
    refusal = gdb_refusal()
    if refusal is not None:
        pytest.skip(f"this machine's gdb cannot call into a process safely: {refusal}")


def require_tools(*paths: Path, make: str = "make e2e-tools") -> None:
    """Skip when an editor or client the test drives is not installed; ``make test`` sets
    RAYDAP_REQUIRE_EDITOR_TESTS=1, so in CI a missing tool fails instead."""
    missing = [str(p) for p in paths if not p.exists()]
    if not missing:
        return
    reason = f"run `{make}` first; missing: {', '.join(missing)}"
    if os.environ.get("RAYDAP_REQUIRE_EDITOR_TESTS"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def ray_head() -> Iterator[LocalRay]:
    with LocalRay(num_cpus=8) as head:
        yield head


@dataclass
class BridgeProcess:
    process: subprocess.Popen[str]
    url: str
    dap_host: str
    dap_port: int
    log: Path
    #: The debug token it made (or was given), from its connection file.
    token: str | None = None

    @property
    def auth(self) -> dict[str, str]:
        """The header that lets a client in."""
        return {"Authorization": f"Bearer {self.token}"} if self.token else {}

    def _request(self, path: str, body: bytes | None = None, method: str = "GET") -> Any:
        headers = {"Content-Type": "application/json", **self.auth}
        return urllib.request.Request(self.url + path, data=body, method=method, headers=headers)

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self._request(path), timeout=10) as response:
            return json.loads(response.read())

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        request = self._request(path, json.dumps(body or {}).encode(), "POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def put(self, path: str, body: dict[str, Any]) -> Any:
        request = self._request(path, json.dumps(body).encode(), "PUT")
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def get_text(self, path: str) -> str:
        with urllib.request.urlopen(self._request(path), timeout=10) as response:
            return str(response.read().decode())

    def delete(self, path: str) -> Any:
        with urllib.request.urlopen(self._request(path, None, "DELETE"), timeout=10) as answer:
            return json.loads(answer.read())

    def post_any(self, path: str) -> tuple[int, Any]:
        """A POST's status and JSON answer, whatever the status."""
        try:
            with urllib.request.urlopen(self._request(path, b"{}", "POST"), timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    def http_error(self, method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        request = self._request(path, body, method)
        try:
            urllib.request.urlopen(request, timeout=10)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())
        raise AssertionError(f"{method} {path} succeeded")

    def records(self, job_id: str | None = None) -> list[dict[str, Any]]:
        records = self.get("/api/v1/breakpoints")["breakpoints"]
        return [r for r in records if job_id is None or r["job_id"] == job_id]

    def wait_records(
        self,
        job_id: str | None,
        count: int = 1,
        timeout: float = 60,
        where: Callable[[dict[str, Any]], bool] = lambda r: (
            r["state"] == "paused" and r["location"] is not None
        ),
    ) -> list[dict[str, Any]]:
        def matching() -> list[dict[str, Any]] | None:
            found = [r for r in self.records(job_id) if where(r)]
            return found if len(found) >= count else None

        return wait_until(
            matching, timeout=timeout, every=0.1, what=f"{count} held worker(s) of job {job_id}",
            context=lambda: f"{self.records()}\n{self.log.read_text()[-3000:]}",
        )  # fmt: skip


def start_bridge(args: list[str], log: Path, env: dict[str, str] | None = None) -> BridgeProcess:
    """Run ``raydap serve`` as a real process and read the addresses it prints."""
    out = open(log, "w")  # noqa: SIM115 (the process writes to it)
    process = subprocess.Popen(
        [sys.executable, "-m", "raydap.bridge", "serve", "--port", "0", "--dap-port", "0", *args],
        stdout=subprocess.PIPE, stderr=out, text=True, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"HTTP (https?://\S+)\s+DAP (\S+):(\d+)", line)
    if not found:
        process.kill()
        raise AssertionError(f"raydap serve printed {line!r}:\n{log.read_text()}")
    written = runtime_dir() / f"bridge-{process.pid}.json"
    token = connection_file.Connection.model_validate_json(written.read_text()).token
    return BridgeProcess(process, found[1], found[2], int(found[3]), log, token)


def stop_bridge(bridge: BridgeProcess) -> None:
    """SIGTERM, as a service manager stops it: the bridge stops itself and exits 0. Ray's
    failure signal handler never takes the signal (it once made the bridge abort on exit)."""
    bridge.process.send_signal(signal.SIGTERM)
    try:
        assert bridge.process.wait(timeout=20) == 0
        assert "SIGTERM received" not in bridge.log.read_text(errors="replace")
    finally:
        if bridge.process.poll() is None:
            bridge.process.kill()


@pytest.fixture(scope="session")
def bridge(ray_head: LocalRay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BridgeProcess]:
    log = tmp_path_factory.mktemp("bridge") / "bridge.log"
    running = start_bridge(["--address", ray_head.address], log)
    yield running
    stop_bridge(running)


@dataclass
class Job:
    process: subprocess.Popen[str]
    job_id: str
    lines: list[str] = field(default_factory=list)

    def result(self, timeout: float = 60) -> str:
        """The job's RESULT line, once it has finished."""
        assert self.process.stdout is not None
        self.process.wait(timeout=timeout)
        self.lines += self.process.stdout.read().splitlines()
        results = [line for line in self.lines if line.startswith("RESULT")]
        assert results, "\n".join(self.lines)
        return results[-1].removeprefix("RESULT ").strip()


def break_line(script: str, marker: str) -> int:
    """The line of the comment ``# BREAK marker`` in a job script: a comment, read by Python's
    tokenizer, so a docstring that names the marker is no line to break at."""
    with (JOBS / script).open("rb") as source:
        for token in tokenize.tokenize(source.readline):
            words = token.string.split()
            if token.type == tokenize.COMMENT and words[1:3] == ["BREAK", marker]:
                return token.start[0]
    raise AssertionError(marker)


def start_job(address: str, script: str, env: dict[str, str] | None = None) -> Job:
    """Run a job driver from tests/e2e/jobs against the Ray head at ``address``."""
    env = dict(os.environ, RAY_ADDRESS=address, PYTHONUNBUFFERED="1", **(env or {}))
    process = subprocess.Popen(
        [sys.executable, str(JOBS / script)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )  # fmt: skip
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith("JOB "):
            return Job(process, line.split()[1], lines)
    process.kill()
    raise AssertionError(f"{script} printed no job id: {lines}")


def run_benchmark_smoke(module: str, out: Path, timeout: float = 540) -> tuple[Any, str]:
    """``python -m MODULE --smoke --json OUT``, which must succeed: its figures and what it
    printed. Out of time, SIGTERM lets it stop the Ray head and bridges it started."""
    bench = subprocess.Popen(
        [sys.executable, "-m", module, "--smoke", "--json", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        stdout, stderr = bench.communicate(timeout=timeout)
    finally:
        if bench.poll() is None:
            bench.terminate()
            try:
                bench.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                bench.kill()
                bench.communicate()
    assert bench.returncode == 0, stdout[-2000:] + stderr[-3000:]
    return json.loads(out.read_text()), stdout


def stop_job(job: Job) -> None:
    if job.process.poll() is None:
        job.process.kill()
        job.process.wait()


@pytest.fixture
def run_job(ray_head: LocalRay) -> Iterator[Callable[[str], Job]]:
    """Start jobs on the shared Ray head; any still running at the end are killed."""
    jobs: list[Job] = []

    def run(script: str) -> Job:
        jobs.append(start_job(ray_head.address, script))
        return jobs[-1]

    yield run
    for job in jobs:
        stop_job(job)


#: Debian's Chromium, which Playwright drives (it never downloads a browser of its own).
CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


#: Starts ``raydap dap ARGS`` for a bridge and talks DAP to it over its stdin/stdout, as an
#: editor does: ``start(bridge, *args, env=None)``.
StartAdapter = Callable[..., Awaitable[DapClient]]


@pytest.fixture
async def dap_command() -> AsyncIterator[StartAdapter]:
    """The bridge is found the way a person's would be: through its connection file (the
    tests' runtime directory), token included. Each adapter is stopped at the end."""
    started: list[tuple[asyncio.subprocess.Process, DapClient]] = []

    async def start(
        bridge: BridgeProcess, *args: str, env: dict[str, str] | None = None
    ) -> DapClient:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "raydap.bridge", "dap", *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "RAYDAP_URL": bridge.url, **(env or {})},
        )  # fmt: skip
        assert process.stdout is not None and process.stdin is not None
        client = DapClient(StreamChannel(process.stdout, process.stdin, peer="raydap dap"))
        started.append((process, client))
        return client

    yield start
    for process, client in started:
        await client.close()
        if process.returncode is None:
            process.kill()
        await process.wait()


@pytest.fixture
async def browser() -> AsyncIterator[object]:
    if not CHROMIUM.exists():
        if os.environ.get("RAYDAP_REQUIRE_EDITOR_TESTS"):
            pytest.fail(f"no Chromium at {CHROMIUM} (make e2e-tools installs it)")
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield launched
        await launched.close()
