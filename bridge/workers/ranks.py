"""Which rank a worker is, and which role it plays: from what the job already has.

A training job's people think in ranks ("rank 3 is stuck"), not in worker ids. Sources, each a
fact Ray or the job already keeps (nothing here asks the job to change):

- ``RANK`` in the worker's environment (torchrun's convention, and what a job sets through a
  runtime env's ``env_vars`` for ``init_process_group("env://")``);
- ``torch.distributed``'s own rank, asked of a paused worker (``in_worker.RANK``);
- verl's worker groups: actors named ``<prefix>WorkerDict_<pg>:<rank>`` whose colocated
  methods are ``<role>_<method>`` (``critic_compute_values``);
- Ray Train's world rank (asked by :mod:`.naming`).

Pure: callers bring the environment, names and answers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: The environment variables that name a rank, first found wins.
RANK_VARIABLES = ("RANK",)

#: verl's colocated worker group actor: ``JNzEwcWorkerDict_0:1`` (resource pool 0, rank 1).
_VERL_ACTOR = re.compile(r"WorkerDict_\d+:(?P<rank>\d+)$")
VERL_CLASS_SUFFIX = "WorkerDict"
#: verl's role keys, longest first where one begins another (``actor_rollout_compute_...``).
VERL_ROLES = (
    "actor_rollout_ref", "actor_rollout", "reward_model", "actor", "rollout", "critic", "ref",
    "reward", "rm",
)  # fmt: skip

MAX_RANK = 10_000_000


def rank_from_environment(environment: Mapping[str, str]) -> int | None:
    for name in RANK_VARIABLES:
        value = environment.get(name, "")
        if value.isdigit() and int(value) < MAX_RANK:
            return int(value)
    return None


def rank_from_probe(answer: str) -> int | None:
    """The answer to ``in_worker.RANK`` as debugpy shows it (``'3'`` or ``'None'``)."""
    answer = answer.strip()
    return int(answer) if answer.isdigit() and int(answer) < MAX_RANK else None


def rank_from_actor_name(name: str | None) -> int | None:
    found = _VERL_ACTOR.search(name or "")
    return int(found["rank"]) if found else None


def role_from_task(task_name: str | None) -> str | None:
    """A verl colocated method's role: ``WorkerDict.critic_compute_values`` -> ``critic``."""
    owner, _, method = (task_name or "").rpartition(".")
    if not owner.endswith(VERL_CLASS_SUFFIX) or not method:
        return None
    for role in VERL_ROLES:
        if method.startswith(role + "_"):
            return role
    head, underscore, _ = method.partition("_")
    return head if underscore and head else None


def describe(rank: int | None, role: str | None, place: str = "") -> str | None:
    """``rank 3 (critic)``, ``rank 3``, ``critic``, or None when neither is known; ``place``
    (its mesh coordinates, ``dp=0 tp=1``) follows."""
    who = f"rank {rank}" if rank is not None else role
    if rank is not None and role:
        who = f"rank {rank} ({role})"
    return f"{who} {place}" if who and place else who or place or None
