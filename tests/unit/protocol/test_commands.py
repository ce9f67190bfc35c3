"""The table of DAP commands against the official schema: every request a client can send the
bridge about a worker is classified, and the classification is the safe one."""

from __future__ import annotations

import json

from raydap.protocol import COMMANDS, CONTINUE_ALL, Effect, Route, command
from tests.dap_schema import SHARED, VENDORED

#: Requests the bridge's session answers itself; they never reach a worker.
SESSION_REQUESTS = {
    "initialize", "attach", "launch", "disconnect", "terminate", "configurationDone",
    "restart", "cancel", "terminateThreads",
    # Reverse requests: sent by an adapter to the client, never by a client.
    "runInTerminal", "startDebugging",
}  # fmt: skip


def schema_requests() -> set[str]:
    path = SHARED if SHARED.exists() else VENDORED
    definitions = json.loads(path.read_text())["definitions"]
    names = set()
    for name, definition in definitions.items():
        if not name.endswith("Request") or name == "Request":
            continue
        for part in definition.get("allOf", []):
            enum = part.get("properties", {}).get("command", {}).get("enum")
            if enum:
                names.update(enum)
    return names


def test_every_worker_request_of_the_schema_is_in_the_table() -> None:
    requests = schema_requests()
    assert len(requests) > 40  # the schema was read
    missing = requests - SESSION_REQUESTS - set(COMMANDS)
    assert not missing, f"DAP requests the table does not classify: {sorted(missing)}"


def test_unknown_commands_are_taken_to_run_code() -> None:
    unknown = command("someAdapterExtension")
    assert unknown.effect is Effect.RUNS_CODE and not unknown.read_only
    assert unknown.route is Route.ONLY_WORKER and not unknown.cacheable


def test_only_reads_are_cached_and_every_resume_moves_the_worker() -> None:
    for entry in COMMANDS.values():
        if entry.cacheable:
            assert entry.read_only, entry
        if entry.resumes:
            assert entry.effect is Effect.MOVES, entry
        if entry.writes_variables:
            assert entry.effect is Effect.RUNS_CODE, entry


def test_what_runs_code_or_moves_a_worker_is_not_read_only() -> None:
    for name in ("evaluate", "completions", "setVariable", "setExpression", "pause",
                 "restartFrame", "continue", "goto", "setBreakpoints", "setDataBreakpoints",
                 CONTINUE_ALL):  # fmt: skip
        assert not command(name).read_only, name
    for name in ("threads", "stackTrace", "scopes", "variables", "source", "exceptionInfo"):
        assert command(name).read_only and command(name).cacheable, name


def test_configuration_reaches_every_worker() -> None:
    broadcast = {name for name, entry in COMMANDS.items() if entry.route is Route.BROADCAST}
    assert {"setBreakpoints", "setFunctionBreakpoints", "setExceptionBreakpoints",
            "setDataBreakpoints", "setInstructionBreakpoints"} <= broadcast  # fmt: skip
