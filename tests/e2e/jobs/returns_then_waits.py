import time

import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def square(x):
    y = x * x
    breakpoint()  # BREAK square
    return y


@ray.remote(num_cpus=0.5)
class Counter:
    def step(self, k):
        breakpoint()  # BREAK step
        return k


counter = Counter.remote()
print("RESULT", ray.get([square.remote(7), counter.step.remote(3)]), flush=True)
time.sleep(300)  # the job lives on; its workers stay, idle
