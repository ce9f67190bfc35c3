import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def square(x):
    y = x * x
    breakpoint()  # BREAK square
    return y


print("RESULT", ray.get(square.remote(7)), flush=True)
