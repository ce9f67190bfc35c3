"""The table of DAP commands against the official schema: every request a client can send the
bridge about a worker is classified, and the classification is the safe one."""

from __future__ import annotations

import json

from raydap.live import compat
from raydap.protocol import COMMANDS, CONTINUE_ALL, Effect, Route, command
from raydap.protocol.commands import UNANSWERED, Answerer, refusal
from raydap.protocol.extension import COLLECTIVES, STACKS
from tests.dap_schema import SHARED, VENDORED

#: Requests the bridge's session answers itself; they never reach a worker.
SESSION_REQUESTS = {
    "initialize", "attach", "launch", "disconnect", "terminate", "configurationDone",
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


def test_unknown_commands_are_taken_to_run_code_and_reach_no_worker() -> None:
    unknown = command("someAdapterExtension")
    assert unknown.effect is Effect.RUNS_CODE and not unknown.read_only
    assert unknown.route is Route.ONLY_WORKER and not unknown.cacheable
    assert not unknown.debugpy_answers
    assert "does not know" in str(refusal("someAdapterExtension"))


def test_what_debugpy_never_answers_is_refused_with_why() -> None:
    """pydevd 1.8.22 has no handler for these; one would freeze the worker for everyone."""
    assert {"loadedSources", "breakpointLocations", "dataBreakpointInfo", "readMemory",
            "writeMemory", "disassemble", "locations", "setDataBreakpoints",
            "setInstructionBreakpoints", "stepBack", "reverseContinue", "restartFrame",
            "restart", "terminateThreads", "cancel"} == UNANSWERED  # fmt: skip
    for name in UNANSWERED:
        assert "debugpy does not support" in str(refusal(name)), name
    for name in ("threads", "evaluate", "continue", "setBreakpoints", CONTINUE_ALL):
        assert refusal(name) is None, name


def test_raydaps_worker_requests_never_come_from_clients() -> None:
    for raydaps in (COLLECTIVES, STACKS):
        assert command(raydaps).answered_by is Answerer.RAYDAP_LIVE
        assert "not a client's" in str(refusal(raydaps))
    assert command(CONTINUE_ALL).answered_by is Answerer.BRIDGE  # the session answers it


def test_the_workers_check_knows_the_same_split_as_the_table() -> None:
    """:mod:`raydap.live.compat` cannot import the table (it is shipped alone to nodes): its
    copy of who answers what is this one."""
    relayed = {c.name for c in COMMANDS.values() if c.answered_by is Answerer.DEBUGPY}
    assert set(compat.DEBUGPY_ANSWERS) == relayed
    assert set(compat.DEBUGPY_NEVER_ANSWERS) == UNANSWERED


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
