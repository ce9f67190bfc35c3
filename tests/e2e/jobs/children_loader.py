"""A live job whose task reads a torch DataLoader with two (forked) workers, which wait for
the file named by CHILDREN_RELEASE."""

import os
from pathlib import Path

import ray

ray.init(runtime_env={
    "worker_process_setup_hook": "raydap.live.setup",
    "working_dir": str(Path(__file__).with_name("children_code")),
    "env_vars": {"CHILDREN_RELEASE": os.environ.get("CHILDREN_RELEASE", "")},
})  # fmt: skip
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.5)
def load():
    import child_data
    import torch.utils.data

    loader = torch.utils.data.DataLoader(child_data.Squares(), batch_size=None, num_workers=2)
    return sum(int(square) for square in loader)


print("RESULT", ray.get(load.remote()), flush=True)
