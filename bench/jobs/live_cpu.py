"""P7 overhead: CPU-bound work in a Ray actor, made live by raydap's hook or not.

    live_cpu.py plain|live ROUNDS SCALE FLAG

creates the actor, prints READY, waits for the file FLAG (the benchmark makes it once the
bridge holds the worker), runs each workload ROUNDS times and prints their wall times as JSON.
"""

import json
import os
import sys
import time
from pathlib import Path

import ray

mode, rounds, scale, flag = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
runtime_env = {"working_dir": str(Path(__file__).parent)}
if mode == "live":
    runtime_env["worker_process_setup_hook"] = "raydap.live.setup"
ray.init(runtime_env=runtime_env)


@ray.remote
class Worker:
    def run(self, flag, rounds, scale):
        import cpu_work

        while not os.path.exists(flag):
            time.sleep(0.01)
        times = {"python_calls": [], "numpy": []}
        for _ in range(rounds):
            times["python_calls"].append(cpu_work.python_calls(int(2_000_000 * scale)))
            times["numpy"].append(cpu_work.numpy_work(int(200 * scale)))
        return times


worker = Worker.remote()
result = worker.run.remote(flag, rounds, scale)
print("READY", ray.get_runtime_context().get_job_id(), flush=True)
print("TIMES", json.dumps(ray.get(result)), flush=True)
