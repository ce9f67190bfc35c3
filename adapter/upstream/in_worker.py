"""The Python the bridge evaluates in a paused worker's frame, in one place.

Each is one expression (DAP ``evaluate`` takes one), reads only, and imports nothing the worker
has not imported already, except from the standard library. They run on whatever Python the
worker runs, so ``tests/unit/adapter/upstream/test_in_worker.py`` evaluates each one on every
Python of the matrix, against small stand-ins for the torch and Ray objects it reads.

The live hook's own code (``raydap.live``) and the functions shipped to a Ray worker
(:mod:`.ray_hook`) are modules of their own; these are the one-liners.
"""

from __future__ import annotations

#: The largest file a worker is asked to send whole (an editor's source request, pdb's list).
MAX_SOURCE_BYTES = 4 * 1024 * 1024


def read_file(path: str, most: int = MAX_SOURCE_BYTES) -> str:
    """The text of the file at ``path`` on the worker's node, or None if it is over ``most``
    bytes (undecodable bytes replaced)."""
    return (
        f"(lambda p: p.read_text(errors='replace') if p.stat().st_size <= {int(most)} "
        f"else None)(__import__('pathlib').Path({path!r}))"
    )


def read_lines(path: str, first: int, last: int) -> str:
    """Lines ``first`` to ``last`` (from 1, inclusive) of a file as the worker's Python sees
    it (``linecache``: what its tracebacks show), joined; empty if there is no such file."""
    return f"''.join(__import__('linecache').getlines({path!r})[{max(0, first - 1)}:{int(last)}])"


#: Its torch.distributed rank if a process group is up, else ``RANK`` from its environment,
#: else None.
RANK = (
    "(lambda d, env: d.get_rank() if d is not None and d.is_available() and d.is_initialized()"
    " else (int(env['RANK']) if env.get('RANK', '').isdigit() else None))"
    "(__import__('sys').modules.get('torch.distributed'), __import__('os').environ)"
)

#: A Ray Train worker's world rank.
TRAIN_RANK = "__import__('ray.train', fromlist=['get_context']).get_context().get_world_rank()"

#: What a child process of a worker is: ``DataLoader worker 1``, or its multiprocessing name
#: and target (``Process-2 child_loop``).
CHILD_NAME = (
    "(lambda mp, data: 'DataLoader worker %d' % data.get_worker_info().id"
    " if data is not None and data.get_worker_info() is not None"
    " else ' '.join(filter(None, [mp.current_process().name, getattr(getattr("
    "mp.current_process(), '_target', None), '__qualname__', '')])))"
    "(__import__('multiprocessing'), __import__('sys').modules.get('torch.utils.data'))"
)
