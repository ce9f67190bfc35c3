"""The dashboard client against a real HTTP server that answers badly on purpose."""

import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from raydap.bridge.cluster.dashboard import DashboardClient, DashboardError

WORKER = {
    "worker_id": "49a5" + "0" * 52,
    "ip": "10.0.0.2",
    "pid": 2222,
    "node_id": "944b",
    "debugger_port": 44523,
    "num_paused_threads": 1,
    "is_alive": True,
    "worker_type": "WORKER",
}


def state_answer(rows: object) -> dict[str, object]:
    return {"result": True, "msg": "", "data": {"result": {"result": rows}}}


@pytest.fixture
async def dashboard() -> AsyncIterator[tuple[DashboardClient, dict[str, web.Response]]]:
    answers: dict[str, web.Response] = {}

    async def handler(request: web.Request) -> web.Response:
        return answers[request.path]

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    client = DashboardClient(f"http://{host}:{port}", timeout=2)
    yield client, answers
    await client.close()
    await runner.cleanup()


async def test_paused_workers_are_parsed(dashboard) -> None:  # type: ignore[no-untyped-def]
    client, answers = dashboard
    idle = dict(WORKER, worker_id="idle", debugger_port=0, num_paused_threads=0)
    answers["/api/v0/workers"] = web.json_response(state_answer([WORKER, idle]))
    [worker] = await client.paused_workers()
    assert (worker.ip, worker.debugger_port, worker.pid) == ("10.0.0.2", 44523, 2222)


async def test_a_large_answer_is_read_whole(dashboard) -> None:  # type: ignore[no-untyped-def]
    client, answers = dashboard
    rows = [dict(WORKER, worker_id=f"{i:056x}", debugger_port=10000 + i) for i in range(3000)]
    answers["/api/v0/workers"] = web.json_response(state_answer(rows))  # about 700 KB
    workers = await client.paused_workers()
    assert [w.debugger_port for w in workers] == [10000 + i for i in range(3000)]


async def test_running_task_prefers_the_running_row(dashboard) -> None:  # type: ignore[no-untyped-def]
    client, answers = dashboard
    rows = [
        {"name": "old", "state": "FINISHED", "job_id": "01000000"},
        {"name": "Counter.incr", "state": "RUNNING", "job_id": "01000000", "actor_id": "e2"},
    ]
    answers["/api/v0/tasks"] = web.json_response(state_answer(rows))
    task = await client.running_task("49a5")
    assert task is not None and (task.name, task.actor_id) == ("Counter.incr", "e2")


async def test_task_state_is_the_latest_attempts(dashboard) -> None:  # type: ignore[no-untyped-def]
    client, answers = dashboard
    rows = [
        {"task_id": "t1", "attempt_number": 1, "state": "FINISHED"},
        {"task_id": "t1", "attempt_number": 0, "state": "FAILED"},
    ]
    answers["/api/v0/tasks"] = web.json_response(state_answer(rows))
    assert await client.task_state("t1") == "FINISHED"
    answers["/api/v0/tasks"] = web.json_response(state_answer([]))
    assert await client.task_state("t1") is None


async def test_job_status(dashboard) -> None:  # type: ignore[no-untyped-def]
    client, answers = dashboard
    row = {"job_id": "01000000", "status": "SUCCEEDED", "type": "DRIVER"}
    answers["/api/v0/jobs"] = web.json_response(state_answer([row]))
    assert await client.job_status("01000000") == "SUCCEEDED"
    answers["/api/v0/jobs"] = web.json_response(state_answer([]))
    assert await client.job_status("01000000") is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (web.Response(status=500, text="boom"), "HTTP 500"),
        (web.Response(text="<html>"), "not JSON"),
        (web.json_response({"data": {}}), "unexpected answer"),
        (web.json_response(state_answer({"not": "a list"})), "not a list"),
        (web.json_response(state_answer([{"ip": "x"}])), "unexpected WorkerRow"),
        (web.json_response(state_answer([dict(WORKER, pid="many")])), "unexpected WorkerRow"),
    ],
)
async def test_bad_answers_become_one_clear_error(dashboard, answer, expected) -> None:  # type: ignore[no-untyped-def]
    client, answers = dashboard
    answers["/api/v0/workers"] = answer
    with pytest.raises(DashboardError, match=expected):
        await client.paused_workers()


async def test_oversized_answer_is_refused(dashboard, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    client, answers = dashboard
    monkeypatch.setattr("raydap.bridge.cluster.dashboard.MAX_RESPONSE_BYTES", 1000)
    answers["/api/v0/workers"] = web.Response(text=json.dumps(state_answer([WORKER] * 50)))
    with pytest.raises(DashboardError, match="over 1000 bytes"):
        await client.paused_workers()


async def test_unreachable_dashboard_names_the_address() -> None:
    client = DashboardClient("http://127.0.0.1:9", timeout=2)
    with pytest.raises(DashboardError, match=r"127\.0\.0\.1:9 unreachable"):
        await client.paused_workers()
    await client.close()
