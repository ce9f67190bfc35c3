import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(resources={"far": 1})
def far(x):
    here = ray.util.get_node_ip_address()
    breakpoint()  # BREAK far
    return (x * 3, here)


print("RESULT", ray.get(far.remote(5)), flush=True)
