"""A live job (raydap's hook) whose task calls Ray's own set_trace once the file named by $FLAG
exists (the test makes it when the bridge holds the worker while it runs)."""

import os
import time

import ray

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def scale(x, flag):
    while not os.path.exists(flag):
        time.sleep(0.01)
    y = x * 3
    ray.util.pdb.set_trace()  # BREAK set_trace
    return y + 1


print("RESULT", ray.get(scale.remote(5, os.environ["FLAG"])), flush=True)
