import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def accumulate(n):
    total = 0
    for i in range(n):
        total += i
        breakpoint()  # BREAK loop
    return total


print("RESULT", ray.get(accumulate.remote(3)), flush=True)
