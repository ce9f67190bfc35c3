from raydap.bridge.workers import ranks
from raydap.bridge.workers.records import BreakpointRecord


def test_a_rank_comes_from_the_environment_torchrun_style() -> None:
    assert ranks.rank_from_environment({"RANK": "3", "WORLD_SIZE": "4"}) == 3
    assert ranks.rank_from_environment({"LOCAL_RANK": "1"}) is None  # local is not global
    assert ranks.rank_from_environment({"RANK": "-1"}) is None
    assert ranks.rank_from_environment({"RANK": "9" * 40}) is None


def test_verl_actor_names_give_the_rank_and_colocated_methods_the_role() -> None:
    assert ranks.rank_from_actor_name("JNzEwcWorkerDict_0:1") == 1
    assert ranks.rank_from_actor_name("Counter") is None
    assert ranks.role_from_task("WorkerDict.critic_compute_values") == "critic"
    assert ranks.role_from_task("JNzEwcWorkerDict.actor_rollout_generate_sequences") == (
        "actor_rollout"
    )
    assert ranks.role_from_task("WorkerDict.ref_compute_ref_log_prob") == "ref"
    assert ranks.role_from_task("Trainer.critic_step") is None  # not a verl worker group
    assert ranks.role_from_task("train_step") is None


def test_a_probe_answer_is_a_rank_only_when_it_is_a_number() -> None:
    assert ranks.rank_from_probe("2") == 2
    assert ranks.rank_from_probe("None") is None
    assert ranks.rank_from_probe("'<error>'") is None


def test_a_record_is_named_by_rank_and_role_first() -> None:
    record = BreakpointRecord(
        id="w", node_ip="10.0.0.1", pid=7, paused_since=0, rank=3, role="critic",
        task_name="WorkerDict.critic_compute_values",
    )  # fmt: skip
    assert record.rank_text == "rank 3 (critic)"
    assert record.label.startswith("rank 3 (critic) WorkerDict.critic_compute_values")
    assert BreakpointRecord(id="w", node_ip="x", paused_since=0).rank_text is None
