import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)
answer = 42
breakpoint()  # BREAK driver
print("RESULT", answer, flush=True)
