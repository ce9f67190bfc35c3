import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def square(x):
    y = x * x
    breakpoint()  # BREAK square
    return y


print("RESULT", sum(ray.get([square.remote(x) for x in (2, 3, 4)])), flush=True)
