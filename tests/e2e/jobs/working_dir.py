from pathlib import Path

import ray

ray.init(runtime_env={"working_dir": str(Path(__file__).with_name("shipped"))})
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
def go(n):
    import shipped

    return shipped.run(n)


print("RESULT", ray.get(go.remote(3)), flush=True)
