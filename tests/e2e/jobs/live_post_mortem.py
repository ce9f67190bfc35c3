"""A live job (raydap's hook) whose task fails under RAY_DEBUG_POST_MORTEM=1, once the file
named by $FLAG exists (the test makes it when the bridge holds the worker while it runs)."""

import os
import time

import ray

ray.init(
    runtime_env={
        "worker_process_setup_hook": "raydap.live.setup",
        "env_vars": {"RAY_DEBUG_POST_MORTEM": "1"},
    }
)
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(max_retries=0)
def load(batch, flag):
    while not os.path.exists(flag):
        time.sleep(0.01)
    raise ValueError(f"bad batch {batch}")  # BREAK load


try:
    ray.get(load.remote(4, os.environ["FLAG"]))
    print("RESULT no error", flush=True)
except ray.exceptions.RayTaskError as exc:
    print("RESULT raised", type(exc.cause).__name__, flush=True)
