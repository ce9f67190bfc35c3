"""Four live gloo ranks training: a step counter, a loss all-reduced every step, for a fixed
time once all four are up. No breakpoint() anywhere: the test sets capture points on the step's
line and the job must run on as if nobody looked. Each rank returns ``[rank, steps, whether
every all_reduce was right]``."""

import os
import sys
import time

import ray

from raydap.bridge.client.ports import free_port  # the master's port, taken by no lane meanwhile

RUN_FOR = float(sys.argv[1]) if len(sys.argv) > 1 else 12.0

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.25)
class Rank:
    def __init__(self, rank, port):
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=4)
        self.rank = rank

    def ready(self):
        return self.rank

    def train(self, until):
        import torch
        import torch.distributed as dist

        step, right = 0, True
        weights = torch.full((8,), float(self.rank))
        while time.time() < until:
            step += 1
            loss = torch.tensor([float(self.rank + 1) * step])
            dist.all_reduce(loss)
            right &= loss.item() == 10.0 * step  # BREAK step
            time.sleep(0.01)
        del weights
        return [self.rank, step, right]


port = free_port()
ranks = [Rank.remote(r, port) for r in range(4)]
ray.get([r.ready.remote() for r in ranks])  # the group is made: training starts now
until = time.time() + RUN_FOR
print("RESULT", ray.get([r.train.remote(until) for r in ranks]), flush=True)
