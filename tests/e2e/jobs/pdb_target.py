import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


def total_of(values):
    total = 0
    for value in values:
        total += value  # BREAK loop
    return total


@ray.remote
def scale(x, factor=3):
    values = [x, x * 2, x * 3]
    label = "scaled"  # noqa: F841 (completed in the debugger)
    breakpoint()  # BREAK scale
    return total_of(values) * factor


print("RESULT", ray.get(scale.remote(5)), flush=True)
