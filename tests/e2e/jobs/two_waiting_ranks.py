import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(num_cpus=0.5)
def rank(number):
    share = (number + 1) * 100
    breakpoint()  # BREAK rank
    return share


print("RESULT", sorted(ray.get([rank.remote(n) for n in range(2)])), flush=True)
