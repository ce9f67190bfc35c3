"""A stand-in for a Ray worker paused at breakpoint(): debugpy listens, waits for the bridge,
and stops twice in ``work``, as a Ray task with two breakpoints would."""

import sys
import time

import debugpy

host, port = debugpy.listen(("127.0.0.1", 0))
print(port, flush=True)
debugpy.wait_for_client()


def work(n):
    total = n * 2
    debugpy.breakpoint()
    total += 1  # first stop
    debugpy.breakpoint()
    return total  # second stop


print("result", work(20), flush=True)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
