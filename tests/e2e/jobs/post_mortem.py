import ray

ray.init(runtime_env={"env_vars": {"RAY_DEBUG_POST_MORTEM": "1"}})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote(max_retries=0)
def load(batch):
    raise ValueError(f"bad batch {batch}")  # BREAK load


try:
    ray.get(load.remote(3))
    print("RESULT no error", flush=True)
except ray.exceptions.RayTaskError as exc:
    print("RESULT raised", type(exc.cause).__name__, flush=True)
