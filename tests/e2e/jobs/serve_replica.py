import ray
from ray import serve

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


@serve.deployment
class Echo:
    def __call__(self, word):
        breakpoint()  # BREAK echo
        return word


serve.start(proxy_location="Disabled")
try:
    handle = serve.run(Echo.bind(), name="shop", route_prefix=None)
    print("RESULT", handle.remote("hi").result(timeout_s=120), flush=True)
finally:
    serve.shutdown()  # Serve apps outlive their driver otherwise
