"""The job of the editor test: this folder is the editor's workspace and the job's working_dir.

The workers import ``steps`` from Ray's package copy of this folder (``_ray_pkg_<hash>``), so
the editor only finds the file if the path is mapped back to the workspace.
"""

from pathlib import Path

import ray

ray.init(runtime_env={"working_dir": str(Path(__file__).parent)})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def step(n):
    import steps

    return steps.train_step(n)


first = ray.get(step.remote(0))
second = ray.get(step.remote(1))
print("RESULT", first, second, flush=True)
