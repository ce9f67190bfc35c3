"""The benchmarks' harness: the processes a benchmark starts (stopped by pid on the way out),
the machine's quiet, a process's resources, polling, percentiles, and the options and report
every benchmark shares. The scenarios are in ``run`` (P1-P7), ``hangs``, ``children``, ``mcp``
and ``collectives``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import psutil

HERE = Path(__file__).resolve().parent
TICKS = os.sysconf("SC_CLK_TCK")
#: The log of the latest ``raydap serve`` the benchmark started (read it when a stage fails).
SERVE_LOG = Path(tempfile.gettempdir()) / "raydap-bench-serve.log"


# -- processes ---------------------------------------------------------------------------------


@contextmanager
def process(
    command: list[str],
    env: dict[str, str] | None = None,
    log: Path | None = None,
    stdin: bool = False,
) -> Iterator[subprocess.Popen[str]]:
    """A child process (its stdin a pipe with ``stdin``), stopped by its pid on the way out."""
    stderr = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115
    child = subprocess.Popen(
        command, stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE,
        stderr=stderr, text=True, env=env,
    )  # fmt: skip
    try:
        yield child
    finally:
        child.terminate()
        try:
            child.wait(timeout=15)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@contextmanager
def serve(
    *args: str, command: list[str] | None = None, log: Path = SERVE_LOG
) -> Iterator[tuple[subprocess.Popen[str], str, int]]:
    """``raydap serve`` as a real process: (process, HTTP URL, DAP port); its log in ``log``."""
    # Without a token: the benchmark measures relaying, and a token is checked once per
    # connection, not per message (the test suite covers tokens).
    command = command or [sys.executable, "-m", "raydap.bridge", "serve", "--port", "0",
                          "--dap-port", "0", "--no-token"]  # fmt: skip
    with process([*command, *args], log=log) as bridge:
        assert bridge.stdout is not None
        found = re.search(r"HTTP (\S+)\s+DAP \S+:(\d+)", bridge.stdout.readline())
        assert found, "raydap serve did not start"
        yield bridge, found[1], int(found[2])


@contextmanager
def fake_cluster(
    workers: int,
    real_ports: tuple[int, ...] = (),
    running: int = 0,
    live: bool = False,
) -> Iterator[str]:
    command = [sys.executable, "-m", "bench.fake_cluster", "--workers", str(workers),
               "--running", str(running), *(["--live"] if live else [])]  # fmt: skip
    with process([*command, "--real", *map(str, real_ports)]) as cluster:
        assert cluster.stdout is not None
        line = cluster.stdout.readline()
        assert line.startswith("READY "), line
        yield line.split()[1]


@contextmanager
def debuggee() -> Iterator[int]:
    env = dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1")
    with process([sys.executable, "-Xfrozen_modules=off", str(HERE / "debuggee.py")], env) as d:
        assert d.stdout is not None
        yield int(d.stdout.readline())


@functools.cache
def gdb_refusal() -> str | None:
    """Why raydap will not pause a worker from outside on this machine (gdb missing, or a gdb
    that breaks the processes it calls into: gdb 13 on CPUs with AMX), by the product's own
    check (:func:`raydap.bridge.cluster.on_node.gdb_call_refusal`); None where it will."""
    import shutil

    from raydap.bridge.cluster import on_node

    gdb = shutil.which("gdb")
    if gdb is None:
        return "gdb is not installed"
    return on_node.gdb_call_refusal(gdb) or None


@functools.cache
def ptrace_refusal() -> str | None:
    """Why py-spy cannot read another process here (a container without SYS_PTRACE), if so:
    stacks of running workers and outside pause need it."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        answer = "py-spy failed"
        for _ in range(20):
            time.sleep(0.25)
            done = subprocess.run(
                [str(Path(sys.executable).with_name("py-spy")), "dump", "--pid", str(child.pid)],
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            if done.returncode == 0:
                return None
            answer = done.stderr.strip()[:300] or answer
        return answer
    finally:
        child.kill()
        child.wait()


async def settle(busy: float = 30.0, longest: float = 60.0) -> None:
    """Wait until the machine is quiet (a Ray head starts a Python worker per CPU, which
    takes the machine's cores for several seconds): under ``busy`` % CPU for a second."""
    deadline = time.monotonic() + longest
    while time.monotonic() < deadline:
        if await asyncio.to_thread(psutil.cpu_percent, 1.0) < busy:
            return


def usage(pid: int) -> tuple[float, float, float]:
    """(RSS MB, peak RSS MB, CPU seconds) of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status)[1]) / 1024  # type: ignore[index]
    peak = int(re.search(r"VmHWM:\s+(\d+)", status)[1]) / 1024  # type: ignore[index]
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return rss, peak, (int(fields[11]) + int(fields[12])) / TICKS


def http(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


async def until(check: Callable[[], Any], timeout: float, every: float = 0.01) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await asyncio.to_thread(check)
        if found:
            return found
        await asyncio.sleep(every)
    raise TimeoutError(f"timed out after {timeout} s")


async def line_from(stream: IO[str], prefix: str) -> str:
    """A job's next line that starts with ``prefix`` (Ray forwards workers' logs too),
    stripped; raises if the job ends first."""
    while line := await asyncio.to_thread(stream.readline):
        if line.startswith(prefix):
            return line.strip()
    raise RuntimeError(f"the job ended before printing {prefix}")


def ms(seconds: list[float]) -> dict[str, float]:
    if not seconds:
        return {"p50_ms": float("nan"), "p95_ms": float("nan"), "n": 0}
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered) * 1000, 3),
            "p95_ms": round(p95 * 1000, 3), "n": len(ordered)}  # fmt: skip


async def timed(action: Callable[[], Awaitable[Any]]) -> float:
    start = time.perf_counter()
    await action()
    return time.perf_counter() - start


# -- options and report ----------------------------------------------------------------------


def options_for(description: str | None) -> argparse.ArgumentParser:
    """The options every benchmark takes (``--smoke``, ``--json``). Stopped with SIGTERM (a
    test's time ran out), a benchmark unwinds: the Ray head, bridges and jobs it started are
    stopped on the way out, not left running."""
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--smoke", action="store_true", help="every stage, briefly (for CI)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    return parser


def report(results: dict[str, Any], path: Path | None) -> None:
    """Print the figures as JSON, and write them to ``path`` if given."""
    text = json.dumps(results, indent=2)
    print(text)
    if path:
        path.write_text(text + "\n")


def run_benchmark(description: str | None, run: Callable[[bool], Awaitable[dict[str, Any]]]) -> int:
    """A benchmark's ``main`` taking only the common options: run it, report its figures."""
    options = options_for(description).parse_args()
    report(asyncio.run(run(options.smoke)), options.json)
    return 0
