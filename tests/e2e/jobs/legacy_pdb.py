import ray

ray.init(runtime_env={"env_vars": {"RAY_DEBUG": "legacy"}})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def old_style(x):
    breakpoint()  # BREAK legacy
    return x + 1


print("RESULT", ray.get(old_style.remote(1)), flush=True)
