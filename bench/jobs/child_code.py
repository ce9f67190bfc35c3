"""What the children of bench/jobs/many_children.py run (importable: spawned children import
it by name)."""

import os
import time


def loop(release: str) -> None:
    steps = 0
    while not os.path.exists(release):
        steps += 1  # CHILD LOOP
        time.sleep(0.01)


def nothing() -> None:
    pass
