"""C2: live gloo ranks train in a loop of small steps (a little compute, one all_reduce), for
the cost of the hang watch and the armed Flight Recorder together.

    gloo_steps.py RANKS SECONDS

Prints READY JOB once the ranks made their group, reads the start time on stdin, and prints
STEPS N: the steps every rank made in SECONDS (they move together: one all_reduce a step).
"""

import socket
import sys
import time

import ray

ranks, seconds = int(sys.argv[1]), float(sys.argv[2])
ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})


@ray.remote(num_cpus=0.1)
class Rank:
    def __init__(self, rank, port):
        import torch
        import torch.distributed as dist

        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks
        )
        self.weights = torch.randn(64, 64)

    def ready(self):
        return True

    def train(self, start_at, seconds):
        import torch
        import torch.distributed as dist

        steps = 0
        grad = torch.zeros(64, 64)
        while time.time() < start_at:
            time.sleep(0.01)
        deadline = start_at + seconds
        while True:
            grad.copy_(self.weights @ self.weights.T)  # a little compute
            dist.all_reduce(grad)
            # every rank decides to stop on rank 0's clock, so they stop together
            stop = torch.tensor([float(time.time() >= deadline)])
            dist.broadcast(stop, 0)
            steps += 1
            if stop.item():
                return steps


with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
group = [Rank.remote(rank, port) for rank in range(ranks)]
ray.get([r.ready.remote() for r in group])
print("READY", ray.get_runtime_context().get_job_id(), flush=True)
start_at = float(sys.stdin.readline())  # the benchmark says when, once the bridge holds them
print("STEPS", ray.get([r.train.remote(start_at, seconds) for r in group])[0], flush=True)
