#!/usr/bin/env python3
"""raydap's collective diagnosis on a real GPU, with raydap's own code in the ranks and judge.

Run on a machine with one GPU and torch with NCCL (no Ray needed; pydantic, which the judge's
records are made of, must import), from the repository's root:
``python3 bench/gpu/nccl_hangs.py``; or on CPU as a dry run, with the suite's torch:
``.venv/bin/python bench/gpu/nccl_hangs.py --backend gloo``. Four ranks of one world share
the GPU: each gets its own ``NCCL_HOSTID`` and NCCL speaks sockets over ``lo`` (P2P, SHM and
IB off), so it takes them for four hosts (as the recordings in
tests/unit/bridge/hangs/recordings were made on an H100).

Scenarios, each after a few healthy all_reduces (and two on a second group of ranks 0 and 1):

- ``skip``: rank 2 skips a step's all_reduce; the others wait (on NCCL, in ``.item()``);
- ``mismatch``: rank 1 calls broadcast where the others call all_reduce;
- ``straggler``: rank 3 never leaves its data loader; the others wait for it;
- ``healthy``: a loop of matmuls, an all_reduce and ``.item()``, which progresses;
- ``stop``: a group timeout of 8 s, and rank 0 "stopped" (asleep) for 24 s before a
  collective: the parent raises every rank's timeouts first, as the bridge does for a debugged
  job (``collectives.answer({"timeout": 3600})`` on each rank's second thread, the others
  waiting inside a collective meanwhile), and every rank must live through it.

Each rank arms the Flight Recorder with ``raydap.live.collectives.arm_recorder`` before its
groups exist, and a second thread answers the parent with ``collectives.answer`` (both of
torch's recorders) while the main thread is blocked, as pydevd's reader thread does in a live
worker. The parent reads the answers as the bridge does (``read_reply``, one ``RankDump`` a
backend) and judges them with ``desync.judge``; for ``healthy`` it reads each rank's progress
twice, seconds apart, and checks that every rank counted on (``desync.positions``); for
``skip`` it also checks that the waiting ranks' oldest op not done is the verdict's
(``async_waits.waits_at``: what their ``.item()`` waits for). Every rank
is killed by its pid when its scenario ends. Prints a JSON line a scenario, then
``N passed, N failed``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import multiprocessing as mp
import os
import queue
import socket
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
WORLD = 4
HEALTHY = 3
STEPS = 6
TAIL = 32  # what the bridge asks (bridge/hangs/recorders.py)
NCCL_ENV = {
    "NCCL_SOCKET_IFNAME": "lo", "NCCL_NET": "Socket", "NCCL_P2P_DISABLE": "1",
    "NCCL_SHM_DISABLE": "1", "NCCL_IB_DISABLE": "1", "NCCL_NVLS_ENABLE": "0",
}  # fmt: skip
#: The ``stop`` scenario: the group's own timeout, and how long rank 0 stays away.
STOP_TIMEOUT, STOPPED_FOR = 8, 24
#: What each hang must be judged as: (ranks missing, (rank, op) called instead).
EXPECTED: dict[str, tuple[list[int], list[tuple[int, str]]]] = {
    "skip": ([2], []),
    "mismatch": ([], [(1, "broadcast")]),
    "straggler": ([3], []),
}


def use_checkout() -> None:
    """``raydap`` as this checkout's folders (live/, bridge/ ...), whatever is installed."""
    package = types.ModuleType("raydap")
    package.__path__ = [str(REPO)]
    sys.modules["raydap"] = package


# -- a rank ----------------------------------------------------------------------------------


def answer_requests(requests: Any, answers: Any, rank: int) -> None:
    """The reader thread: raydap's own answer to each of the parent's requests."""
    from raydap.live import collectives

    while True:
        arguments = requests.get()
        try:
            body = collectives.answer(arguments, os.environ)
        except Exception as exc:  # said to the parent, as a failed DAP response would
            body = {"error": f"{type(exc).__name__}: {exc}"}
        answers.put((rank, json.dumps(body)))


def fetch_batch(stall: bool) -> None:
    while stall:  # the straggler's data loader never returns
        time.sleep(0.05)


def rank_main(rank: int, port: int, scenario: str, backend: str, requests: Any, answers: Any,
              notes: Any) -> None:  # fmt: skip
    use_checkout()
    from raydap.live import collectives

    collectives.arm_recorder(os.environ)  # as raydap.live.setup does, before any group
    import torch
    import torch.distributed as dist

    device = torch.device("cuda", 0) if backend == "nccl" else torch.device("cpu")
    if backend == "nccl":
        torch.cuda.set_device(0)
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
        timeout=datetime.timedelta(seconds=STOP_TIMEOUT if scenario == "stop" else 600),
    )  # fmt: skip
    pair = dist.new_group([0, 1])
    threading.Thread(target=answer_requests, args=(requests, answers, rank), daemon=True).start()
    tensor = torch.ones(4, device=device)
    for _ in range(HEALTHY):
        dist.all_reduce(tensor)
        float(tensor.sum().item())
    if rank in (0, 1):
        dist.all_reduce(torch.ones(4, device=device), group=pair)
    notes.put((rank, "ready"))
    if scenario == "stop":
        stopped(rank, device, notes)
        return
    if scenario == "healthy":
        weights = torch.randn(256, 256, device=device)
        until = time.monotonic() + 60
        while time.monotonic() < until:
            loss = (weights @ weights).mean()
            dist.all_reduce(loss)
            float(loss.item())
        return
    grad = torch.ones(4, device=device)
    for step in range(STEPS):
        if (scenario, rank, step) == ("skip", 2, 2):
            continue  # an empty batch: nothing to average (the bug)
        fetch_batch((scenario, rank, step) == ("straggler", 3, 3))
        if (scenario, rank, step) == ("mismatch", 1, 3):
            dist.broadcast(grad, 0)
        else:
            dist.all_reduce(grad)
        float(grad.sum().item())  # NCCL returns at once: a waiting rank blocks here
    threading.Event().wait()  # idle, as a Ray worker whose task returned


def stopped(rank: int, device: Any, notes: Any) -> None:
    """Rank 0 joins the first collective 2 s late (the others wait inside it while the parent
    raises their timeouts), then the next one STOPPED_FOR s late, past the group's own."""
    import torch
    import torch.distributed as dist

    for late in (2.0, float(STOPPED_FOR)):
        if rank == 0:
            time.sleep(late)
        started = time.monotonic()
        tensor = torch.ones(4, device=device)
        dist.all_reduce(tensor)
        float(tensor.sum().item())
        notes.put((rank, f"waited {time.monotonic() - started:.1f} s"))
    notes.put((rank, "survived"))
    threading.Event().wait()


# -- the parent ------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Ranks:
    """Four rank processes of one scenario, and the questions the bridge would ask them."""

    def __init__(self, scenario: str, backend: str) -> None:
        context = mp.get_context("spawn")
        self.answers, self.notes = context.Queue(), context.Queue()
        self.requests = [context.Queue() for _ in range(WORLD)]
        port = free_port()
        saved = dict(os.environ)
        self.processes = []
        for rank in range(WORLD):
            if backend == "nccl":
                os.environ.update(NCCL_ENV, NCCL_HOSTID=f"raydap-gpu-check-{rank}")
            process = context.Process(
                target=rank_main, daemon=True,
                args=(rank, port, scenario, backend, self.requests[rank], self.answers,
                      self.notes),
            )  # fmt: skip
            process.start()
            self.processes.append(process)
            os.environ.clear()
            os.environ.update(saved)

    def wait_ready(self, timeout: float) -> None:
        ready: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(ready) < WORLD:
            rank, _ = self.notes.get(timeout=max(0.1, deadline - time.monotonic()))
            ready.add(rank)

    def ask(self, arguments: dict[str, Any], timeout: float) -> dict[int, dict[str, Any]]:
        for requests in self.requests:
            requests.put(arguments)
        found: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while len(found) < WORLD and time.monotonic() < deadline:
            try:
                rank, body = self.answers.get(timeout=0.5)
            except queue.Empty:
                continue
            found[rank] = json.loads(body)
        return found

    def kill(self) -> None:
        for process in self.processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, 9)
            process.join(5)


def dumps_of(bodies: dict[int, dict[str, Any]]) -> list[Any]:
    """The answers as the bridge reads them (bridge/hangs/recorders.py)."""
    from raydap.bridge.hangs.desync import RankDump
    from raydap.protocol.collectives import Reply, read_reply

    dumps = []
    for rank, body in sorted(bodies.items()):
        reply = read_reply(body, len(json.dumps(body)))
        if not isinstance(reply, Reply) or reply.identity is None:
            raise AssertionError(f"rank {rank}: {reply if isinstance(reply, str) else body}")
        for backend, recorder in reply.by_backend().items():
            dumps.append(RankDump(f"rank{rank}", reply.identity, recorder, backend))
    return dumps


def check_hang(ranks: Ranks, scenario: str, backend: str, settle: float) -> dict[str, Any]:
    from raydap.bridge.hangs.desync import judge

    time.sleep(settle)  # the hang sets in: the others reach the collective and wait
    bodies = ranks.ask({"recorder": True, "tail": TAIL, "frames": True}, timeout=60)
    dumps = dumps_of(bodies)
    verdicts = judge(dumps)
    result: dict[str, Any] = {
        "scenario": scenario, "backend": backend, "answered": sorted(bodies),
        "entries": {f"{d.worker}/{d.backend}": len(d.recorder.entries) for d in dumps},
        "verdict": verdicts[0].summary if verdicts else None,
    }  # fmt: skip
    missing, odd = EXPECTED[scenario]
    first = verdicts[0] if verdicts else None
    if first is not None:
        from raydap.bridge.hangs.async_waits import waits_at

        waiting = sorted(d.identity.rank for d in dumps if waits_at(d, first))
        result["waiting_for_it"] = waiting
        if scenario == "skip" and waiting != [0, 1, 3]:
            return {**result, "ok": False}
    result["ok"] = (
        first is not None
        and first.backend == backend
        and first.missing == missing
        and [(m.rank, m.op) for m in first.mismatch] == odd
    )
    return result


def check_progress(ranks: Ranks, backend: str, apart: float) -> dict[str, Any]:
    from raydap.bridge.hangs.desync import positions

    def read() -> dict[str, frozenset[Any]]:
        found: dict[str, frozenset[Any]] = {}
        for dump in dumps_of(ranks.ask({"status": True}, timeout=30)):
            found[dump.worker] = found.get(dump.worker, frozenset()) | positions(dump)
        return found

    before = read()
    time.sleep(apart)
    after = read()
    moved = sorted(w for w in after if after[w] != before.get(w))
    return {"scenario": "healthy", "backend": backend, "moved": moved,
            "ok": len(moved) == WORLD}  # fmt: skip


def check_stop(ranks: Ranks, backend: str) -> dict[str, Any]:
    """Every rank's timeouts raised while they wait, then all of them alive after rank 0's
    absence of STOPPED_FOR s (three times their group's own timeout)."""
    time.sleep(0.5)  # ranks 1-3 are inside the first all_reduce, rank 0 asleep
    said = ranks.ask({"timeout": 3600}, timeout=30)
    notes: dict[int, list[str]] = {}
    deadline = time.monotonic() + STOPPED_FOR + 60
    while sum("survived" in n for n in notes.values()) < WORLD and time.monotonic() < deadline:
        try:
            rank, note = ranks.notes.get(timeout=0.5)
        except queue.Empty:
            if any(not p.is_alive() for p in ranks.processes):
                break  # a rank died: its watchdog aborted it
            continue
        notes.setdefault(rank, []).append(note)
    alive = [r for r, p in enumerate(ranks.processes) if p.is_alive()]
    return {"scenario": "stop", "backend": backend,
            "raised": {r: b.get("timeouts") for r, b in sorted(said.items())},
            "notes": notes, "alive": alive,
            "ok": len(said) == WORLD and alive == list(range(WORLD))
            and all("survived" in notes.get(r, []) for r in range(WORLD))}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["nccl", "gloo"], default="nccl")
    parser.add_argument("--scenarios", default="skip,mismatch,straggler,healthy,stop")
    parser.add_argument("--settle", type=float, default=4.0, help="seconds for a hang to set in")
    parser.add_argument("--ready-timeout", type=float, default=120.0)
    args = parser.parse_args(argv)
    use_checkout()
    passed = failed = 0
    for scenario in args.scenarios.split(","):
        ranks = Ranks(scenario, args.backend)
        try:
            ranks.wait_ready(args.ready_timeout)
            if scenario == "healthy":
                result = check_progress(ranks, args.backend, apart=args.settle)
            elif scenario == "stop":
                result = check_stop(ranks, args.backend)
            else:
                result = check_hang(ranks, scenario, args.backend, args.settle)
        except Exception as exc:  # one scenario's failure is reported, the next runs
            result = {"scenario": scenario, "ok": False, "error": f"{type(exc).__name__}: {exc}"}
        finally:
            ranks.kill()
        print(json.dumps(result), flush=True)
        passed, failed = passed + bool(result["ok"]), failed + (not result["ok"])
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
