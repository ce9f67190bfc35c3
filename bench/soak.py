"""S1, successive stops at volume: no stop lost, none left unreachable, across replaces.

Actors of a live job and of a plain one each stop at ``breakpoint()`` many times in a row
(bench/jobs/soak_steps.py). For every stop the soak attaches a DAP client, reads the step the
worker stands at, and lets it go on, at random in one of three ways: continue through DAP then
detach; detach then continue over HTTP; continue over HTTP while attached, then detach. Every
REPLACE_EVERY stops the bridge is replaced (``raydap serve --replace``) while the workers stand
paused. Each worker's steps must arrive one after another: a step seen twice is the same stop,
a step skipped is a stop lost. A worker listed ``failed`` (its debugpy unreachable) is counted
as the known limit would be. The bridge's RSS and open descriptors are sampled every 100 stops.

    python -m bench.soak [--smoke] [--json FILE]
"""

from __future__ import annotations

import asyncio
import os
import platform
import random
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from bench.harness import HERE, http, process, run_benchmark, serve, settle
from raydap.bridge.client.dap_client import DapClient, DapRequestFailed
from raydap.bridge.client.local_ray import LocalRay

#: Per job (one live, one plain): actors, and stops each.
FULL = (4, 130)
SMOKE = (2, 8)
REPLACE_EVERY = {False: 300, True: 10}
#: A soak in which no stop is handled for this long has lost one: it stops and says where.
STALL = 60.0


@dataclass
class Soak:
    url: str
    dap_port: int
    bridge_pid: int
    rng: random.Random
    stops: int = 0
    lost: int = 0
    repeated: int = 0
    ways: dict[str, int] = field(default_factory=lambda: {"dap": 0, "http": 0, "http_attached": 0})
    failed: dict[str, str] = field(default_factory=dict)
    samples: list[dict[str, Any]] = field(default_factory=list)
    last_step: dict[str, int] = field(default_factory=dict)
    #: How each worker's last stop was let go, and when: what a lost stop came after.
    last_way: dict[str, tuple[str, float]] = field(default_factory=dict)
    skips: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    handling: set[str] = field(default_factory=set)
    idle: asyncio.Event = field(default_factory=asyncio.Event)  # set: no stop being handled
    last_progress: float = field(default_factory=time.monotonic)
    hold: asyncio.Event = field(default_factory=asyncio.Event)  # set: no new stop is handled

    def sample(self) -> None:
        bridge = psutil.Process(self.bridge_pid)
        self.samples.append({
            "stops": self.stops, "pid": self.bridge_pid,
            "rss_mb": round(bridge.memory_info().rss / 2**20, 1), "fds": bridge.num_fds(),
        })  # fmt: skip

    async def handle(self, record: dict[str, Any]) -> None:
        """One stop: attach, read the step, let the worker go on in one of three ways."""
        rid = record["id"]
        client = await DapClient.connect("127.0.0.1", self.dap_port)
        try:
            await client.attach(breakpoint=rid)
            stopped = (await client.wait_event("stopped", timeout=30)).body
            trace = await client.request("stackTrace", {"threadId": stopped["threadId"]})
            frame = trace.body["stackFrames"][0]
            answer = await client.request(
                "evaluate", {"expression": "step", "frameId": frame["id"], "context": "repl"}
            )
            step = int(answer.body["result"])
            expected = self.last_step.get(rid, -1) + 1
            if step < expected:
                self.repeated += 1  # the same stop, seen again: leave it to its handler
                return
            if step > expected:
                way_before, at = self.last_way.get(rid, ("none", time.monotonic()))
                self.skips.append({"worker": rid, "live": record.get("live"), "expected": expected,
                                   "seen": step, "after": way_before,
                                   "seconds_after": round(time.monotonic() - at, 3)})  # fmt: skip
            self.lost += step - expected
            self.last_step[rid] = step
            way = self.rng.choice(list(self.ways))
            self.ways[way] += 1
            self.last_way[rid] = (way, time.monotonic())
            if way == "dap":
                await client.request("continue", {"threadId": stopped["threadId"]})
            elif way == "http":
                await client.close()
                await asyncio.to_thread(http, f"{self.url}/api/v1/breakpoints/{rid}/continue", {})
            else:
                await asyncio.to_thread(http, f"{self.url}/api/v1/breakpoints/{rid}/continue", {})
            self.stops += 1
            self.last_progress = time.monotonic()
            if self.stops % 100 == 0:
                self.sample()
        finally:
            await client.close()

    async def drive(self, until_done: asyncio.Event) -> None:
        """Handle every paused worker as it shows up, one stop of a worker at a time."""
        tasks: set[asyncio.Task[None]] = set()
        while not until_done.is_set():
            if not self.hold.is_set():
                records = await asyncio.to_thread(http, f"{self.url}/api/v1/workers")
                for record in records["workers"]:
                    if record["state"] == "failed":
                        self.failed.setdefault(record["id"], record.get("error") or "")
                    if record["state"] != "paused" or record["id"] in self.handling:
                        continue
                    self.handling.add(record["id"])
                    self.idle.clear()
                    task = asyncio.create_task(self._handled(record))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
            await asyncio.sleep(0.02)
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _handled(self, record: dict[str, Any]) -> None:
        try:
            await self.handle(record)
        except (DapRequestFailed, ConnectionError, OSError, asyncio.TimeoutError) as exc:
            self.errors.append(f"{record['id']}: {exc!r}")
            print(f"soak: {record['id']}: {exc!r}", file=sys.stderr)
        finally:
            self.handling.discard(record["id"])
            if not self.handling:
                self.idle.set()

    async def quiet(self) -> None:
        """Stop handling new stops and wait for those under way."""
        self.hold.set()
        if self.handling:
            await self.idle.wait()


async def soak(address: str, smoke: bool) -> dict[str, Any]:
    actors, steps = SMOKE if smoke else FULL
    every = REPLACE_EVERY[smoke]
    with ExitStack() as stack:
        logs = Path(tempfile.mkdtemp(prefix="raydap-soak-"))
        bridge, url, dap_port = stack.enter_context(
            serve("--address", address, log=logs / "bridge-0.log")
        )
        state = Soak(url, dap_port, bridge.pid, random.Random(7))
        # RAY_ADDRESS: a job without it would start a cluster of its own (and leave Ray's
        # auth token in ~/.ray, which turns token auth on for every head started after).
        env = dict(os.environ, RAY_ADDRESS=address)
        script = str(HERE / "jobs" / "soak_steps.py")
        jobs = [
            stack.enter_context(
                process([sys.executable, script, str(actors), str(steps), kind], env)
            )
            for kind in ("live", "plain")
        ]
        for job in jobs:
            assert job.stdout is not None and job.stdout.readline().startswith("JOB ")
        done = asyncio.Event()
        driving = asyncio.create_task(state.drive(done))
        replaces: list[dict[str, Any]] = []
        started = time.monotonic()
        while any(job.poll() is None for job in jobs):
            if time.monotonic() - state.last_progress > STALL:
                workers = await asyncio.to_thread(http, f"{url}/api/v1/workers")
                raise RuntimeError(
                    f"no stop handled for {STALL:g} s after {state.stops} (steps seen: "
                    f"{state.last_step}); the bridge lists {workers['workers']}"
                )
            if state.stops >= every * (len(replaces) + 1):
                await state.quiet()
                took = time.perf_counter()
                old = state.bridge_pid
                log = logs / f"bridge-{len(replaces) + 1}.log"
                new, _, _ = stack.enter_context(
                    serve("--address", address, "--replace", str(old), log=log)
                )
                await asyncio.to_thread(psutil.Process(old).wait, 60)
                replaces.append({"at_stop": state.stops, "from": old, "to": new.pid,
                                 "seconds": round(time.perf_counter() - took, 3)})  # fmt: skip
                state.bridge_pid = new.pid
                state.hold.clear()
            await asyncio.sleep(0.1)
        done.set()
        await driving
        results = [job.stdout.read().strip() for job in jobs if job.stdout is not None]
        state.sample()
    expected = f"RESULT {[steps] * actors}"
    return {
        "workers": 2 * actors,
        "stops_expected": 2 * actors * steps,
        "stops": state.stops,
        "lost": state.lost,
        "lost_where": state.skips,
        "handler_errors": state.errors[:10],
        "seen_twice": state.repeated,
        "unreachable": len(state.failed),
        "unreachable_why": sorted(set(state.failed.values()))[:3],
        "jobs_right": all(result == expected for result in results),
        "results": results,
        "ways": state.ways,
        "replaces": replaces,
        "seconds": round(time.monotonic() - started, 1),
        "logs": str(logs),
        "samples": state.samples,
    }


async def run(smoke: bool) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "smoke": smoke,
    }
    with LocalRay(num_cpus=4) as head:
        await settle()
        results["s1"] = await soak(head.address, smoke)
    return results


if __name__ == "__main__":
    sys.exit(run_benchmark(__doc__, run))
