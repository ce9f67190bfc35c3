"""Second job of the editor test: two ranks pause at the same time, each in its own worker."""

from pathlib import Path

import ray

ray.init(runtime_env={"working_dir": str(Path(__file__).parent)})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def rank(n):
    import steps

    return steps.train_step(n)


print("RESULT", ray.get([rank.remote(0), rank.remote(1)]), flush=True)
