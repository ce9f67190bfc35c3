"""Code that runs in child processes of Ray workers (the ``children.py`` job)."""

import os
import time


def released() -> bool:
    """Whether the test let the children go on (at once, without a release file)."""
    path = os.environ.get("CHILDREN_RELEASE")
    return not path or os.path.exists(path)


def child_loop(index, queue):
    """A multiprocessing (spawn) child: waits for the test's release, returns its index."""
    steps = 0
    while not released():
        steps += 1  # BREAK child
        time.sleep(0.02)
    if os.environ.get("CHILD_BREAKPOINT") == str(index):
        breakpoint()  # BREAK child_breakpoint
    queue.put(index * 100)
