"""Stops again and again in one function until it is killed: a worker that every DAP request,
continue and steps included, may be sent to, and that is still stopped and debuggable after.
Its frame holds secrets, as a training step's often does (a token, a URL with a password)."""

import debugpy

host, port = debugpy.listen(("127.0.0.1", 0))
print(port, flush=True)
debugpy.wait_for_client()


def step(i):
    value = {"i": i}
    hf_token = "hf_" + "Ab1" * 12  # noqa: F841 (read by the tests)
    store = "postgres://admin:hunter2@db.internal/x"  # noqa: F841
    debugpy.breakpoint()
    return value


for i in range(100_000):
    step(i)
