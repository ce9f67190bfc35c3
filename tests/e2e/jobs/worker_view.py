"""A task that stops in a helper it called, with a local of markup, for the web page's worker
view: its source, two frames, locals to expand, a step and the result."""

import ray

ray.init()
print("JOB", ray.get_runtime_context().get_job_id(), flush=True)


def checksum(values):
    secret = sum(values)
    label = "<img src=x onerror=alert(1)><b>bold</b>"
    breakpoint()  # BREAK checksum
    doubled = secret * 2  # AFTER checksum
    return doubled, label


@ray.remote
def outer(name):
    values = [7, 42]
    return checksum(values)[0]  # CALLS checksum


print("RESULT", ray.get(outer.remote("<script>alert(1)</script>")), flush=True)
