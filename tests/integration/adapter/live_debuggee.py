"""A stand-in for a live Ray worker (raydap.live): debugpy listens, the program runs on without
waiting for a client, untraced until a breakpoint or a pause needs tracing, and loops until
the file named by its argument exists."""

import os
import sys
import time

import debugpy

from raydap.live import trace_on_demand
from raydap.live.captures import skip_compiling_conditions

host, port = debugpy.listen(("127.0.0.1", 0))
trace_on_demand()
skip_compiling_conditions()  # as raydap.live.setup does
print(port, flush=True)
count = 0
while not os.path.exists(sys.argv[1]):
    count += 1  # LOOP
    time.sleep(0.005)
print("result", count > 0, flush=True)
