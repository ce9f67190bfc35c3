"""A live job whose actor starts child processes, for bench.children.

    many_children.py listed N RELEASE   N spawned children, one every 0.3 s, each looping
                                        until RELEASE exists; prints their (pid, start time)
    many_children.py churn N            N forked children that return at once, one after the
                                        other; prints how long that took
RAYDAP_CHILDREN in the environment is passed on to the workers."""

import multiprocessing
import os
import sys
import time
from pathlib import Path

import ray

ray.init(runtime_env={
    "worker_process_setup_hook": "raydap.live.setup",
    "working_dir": str(Path(__file__).parent),
    "env_vars": {"RAYDAP_CHILDREN": os.environ.get("RAYDAP_CHILDREN", "1")},
})  # fmt: skip
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.5)
class Parent:
    def listed(self, count, release):
        import child_code

        context = multiprocessing.get_context("spawn")
        started, children = [], []
        for _ in range(count):
            child = context.Process(target=child_code.loop, args=(release,))
            at = time.time()
            child.start()
            started.append((child.pid, at))
            children.append(child)
            time.sleep(0.3)
        for child in children:
            child.join()
        return started

    def churn(self, count):
        import child_code

        context = multiprocessing.get_context("fork")
        start = time.perf_counter()
        for _ in range(count):
            child = context.Process(target=child_code.nothing)
            child.start()
            child.join()
        return time.perf_counter() - start


parent = Parent.remote()
mode, count = sys.argv[1], int(sys.argv[2])
if mode == "listed":
    print("RESULT", ray.get(parent.listed.remote(count, sys.argv[3])), flush=True)
else:
    print("RESULT", ray.get(parent.churn.remote(count)), flush=True)
