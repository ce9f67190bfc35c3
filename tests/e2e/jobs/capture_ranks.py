"""Four live gloo ranks training: a step counter and a loss all-reduced every step, until the
file named by $FLAG exists (rank 0 looks, and the all_reduce tells every rank, so all stop at
the same step). No breakpoint() anywhere: the test sets capture points on the step's line and
the job must run on as if nobody looked. Each rank returns ``[rank, steps, whether every
all_reduce was right]``."""

import os
import time

import ray

from raydap.bridge.client.ports import free_port  # the master's port, taken by no lane meanwhile

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

        step, right, done = 0, True, False
        weights = torch.full((8,), float(self.rank))
        while not done:
            step += 1
            stop = float(self.rank == 0 and os.path.exists(flag))
            loss = torch.tensor([float(self.rank + 1) * step, stop])
            dist.all_reduce(loss)
            right &= loss[0].item() == 10.0 * step  # BREAK step
            done = loss[1].item() > 0
            time.sleep(0.01)
        del weights
        return [self.rank, step, right]


port = free_port()
ranks = [Rank.remote(r, port) for r in range(4)]
print("RESULT", ray.get([r.train.remote(os.environ["FLAG"]) for r in ranks]), flush=True)
