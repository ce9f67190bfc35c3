"""A real debugpy process that pauses again each time its client leaves (for P2/P3)."""

import time

import debugpy

_, port = debugpy.listen(("127.0.0.1", 0))
print(port, flush=True)
rounds = 0
while True:
    debugpy.wait_for_client()
    rounds += 1
    payload = {"rank": 3, "shape": (8, 1024), "loss": 0.125, "names": ["a", "b", "c"]}
    debugpy.breakpoint()
    time.sleep(0.05)  # the client left; wait for the next
