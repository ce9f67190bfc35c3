"""The hang verdict over samples in time: four ranks, three in all_reduce, one apart."""

from raydap.bridge.cluster.pyspy import Frame
from raydap.bridge.hangs.verdicts import HangJudge, HangMemory, RankSample, news

C10D = "/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py"


def at(*frames: tuple[str, str, int]) -> tuple[Frame, ...]:
    return tuple(Frame(function=f, path=p, line=n) for f, p, n in frames)


REDUCING = at(("all_reduce", C10D, 2800), ("train_step", "/job/train.py", 30))
FETCHING = at(("fetch_batch", "/job/train.py", 12), ("train_step", "/job/train.py", 26))
POLLING = at(("fetch_batch", "/job/train.py", 13), ("train_step", "/job/train.py", 26))
COMPUTING = at(("forward", "/job/model.py", 40), ("train_step", "/job/train.py", 28))


def ranks(*stacks: tuple[Frame, ...]) -> list[RankSample]:
    return [RankSample(f"w{i}", i, None, frames) for i, frames in enumerate(stacks)]


def test_still_ranks_one_waiting_are_a_suspected_hang_naming_the_straggler() -> None:
    judge = HangJudge(hang_after=60)
    first = judge.observe("job", ranks(REDUCING, REDUCING, REDUCING, FETCHING), now=100)
    assert first.state == "progressing" and not first.stragglers
    # rank 3 polls in fetch_batch: its innermost line moves, it does not progress
    later = judge.observe("job", ranks(REDUCING, REDUCING, REDUCING, POLLING), now=161)
    assert later.state == "suspected_hang" and later.since == 100
    [straggler] = later.stragglers
    assert (straggler.rank, straggler.function, straggler.line) == (3, "fetch_batch", 13)
    largest = later.groups[0]
    assert largest.ranks == [0, 1, 2] and largest.wait == "all_reduce"
    assert later.summary == "no progress: 3 ranks wait in all_reduce; rank 3 in fetch_batch"
    assert news(first, later) and not news(later, later)


def test_a_job_that_makes_progress_is_never_hung() -> None:
    judge = HangJudge(hang_after=10)
    for step in range(20):  # a rank moves between compute and all_reduce each sample
        moving = COMPUTING if step % 2 else REDUCING
        verdict = judge.observe("job", ranks(REDUCING, moving), now=step * 5.0)
        assert verdict.state == "progressing"


def test_still_ranks_that_wait_on_nothing_known_are_not_called_hung() -> None:
    judge = HangJudge(hang_after=10)
    judge.observe("job", ranks(COMPUTING, FETCHING), now=0)
    assert judge.observe("job", ranks(COMPUTING, FETCHING), now=60).state == "progressing"


def test_a_new_rank_counts_as_movement_and_a_rank_that_left_is_forgotten() -> None:
    judge = HangJudge(hang_after=10)
    judge.observe("job", ranks(REDUCING, REDUCING), now=0)
    assert judge.observe("job", ranks(REDUCING, REDUCING, FETCHING), now=11).state == (
        "progressing"
    )
    assert judge.observe("job", ranks(REDUCING, REDUCING, FETCHING), now=22).state == (
        "suspected_hang"
    )
    judge.forget("job")
    assert judge.verdicts == {} and judge.jobs() == []


def test_the_summary_names_the_users_frame_and_what_it_waits_on() -> None:
    """Not "worker … waits in wait": the job's own frame, and the wait in a person's words
    (py-spy names methods from Python 3.11 on: ``Event.wait`` over ``Condition.wait``)."""
    threading = "/usr/lib/python3.11/threading.py"
    on_event = at(
        ("Condition.wait", threading, 327),
        ("Event.wait", threading, 629),
        ("fetch_batch", "/job/train.py", 12),
        ("train_step", "/job/train.py", 26),
    )
    on_lock = at(("acquire", threading, 90), ("load", "/job/data.py", 3),
                 ("train_step", "/job/train.py", 26))  # fmt: skip
    judge = HangJudge(hang_after=10)
    judge.observe("job", ranks(REDUCING, REDUCING, on_event, on_lock), now=0)
    hung = judge.observe("job", ranks(REDUCING, REDUCING, on_event, on_lock), now=11)
    assert hung.summary == (
        "no progress: 2 ranks wait in all_reduce; rank 2 in fetch_batch (waiting on an Event); "
        "rank 3 in load (waiting on a lock)"
    )


def test_a_judge_handed_to_a_new_bridge_process_goes_on_where_it_stood() -> None:
    judge = HangJudge(hang_after=60)
    judge.observe("job", ranks(REDUCING, REDUCING, FETCHING), now=100)
    hung = judge.observe("job", ranks(REDUCING, REDUCING, POLLING), now=161)
    judge.moved("other", ranks(REDUCING), now=150)
    memory = judge.remember().model_copy(update={"asked": ["other"]})

    again = HangJudge(hang_after=60)
    again.recall(HangMemory.model_validate_json(memory.model_dump_json()))
    assert again.verdicts == judge.verdicts  # listed at once, the same
    going_on = again.observe("job", ranks(REDUCING, REDUCING, POLLING), now=170)
    assert going_on.state == "suspected_hang" and going_on.since == hung.since == 100
    assert again.still_for("other", now=160) == 10  # its recorders' word kept too
    fresh = HangJudge(hang_after=60)  # what a bridge starting from nothing would say
    assert fresh.observe("job", ranks(REDUCING, REDUCING, POLLING), now=170).state == "progressing"
