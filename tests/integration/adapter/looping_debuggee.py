"""Stops in a tight loop: each continue is followed at once by the next stop."""

import debugpy

host, port = debugpy.listen(("127.0.0.1", 0))
print(port, flush=True)
debugpy.wait_for_client()
for i in range(5):  # noqa: B007 (printed below)
    debugpy.breakpoint()
print("result", i, flush=True)
