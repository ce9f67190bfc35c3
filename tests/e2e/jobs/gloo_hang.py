"""Four Ray actors in one torch.distributed (gloo) process group train a tiny model, in a job
made live by raydap's hook. Rank 3 is stuck in its data loader before the gradient all_reduce
until a debugger sets ``ready``; ranks 0-2 wait for it inside all_reduce. Each rank returns
the sum of its averaged gradients, which is the same on every rank once they all took part.

Each rank is told its rank only as ``init_process_group``'s argument, the plain way: nothing
in its environment names it."""

import os
import time

import ray

from raydap.bridge.client.ports import free_port  # the master's port, taken by no lane meanwhile

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.25)
class Rank:
    def __init__(self, rank, port):
        import torch
        import torch.distributed as dist

        assert "RANK" not in os.environ
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=4
        )
        self.rank = rank
        torch.manual_seed(0)
        self.model = torch.nn.Linear(4, 1)

    def fetch_batch(self, step):
        import torch

        ready = self.rank != 3
        while not ready:
            time.sleep(0.05)  # BREAK fetch
        return torch.full((8, 4), float(step + self.rank))

    def train(self, steps):
        import torch.distributed as dist

        for step in range(steps):
            batch = self.fetch_batch(step)
            self.model.zero_grad()
            self.model(batch).sum().backward()
            grad = self.model.weight.grad
            dist.all_reduce(grad)  # BREAK reduce
            grad /= dist.get_world_size()
            after = float(grad.sum())  # BREAK after
        return round(after, 3)


port = free_port()
ranks = [Rank.remote(rank, port) for rank in range(4)]
print("RESULT", ray.get([r.train.remote(1) for r in ranks]), flush=True)
