"""Benchmarks of collective verdicts (issue 33; figures in docs/performance.md).

    python -m bench.collectives [--smoke] [--seconds S] [--rounds R] [--json PATH]

C1  the Flight Recorder's own cost: two gloo ranks all_reduce small tensors in a loop (the
    worst case for a per-collective cost), with the recorder armed as raydap arms it and off,
    sides alternated (ABBA) over R rounds: the ratio of their speeds, and its spread. Two
    processes on two cores talking over loopback vary by several percent from run to run, so
    C1b isolates the recorder: one rank alone (a collective with no network), the time a call
    takes with the recorder armed and off, best of 5 x 20,000 calls, alternated over R rounds;
    the difference, set against C1's time per all_reduce, is the recorder's share.
C2  a live Ray job of four gloo ranks training in small steps, under a bridge whose hang watch
    is on with the recorder armed (raydap's defaults), against the watch off and the
    recorder off; sides alternated over R rounds of S seconds: the ratio of steps.
C3  four real gloo ranks blocked in all_reduce (rank 3 never comes): how long the bridge takes
    to read every rank's recorder (its ``raydap_collective_read_seconds`` metric), then the
    blamed rank's call sites (torch symbolizes stacks the first time: seconds, once).
C4  the collective verdict over 1,000 and 10,000 simulated NCCL ranks' answers (an empty generic
    recorder beside NCCL's, as a GPU rank sends them): each NCCL dump the tail the
    bridge reads (32 entries), checked as the bridge checks a worker's answer, then matched.
C5  from a rank stuck to the collective verdict, with ``--hang-after 20``.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any

from bench.hangs import stuck_delay
from bench.harness import (
    HERE,
    http,
    line_from,
    options_for,
    process,
    report,
    serve,
    settle,
    until,
)
from raydap.bridge.client.local_ray import LocalRay
from raydap.bridge.hangs.desync import RankDump, judge
from raydap.bridge.hangs.recorders import TAIL
from raydap.live.collectives import spans
from raydap.protocol.collectives import Reply, read_reply

HANG_AFTER = 20.0


def _spread(ratios: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(ratios), 4), "min": round(min(ratios), 4),
            "max": round(max(ratios), 4)}  # fmt: skip


def _abba(rounds: int) -> list[bool]:
    """Which side runs when: on, off, off, on, ... so drift falls on both alike."""
    return [side for _ in range((rounds + 1) // 2) for side in (True, False, False, True)][
        : 2 * rounds
    ]


# -- C1: the recorder alone ----------------------------------------------------------------------

_LOOP = """
import os, sys, time
rank, port, count = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=2)
t = torch.ones(8)
for _ in range(200):
    dist.all_reduce(t)
dist.barrier()
started = time.perf_counter()
for _ in range(count):
    dist.all_reduce(t)
dist.barrier()
if rank == 0:
    print(time.perf_counter() - started, flush=True)
dist.destroy_process_group()
"""


def _free_port() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def _loop_seconds(armed: bool, count: int) -> float:
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_")}
    if armed:
        from raydap.live.collectives import arm_recorder

        arm_recorder(env)
    port = _free_port()
    ranks = [
        subprocess.Popen([sys.executable, "-c", _LOOP, str(r), port, str(count)], env=env,
                         stdout=subprocess.PIPE, text=True)
        for r in (0, 1)
    ]  # fmt: skip
    try:
        out, _ = ranks[0].communicate(timeout=600)
        ranks[1].wait(timeout=60)
    finally:
        for rank in ranks:
            if rank.poll() is None:
                rank.kill()
                rank.wait()
    return float(out.strip())


_ALONE = """
import sys, time
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + sys.argv[1], rank=0, world_size=1)
t = torch.ones(8)
for _ in range(2000):
    dist.all_reduce(t)
best = []
for _ in range(5):
    started = time.perf_counter()
    for _ in range(20000):
        dist.all_reduce(t)
    best.append((time.perf_counter() - started) / 20000)
print(min(best), flush=True)
dist.destroy_process_group()
"""


def _call_seconds(armed: bool) -> float:
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("TORCH_")}
    if armed:
        from raydap.live.collectives import arm_recorder

        arm_recorder(env)
    done = subprocess.run([sys.executable, "-c", _ALONE, _free_port()], env=env,
                          capture_output=True, text=True, timeout=600, check=True)  # fmt: skip
    return float(done.stdout.strip())


def c1b_per_call(rounds: int, all_reduce_s: float) -> dict[str, Any]:
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for armed in _abba(rounds):
        seconds[armed].append(_call_seconds(armed))
    extra = statistics.median(seconds[True]) - statistics.median(seconds[False])
    speed = all_reduce_s / (all_reduce_s + max(extra, 0.0))
    return {"rounds": rounds,
            "armed_us": [round(s * 1e6, 2) for s in seconds[True]],
            "off_us": [round(s * 1e6, 2) for s in seconds[False]],
            "recorder_us_per_call": round(extra * 1e6, 2),
            "two_rank_all_reduce_us": round(all_reduce_s * 1e6, 1),
            "speed_with_recorder": round(speed, 4)}  # fmt: skip


def c1_recorder(rounds: int, count: int) -> dict[str, Any]:
    seconds: dict[bool, list[float]] = {True: [], False: []}
    for armed in _abba(rounds):
        seconds[armed].append(_loop_seconds(armed, count))
    pairs = [off / on for on, off in zip(seconds[True], seconds[False], strict=True)]
    return {"all_reduces": count, "rounds": rounds,
            "armed_s": [round(s, 3) for s in seconds[True]],
            "off_s": [round(s, 3) for s in seconds[False]],
            "speed_armed_over_off": _spread(pairs)}  # fmt: skip


# -- C2: the job's throughput, watch and recorder on against both off ----------------------------


async def _steps(ray: str, seconds: float, on: bool) -> int:
    env = dict(os.environ, RAY_ADDRESS=ray)
    if not on:
        env["RAYDAP_FLIGHT_RECORDER"] = "0"
    with serve("--address", ray, "--hang-watch", "live" if on else "off") as (_, url, _port):
        command = [sys.executable, str(HERE / "jobs" / "gloo_steps.py"), "4", str(seconds)]
        with process(command, env, stdin=True) as job:
            assert job.stdout is not None and job.stdin is not None
            await line_from(job.stdout, "READY")

            def held() -> bool:
                return sum(w["live"] for w in http(url + "/api/v1/workers")["workers"]) >= 4

            await until(held, 180, every=0.5)
            await settle()
            job.stdin.write(f"{time.time() + 1}\n")
            job.stdin.flush()
            return int((await line_from(job.stdout, "STEPS")).split()[1])


async def c2_throughput(ray: str, rounds: int, seconds: float) -> dict[str, Any]:
    steps: dict[bool, list[int]] = {True: [], False: []}
    for on in _abba(rounds):
        steps[on].append(await _steps(ray, seconds, on))
    pairs = [a / b for a, b in zip(steps[True], steps[False], strict=True)]
    return {"ranks": 4, "seconds": seconds, "rounds": rounds, "steps_on": steps[True],
            "steps_off": steps[False], "throughput_on_over_off": _spread(pairs)}  # fmt: skip


# -- C3 and C5: a real hang ----------------------------------------------------------------------


def _verdict(url: str, job_id: str) -> dict[str, Any] | None:
    for verdict in http(url + "/api/v1/hangs")["jobs"]:
        if verdict["job"] == job_id and verdict.get("collective"):
            return verdict  # type: ignore[no-any-return]
    return None


def _read_seconds(url: str, job_id: str) -> dict[str, float]:
    import urllib.request

    with urllib.request.urlopen(url + "/metrics", timeout=10) as answer:  # (no token here)
        text = answer.read().decode()
    found = {}
    for line in text.splitlines():
        if line.startswith("raydap_collective_read_seconds{") and f'job="{job_id}"' in line:
            phase = line.split('phase="', 1)[1].split('"', 1)[0]
            found[phase] = round(float(line.rsplit(" ", 1)[1]), 3)
    return found


async def c3_c5_real_hang(ray: str, rounds: int) -> dict[str, Any]:
    delays, reads = [], []
    reports = tempfile.mkdtemp(prefix="raydap-bench-hangs-")
    with serve("--address", ray, "--hang-after", str(HANG_AFTER), "--hang-sample-interval",
               "1", "--hang-reports", reports) as (_, url, _port):  # fmt: skip
        for _ in range(rounds):
            delay, job_id = await stuck_delay(ray, url, _verdict)
            delays.append(delay)
            reads.append(_read_seconds(url, job_id))
    c5 = {
        "hang_after_s": HANG_AFTER,
        "stuck_to_collective_verdict_s": [round(d, 1) for d in delays],
        "over_hang_after_s": round(max(delays) - HANG_AFTER, 1),
    }
    return {"c3_read_4_ranks_s": reads, "c5": c5}


# -- C4: simulated ranks -------------------------------------------------------------------------


def _dump(rank: int, world: int, last: int) -> dict[str, Any]:
    """What a rank answers the bridge: its identity and its recorder's last TAIL entries (no
    call sites: those are asked of the blamed ranks only); rank ``world - 1`` never came to
    the last all_reduce."""
    mine = last - 1 if rank == world - 1 else last
    entries = [
        {"record_id": s, "pg_id": 0, "process_group": ["0", "default_pg"],
         "collective_seq_id": s, "p2p_seq_id": 0, "op_id": s,
         "profiling_name": "nccl:all_reduce", "time_created_ns": s * 1000,
         "input_sizes": [[1024, 1024]], "input_dtypes": ["BFloat16"],
         "output_sizes": [[1024, 1024]], "output_dtypes": ["BFloat16"],
         "state": "completed" if s < mine else "scheduled", "retired": s < mine,
         "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
         "timeout_ms": 600000, "is_p2p": False}
        for s in range(mine - TAIL + 1, mine + 1)
    ]  # fmt: skip
    groups = [{"name": "0", "desc": "default_pg", "spans": spans(list(range(world)))}]
    return {
        "identity": {"rank": rank, "world_size": world, "backend": "nccl", "world": "head:29500",
                     "groups": groups},
        "job": "02000000",
        "recorder": {"version": "2.10", "pg_status": {}, "entries": []},  # the generic: empty
        "recorders": {
            "gloo": {"version": "2.10", "pg_status": {}, "entries": []},
            "nccl": {"version": "2.10", "entries": entries,
                     "pg_status": {"0": {"last_enqueued_collective": mine,
                                         "last_completed_collective": mine - 1}}},
        },
    }  # fmt: skip


def c4_simulated(ranks: int, rounds: int) -> dict[str, Any]:
    bodies = [_dump(r, ranks, 100_000) for r in range(ranks)]
    sizes = [len(json.dumps(b)) for b in bodies[:10]]
    checked, matched = [], []
    for _ in range(rounds):
        started = time.perf_counter()
        dumps = []
        for index, body in enumerate(bodies):
            reply = read_reply(body, sizes[index % len(sizes)])
            assert isinstance(reply, Reply) and reply.identity
            for backend, recorder in reply.by_backend().items():
                dumps.append(RankDump(str(index), reply.identity, recorder, backend))
        parsed = time.perf_counter()
        [verdict] = judge(dumps)
        assert verdict.missing == [ranks - 1]
        checked.append(parsed - started)
        matched.append(time.perf_counter() - parsed)
    total = [a + b for a, b in zip(checked, matched, strict=True)]
    return {"ranks": ranks, "entries_per_rank": TAIL, "bytes_per_rank": sizes[0],
            "check_s": round(min(checked), 3), "match_s": round(min(matched), 3),
            "verdict_s": round(min(total), 3)}  # fmt: skip


async def run(smoke: bool, seconds: float, rounds: int) -> dict[str, Any]:
    results: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "smoke": smoke,
    }
    results["c4"] = [c4_simulated(n, 1 if smoke else 3) for n in ((100, 1000) if smoke
                                                                  else (1000, 10_000))]  # fmt: skip
    results["c1"] = c1_recorder(1 if smoke else rounds, 300 if smoke else 20000)
    per_all_reduce = statistics.median(results["c1"]["off_s"]) / (300 if smoke else 20000)
    results["c1b"] = c1b_per_call(1 if smoke else rounds, per_all_reduce)
    with LocalRay(num_cpus=16) as head:
        await settle()
        results["c2"] = await c2_throughput(head.address, 1 if smoke else rounds,
                                            5 if smoke else seconds)  # fmt: skip
        results.update(await c3_c5_real_hang(head.address, 1 if smoke else 3))
    return results


def main() -> int:
    parser = options_for(__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="C2's runs (60)")
    parser.add_argument("--rounds", type=int, default=4, help="C1's and C2's rounds each way")
    options = parser.parse_args()
    report(asyncio.run(run(options.smoke, options.seconds, options.rounds)), options.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
