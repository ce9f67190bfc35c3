"""The soak's workers: ACTORS actors, each stopping at ``breakpoint()`` STEPS times in a row.

    soak_steps.py ACTORS STEPS live|plain

A live job runs with raydap's hook (the bridge holds its workers while they run); a plain one
pauses with Ray's own ``breakpoint()`` only. Prints ``JOB id``, then ``RESULT`` with each
actor's count of the steps it ran (every one of them: no stop may be skipped).
"""

import sys

import ray

actors, steps, kind = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
hook = {"worker_process_setup_hook": "raydap.live.setup"} if kind == "live" else None
ray.init(runtime_env=hook)
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.1)
class Stepper:
    def run(self, steps):
        ran = 0
        for step in range(steps):  # noqa: B007 (read by the soak at each stop)
            breakpoint()  # SOAK: the soak reads `step` here and lets it go on
            ran += 1
        return ran


group = [Stepper.remote() for _ in range(actors)]
print("RESULT", ray.get([actor.run.remote(steps) for actor in group]), flush=True)
