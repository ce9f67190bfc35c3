"""Four live Ray actors laid out on a 2 x 2 (dp, tp) DeviceMesh over gloo; each returns its
rank * 10. By default each stops at a breakpoint() in ``step``, after an all_reduce along tp.
With PLAN=loop each loops instead (``loop``): an all_reduce along tp of its ``finish`` flag,
then a step, with no breakpoint in the code; a tp group ends once either of its ranks has
``finish`` set (a debugger sets it). With PLAN=hang, rank 3 skips the last of three all_reduces
along tp: its tp peer, rank 2, waits in it for ever (the others return)."""

import datetime
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
        from torch.distributed.device_mesh import init_device_mesh

        # A long timeout: a busy machine may start one rank's process seconds after another's
        dist.init_process_group(
            "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=4,
            timeout=datetime.timedelta(seconds=120),
        )  # fmt: skip
        self.mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        self.rank = rank
        self.finish = 0

    def step(self):
        import torch
        import torch.distributed as dist

        grad = torch.ones(1) * (self.rank + 1)
        dist.all_reduce(grad, group=self.mesh.get_group("tp"))
        breakpoint()  # BREAK step
        return self.rank * 10

    def loop(self):
        import torch
        import torch.distributed as dist

        steps = 0
        while True:
            flag = torch.tensor([float(self.finish)])
            dist.all_reduce(flag, group=self.mesh.get_group("tp"))
            if flag.item() > 0:
                return self.rank * 10
            steps += 1  # BREAK loop
            time.sleep(0.05)

    def hang(self):
        import torch
        import torch.distributed as dist

        for _ in range(2 if self.rank == 3 else 3):
            dist.all_reduce(torch.ones(1), group=self.mesh.get_group("tp"))  # BREAK hang
        return self.rank * 10


port = free_port()
ranks = [Rank.remote(rank, port) for rank in range(4)]
plan = os.environ.get("PLAN", "step")
print("RESULT", ray.get([getattr(r, plan).remote() for r in ranks]), flush=True)
