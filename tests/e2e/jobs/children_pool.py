"""A live job whose actor starts two multiprocessing (spawn) children. Each child waits for the
file named by CHILDREN_RELEASE; the child numbered CHILD_BREAKPOINT then calls breakpoint().
The actor returns its children's results and exit codes. RAYDAP_CHILDREN is passed on."""

import multiprocessing
import os
from pathlib import Path

import ray

ray.init(runtime_env={
    "worker_process_setup_hook": "raydap.live.setup",
    "working_dir": str(Path(__file__).with_name("children_code")),
    "env_vars": {n: os.environ.get(n, "") for n in ("CHILDREN_RELEASE", "CHILD_BREAKPOINT",
                                                       "RAYDAP_CHILDREN")},
})  # fmt: skip
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.5)
class Pool:
    def run(self):
        import child_work

        context = multiprocessing.get_context("spawn")
        queue = context.Queue()
        children = [context.Process(target=child_work.child_loop, args=(i, queue)) for i in (1, 2)]
        for child in children:
            child.start()
        for child in children:
            child.join()
        results = [queue.get(timeout=5) for child in children if child.exitcode == 0]
        return sorted(results), sorted(child.exitcode for child in children)


pool = Pool.remote()
print("RESULT", ray.get(pool.run.remote()), flush=True)
