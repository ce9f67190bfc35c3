"""Third job of the editor test: two ranks loop, with no breakpoint() anywhere, until a flag
file appears; the job is live (raydap's hook), so the editor's breakpoints and Pause reach it."""

from pathlib import Path

import ray

here = Path(__file__).parent
ray.init(runtime_env={"working_dir": str(here), "worker_process_setup_hook": "raydap.live.setup"})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.5)
class Rank:
    def run(self, rank, flag):
        import loop

        return loop.spin(rank, flag)


ranks = [Rank.remote() for _ in range(2)]
flag = str(here / "done.flag")
print("RESULT", ray.get([r.run.remote(i, flag) for i, r in enumerate(ranks)]), flush=True)
