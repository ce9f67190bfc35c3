"""Two ranks that loop with no breakpoint() anywhere, in a job made live by raydap's hook.
Each rank loops until a debugger sets ``self.finish``, and returns ``rank * 10 + finish``."""

import time

import ray

ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.5)
class Rank:
    def __init__(self, rank):
        self.rank = rank
        self.finish = 0

    def run(self):
        rank, steps = self.rank, 0
        while not self.finish:
            steps += 1  # BREAK loop
            time.sleep(0.01)
        return rank * 10 + self.finish


ranks = [Rank.remote(r) for r in range(2)]
print("RESULT", ray.get([r.run.remote() for r in ranks]), flush=True)
