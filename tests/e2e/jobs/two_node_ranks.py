"""Two live Ray actors in one gloo group, rank 0 on the head (resource ``near``) and rank 1 on
the other node (``far``), all_reducing for ever until the test takes the other node away.
Rank 0 then waits in its task, as a rank whose NCCL peer is gone does (gloo raises at once),
so the job runs on while its verdict is read: a job that ended is no longer judged.

``HEAD_IP`` is where rank 0 keeps the group's store; ``GLOO_DEVICES`` names each rank's network
device (``head,node``): the hosts are network namespaces of one machine, whose hostname
resolves to no address of theirs."""

import os
import time

import ray

from raydap.bridge.client.ports import free_port

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)
DEVICES = os.environ["GLOO_DEVICES"].split(",")  # read here: workers have their own env
HEAD_IP = os.environ["HEAD_IP"]


@ray.remote(num_cpus=0)
class Rank:
    def __init__(self, rank, port):
        import torch.distributed as dist

        os.environ["GLOO_SOCKET_IFNAME"] = DEVICES[rank]
        dist.init_process_group(
            "gloo", init_method=f"tcp://{HEAD_IP}:{port}", rank=rank, world_size=2
        )
        self.rank = rank

    def train(self):
        import torch
        import torch.distributed as dist

        grad = torch.ones(4)
        try:
            while True:
                dist.all_reduce(grad)
                grad /= 2
                time.sleep(0.1)
        except RuntimeError:  # its peer is gone
            while True:
                time.sleep(1)


port = free_port()
ranks = [Rank.options(resources={place: 0.5}).remote(rank, port)
         for rank, place in enumerate(("near", "far"))]  # fmt: skip
trained = [r.train.remote() for r in ranks]
print("STARTED", flush=True)
ray.wait(trained, num_returns=len(trained))
print("RESULT", "ended", flush=True)
