"""Collective timeouts held off while a job is debugged (``raydap.live.timeouts``), on two real
gloo ranks (torch is on Python 3.11 here): raised from another thread while the rank waits
inside a collective, a later collective outlives a peer that stays away longer than the
group's own timeout, and once given back the group's own timeout ends a wait again."""

from __future__ import annotations

import json

import pytest

from raydap.live import collectives, timeouts
from tests.unit.live.gloo_ranks import run_two_ranks

#: Rank 1 reports; rank 0 is the peer that stays away. The group's own timeout is 2 s.
RANKS = """
import datetime, json, sys, threading, time
import torch, torch.distributed as dist
from raydap.live import collectives

rank, port = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                        world_size=2, timeout=datetime.timedelta(seconds=2))
t = torch.ones(1)
dist.all_reduce(t)
said = {}

def bridge_asks(seconds):  # what pydevd's reader thread runs for the bridge
    said[str(seconds)] = collectives.answer({"timeout": seconds})["timeouts"]

if rank == 0:
    time.sleep(1.0)
    dist.all_reduce(t)             # 2: rank 1 waited in it while its timeout was raised
    time.sleep(4.0)
    dist.all_reduce(t)             # 3: 4 s late, past the group's own 2 s
    bridge_asks(None)
    time.sleep(4.0)                # 4: never in time for rank 1
    sys.exit(0)
asker = threading.Thread(target=lambda: (time.sleep(0.3), bridge_asks(60)))
asker.start()
dist.all_reduce(t)                 # 2, raised meanwhile from the other thread
asker.join()
started = time.monotonic()
dist.all_reduce(t)                 # 3, issued after the raise
waited = time.monotonic() - started
bridge_asks(None)
started = time.monotonic()
try:
    dist.all_reduce(t)             # 4, with the group's own timeout back
    ended = "completed"
except RuntimeError as exc:
    ended = type(exc).__name__
print(json.dumps({"said": said, "waited": waited, "ended": ended,
                  "gave_up_after": time.monotonic() - started}), flush=True)
"""


def test_a_raised_timeout_outlives_a_late_peer_and_the_groups_own_comes_back() -> None:
    report = json.loads(run_two_ranks(RANKS, reporter=1))
    assert report["said"]["60"] == {"seconds": 60, "backends": 1, "own": [2.0]}
    assert report["said"]["None"] == {"seconds": None, "backends": 1, "own": [2.0]}
    assert report["waited"] > 3.0  # past the group's own 2 s, and it completed
    assert report["ended"] == "RuntimeError"  # the group's own timeout again
    assert report["gave_up_after"] < 3.5


def test_a_rank_without_groups_has_nothing_to_hold_off() -> None:
    assert timeouts.hold_off(None, 60) == {"seconds": None, "backends": 0, "own": []}


@pytest.mark.parametrize("bad", [0, -1, True, "60", 8 * 86_400, float("nan")])
def test_a_timeout_that_is_not_seconds_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="timeout is seconds"):
        collectives.answer({"timeout": bad})
