import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.5)
class Rank:
    def __init__(self, rank):
        self.rank = rank

    def step(self):
        loss = 1.0 / (self.rank + 1)  # noqa: F841 (looked at in the debugger)
        breakpoint()  # BREAK step
        return self.rank * 10


ranks = [Rank.remote(r) for r in range(4)]
print("RESULT", ray.get([r.step.remote() for r in ranks]), flush=True)
