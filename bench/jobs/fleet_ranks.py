"""bench/fleet.py's job: N live gloo ranks as Ray actors, each issuing an all_reduce every
STEP seconds for ever (more than one collective a second), until the driver is stopped.

    fleet_ranks.py N STUCK STEP_FILE

Every rank learns the job's step from an all_reduce (``global_step``: the same on every rank
after it), and rank 0 writes it to STEP_FILE, so that a breakpoint can stop every rank at one
step. Rank N-1 stops joining once the file STUCK exists (stuck in its data loader): a hang.
The driver waits for every rank to end, failed or not, so a dead rank leaves the job running."""

import os
import sys
import time

import ray

from raydap.bridge.client.ports import free_port

ranks, stuck, step_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)
STEP = 0.3


@ray.remote(num_cpus=0)
class Rank:
    def __init__(self, rank, port):
        import torch.distributed as dist

        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
        self.rank = rank

    def ready(self):
        return self.rank

    def train(self):
        import torch
        import torch.distributed as dist

        step, grad = 0, torch.zeros(1)
        while True:
            step += 1
            loss = float(step * (self.rank + 1))  # a local for the stacks and captures
            while self.rank == ranks - 1 and os.path.exists(stuck):
                time.sleep(0.1)  # the data loader
            grad.fill_(step + 0 * loss)
            dist.all_reduce(grad, op=dist.ReduceOp.MAX)
            global_step = int(grad.item())
            if self.rank == 0:  # BREAK fleet
                with open(step_file + ".new", "w") as out:
                    out.write(str(global_step))
                os.replace(step_file + ".new", step_file)
            time.sleep(STEP)


port = free_port()
group = [Rank.remote(rank, port) for rank in range(ranks)]
ray.get([r.ready.remote() for r in group])
trained = [r.train.remote() for r in group]
print("TRAINING", flush=True)
ray.wait(trained, num_returns=len(trained))
print("RESULT", "ended", flush=True)
