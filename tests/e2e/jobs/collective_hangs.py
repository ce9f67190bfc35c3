"""Four live Ray actors in one torch.distributed (gloo) group, each told its rank only by
``init_process_group``, hang in the way ``HANG`` names (or not):

- ``skip``: rank 2's batch at step 2 is empty, so it skips that step's gradient all_reduce;
  its later all_reduces pair with the others' earlier ones, it returns one short, and ranks
  0, 1 and 3 wait forever for their last one (#STEPS), issued asynchronously as a GPU rank's
  returns at once: their stacks stand at ``work.wait()``, a few lines past the call;
- ``mismatch``: at step 3 rank 1 broadcasts where the others all_reduce: all four wait;
- ``progress``: the ranks train for ever, rank 0 slower than the others, who wait for it in
  the same all_reduce at every sample: their stacks stand still, yet the job progresses. Until
  the test kills a rank: the driver waits for every rank to end, failed or not, so the job
  lives on while the peers of the dead rank wait for it.
"""

import os
import time

import ray

from raydap.bridge.client.ports import free_port  # the master's port, taken by no lane meanwhile

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)
HANG = os.environ["HANG"]
STEPS = 6


@ray.remote(num_cpus=0.25)
class Rank:
    def __init__(self, rank, port):
        import torch.distributed as dist

        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=4
        )
        self.rank = rank

    def batch(self, step):
        return [] if (HANG, self.rank, step) == ("skip", 2, 2) else [1.0, 2.0]

    def train(self):
        import torch
        import torch.distributed as dist

        grad = torch.ones(4)
        step = 0
        while HANG == "progress" or step < STEPS:
            if not self.batch(step):
                step += 1
                continue  # an empty batch: nothing to average (the bug)
            if (HANG, self.rank) == ("progress", 0):
                time.sleep(0.3)  # a slow data loader: the others wait for it in all_reduce
            if (HANG, self.rank, step) == ("mismatch", 1, 3):
                dist.broadcast(grad, 0)  # BREAK broadcast
            elif HANG == "skip":  # as a GPU rank does: issued, then waited for later
                work = dist.all_reduce(grad, async_op=True)  # BREAK reduce
                grad.add_(0)  # (the step's own work)
                work.wait()  # BREAK wait (native code under this line, as .item() is)
            else:
                dist.all_reduce(grad)  # BREAK blocking all_reduce
            grad /= 4
            step += 1
        return step


port = free_port()
ranks = [Rank.remote(rank, port) for rank in range(4)]
print("STARTED", flush=True)
trained = [r.train.remote() for r in ranks]
if HANG == "progress":  # every rank's end, a failure included: the job outlives a dead rank
    ray.wait(trained, num_returns=len(trained))
    print("RESULT", "ended", flush=True)
else:
    print("RESULT", ray.get(trained), flush=True)
