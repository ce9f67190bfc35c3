"""An actor stopped once at breakpoint(), whose next call raises: its caller must get the
error itself (on Python 3.12+ pydevd tags exceptions with an object Ray cannot unpickle)."""

import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@ray.remote
class Loader:
    def first(self):
        breakpoint()  # BREAK first
        return 1

    def second(self):
        raise ValueError("bad shard 2")


loader = Loader.remote()
ray.get(loader.first.remote())
try:
    ray.get(loader.second.remote())
    print("RESULT no error", flush=True)
except ray.exceptions.RayTaskError as exc:
    print("RESULT raised", type(exc.cause).__name__, exc.cause, flush=True)
except Exception as exc:  # what a user met: UnserializableException
    print("RESULT lost", type(exc).__name__, flush=True)
