"""A task paused at breakpoint() whose debugpy logs go to RAYDAP_TEST_DEBUGPY_LOGS, so a test
can find (and kill) the debug adapter of exactly this worker."""

import os

import ray

ray.init(runtime_env={"env_vars": {"DEBUGPY_LOG_DIR": os.environ["RAYDAP_TEST_DEBUGPY_LOGS"]}})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def square(x):
    y = x * x
    breakpoint()  # BREAK square
    return y


print("RESULT", ray.get(square.remote(7)), flush=True)
