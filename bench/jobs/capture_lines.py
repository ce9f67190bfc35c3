"""Jobs for bench/captures.py, made live by raydap's hook.

capture_lines.py ranks FLAG      four gloo ranks train until FLAG exists (K1, K2)
capture_lines.py hot SECONDS     one worker runs a line about 1,000 times a second for
                                 SECONDS, twice, and prints each run's count (K3)
"""

import os
import sys
import time

import ray

from raydap.bridge.client.ports import free_port

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.25)
class Rank:
    def __init__(self, rank, port):
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=4)
        self.rank = rank

    def train(self, flag):
        import torch
        import torch.distributed as dist

        step, done = 0, False
        while not done:
            step += 1
            stop = float(self.rank == 0 and os.path.exists(flag))
            loss = torch.tensor([float(self.rank + 1) * step, stop])
            dist.all_reduce(loss)
            done = loss[1].item() > 0  # CAPTURE step
            time.sleep(0.01)
        return step


@ray.remote(num_cpus=1)
class Hot:
    def ready(self):
        # One C call of about a millisecond: the line is hit about 1,000 times a second, and
        # no Python line runs in between for a tracer to see.
        started = time.perf_counter()
        sum(range(1_000_000))
        self.size = int(1_000_000 * 0.001 / (time.perf_counter() - started))
        return os.getpid()

    def run(self, seconds, go):
        while not os.path.exists(go):  # the bench sets its point (or not) first
            time.sleep(0.01)
        hits, size, deadline = 0, self.size, time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            hits += sum(range(size)) * 0 + 1  # CAPTURE hot
        return hits


if sys.argv[1] == "ranks":
    port = free_port()
    ranks = [Rank.remote(r, port) for r in range(4)]
    print("RESULT", ray.get([r.train.remote(sys.argv[2]) for r in ranks]), flush=True)
else:
    hot = Hot.remote()
    print("READY", ray.get(hot.ready.remote()), flush=True)
    for go in sys.stdin:  # one line a run: the flag file to wait for
        print("RESULT", ray.get(hot.run.remote(float(sys.argv[2]), go.strip())), flush=True)
