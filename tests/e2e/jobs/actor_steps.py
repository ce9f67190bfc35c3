import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
class Counter:
    def __init__(self):
        self.count = 0

    def step(self, k):
        self.count += k
        breakpoint()  # BREAK step
        return self.count


counter = Counter.remote()
first = ray.get(counter.step.remote(2))
second = ray.get(counter.step.remote(3))
print("RESULT", first, second, flush=True)
