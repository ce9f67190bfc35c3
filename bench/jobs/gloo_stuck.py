"""H3: four gloo ranks train; rank 3 gets stuck in its data loader at step 5, and writes when
to the file STUCK (for the time from a stuck rank to the hang verdict).

    gloo_stuck.py STUCK
"""

import os
import socket
import sys
import time

import ray

stuck_file = sys.argv[1]
ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.25)
class Rank:
    def __init__(self):
        import torch
        import torch.distributed as dist

        dist.init_process_group("gloo")
        self.model = torch.nn.Linear(64, 1)

    def fetch_batch(self, step):
        import torch

        if step == 5 and os.environ["RANK"] == "3":
            with open(stuck_file, "w") as file:
                file.write(str(time.time()))
            while True:
                time.sleep(0.05)
        return torch.randn(32, 64)

    def train(self):
        import torch.distributed as dist

        for step in range(10**9):
            batch = self.fetch_batch(step)
            self.model.zero_grad()
            self.model(batch).sum().backward()
            dist.all_reduce(self.model.weight.grad)
            time.sleep(0.2)


with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = str(probe.getsockname()[1])
ranks = [
    Rank.options(runtime_env={"env_vars": {
        "RANK": str(rank), "WORLD_SIZE": "4", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port,
    }}).remote()
    for rank in range(4)
]  # fmt: skip
ray.get([r.train.remote() for r in ranks])
