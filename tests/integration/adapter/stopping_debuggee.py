"""Stops again and again in one function until it is killed: a worker that every DAP request,
continue and steps included, may be sent to, and that is still stopped and debuggable after."""

import debugpy

host, port = debugpy.listen(("127.0.0.1", 0))
print(port, flush=True)
debugpy.wait_for_client()


def step(i):
    value = {"i": i}
    debugpy.breakpoint()
    return value


for i in range(100_000):
    step(i)
