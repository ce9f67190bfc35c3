"""H2: ranks doing CPU work in a live job, for the hang watch's cost.

    busy_ranks.py RANKS SECONDS

Each rank counts how many small Python steps it makes in SECONDS; prints the total.
"""

import sys
import time

import ray

ranks, seconds = int(sys.argv[1]), float(sys.argv[2])
ray.init(runtime_env={"worker_process_setup_hook": "raydap.live.setup"})


@ray.remote(num_cpus=0.1)
class Rank:
    def ready(self):
        return True

    def work(self, start_at, seconds):
        while time.time() < start_at:
            time.sleep(0.01)
        steps, total = 0, 0
        deadline = start_at + seconds
        while time.time() < deadline:
            for value in range(1000):
                total = (total + value * value) % 1_000_003
            steps += 1
        return steps


group = [Rank.remote() for _ in range(ranks)]
ray.get([r.ready.remote() for r in group])
print("READY", ray.get_runtime_context().get_job_id(), flush=True)
start_at = float(sys.stdin.readline())  # the benchmark says when, once the bridge holds them
print("STEPS", sum(ray.get([r.work.remote(start_at, seconds) for r in group])), flush=True)
