"""What each MCP tool takes (a pydantic model, whose JSON schema the agent is shown), what it
does in words an agent can act on, and whether it only reads (all a view token is offered)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from raydap.bridge.workers.filters import RankSetText, WorkerFilter
from raydap.bridge.workers.meshes import DimText

#: Longest a call may wait for workers (``wait_for_pause``, ``step``), in seconds.
MAX_WAIT_S = 120.0


def worker_field(required: bool) -> Any:
    return Field(
        ... if required else None,
        min_length=1,
        max_length=64,
        pattern=r"^[0-9a-zA-Z]+$",
        description="one worker's id, or a unique prefix of it (as list_workers shows)",
    )


FilePath = Field(
    min_length=2,
    max_length=4096,
    pattern=r"^(/|[A-Za-z]:[\\/])",
    description="the file's absolute path as the workers see it (list_workers and stacks show it)",
)
Frame = Field(default=0, ge=0, le=200, description="frame index, 0 = where the worker stands")


class Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OneOrGroup(Arguments):
    """Tools that act on one ``worker`` or on the group a ``filter`` picks, never both."""

    filter: WorkerFilter = Field(default_factory=WorkerFilter)
    worker: str | None = worker_field(required=False)

    @model_validator(mode="after")
    def _one_or_the_other(self) -> OneOrGroup:
        if self.worker is not None and self.filter != WorkerFilter():
            raise ValueError("give a worker or a filter, not both")
        return self


class ListWorkers(Arguments):
    filter: WorkerFilter = Field(default_factory=WorkerFilter)


class Stacks(Arguments):
    filter: WorkerFilter = Field(default_factory=WorkerFilter)
    locals: bool = Field(default=False, description="each frame's local variables too")
    by: DimText | None = Field(
        default=None,
        description="a device-mesh dimension (pp, tp, mesh1.dp): `groups` then holds one "
        "merged tree per coordinate along it, so you see where each pipeline stage is",
    )


class Hangs(Arguments):
    job: str | None = Field(
        default=None, pattern=r"^[0-9a-fA-F]{1,64}$", description="one job's verdict (its id)"
    )


class Evaluate(OneOrGroup):
    expression: str = Field(min_length=1, max_length=10_000, description="a Python expression")
    frame: int = Frame


class Source(Arguments):
    worker: str = worker_field(required=True)
    frame: int = Frame
    context_lines: int = Field(default=10, ge=0, le=200, description="lines shown each side")


class Variables(Arguments):
    worker: str = worker_field(required=True)
    frame: int = Frame


#: Breakpoints on a rank set only (the job's other ranks never get them).
RanksOfTheJob = Annotated[RankSetText, Field(
    description="only these ranks of the job: a rank set (0-3,8; tp=1 dp=0; group=mesh_tp:5; "
    "actor), kept apart from the agent's breakpoints for every rank; needs job",
)]  # fmt: skip


class OnRanks(Arguments):
    """Breakpoints of a job, or of a rank set of it."""

    job: str | None = Field(default=None, max_length=200, description="job id; none: every job")
    ranks: RanksOfTheJob | None = None

    @model_validator(mode="after")
    def _ranks_of_a_job(self) -> OnRanks:
        if self.ranks is not None and self.job is None:
            raise ValueError("breakpoints on a rank set need the job")
        return self


class SetBreakpoints(OnRanks):
    path: str = FilePath
    lines: list[Annotated[int, Field(ge=1, le=10_000_000)]] = Field(
        min_length=1, max_length=100, description="1-based line numbers"
    )
    condition: str | None = Field(default=None, max_length=2000, description="stop only if true")


class ClearBreakpoints(OnRanks):
    path: str = FilePath


class WaitForPause(Arguments):
    filter: WorkerFilter = Field(default_factory=WorkerFilter)
    timeout_s: float = Field(default=30.0, gt=0, le=MAX_WAIT_S)
    count: int = Field(default=1, ge=1, le=10_000, description="how many paused workers to await")


class Group(OneOrGroup):
    pass


class Step(Arguments):
    worker: str = worker_field(required=True)
    kind: Literal["over", "into", "out"] = "over"
    timeout_s: float = Field(default=30.0, gt=0, le=MAX_WAIT_S)


PointId = Field(pattern=r"^cp-[0-9a-f]{10}$", description="a capture point's id (cp-...)")


class SetCapturePoint(Arguments):
    path: str = FilePath
    line: int = Field(ge=1, le=10_000_000, description="1-based line number")
    condition: str | None = Field(default=None, max_length=2000, description="capture only if true")
    job: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{1,64}$", description="job id")
    rank: int | None = Field(default=None, ge=0, le=1_000_000, description="only this rank")
    ranks: RankSetText | None = Field(
        default=None, description="only the ranks of this rank set (tp=1, 0-3, group=mesh_tp:5)"
    )
    interval: float | None = Field(default=None, ge=0, le=86_400, description="s between two")
    most: int | None = Field(default=None, ge=1, le=100_000, description="captures a worker")
    budget_ms: float | None = Field(default=None, gt=0, le=60_000, description="CPU ms a capture")
    expires_in: float | None = Field(default=None, gt=0, le=7 * 86_400, description="seconds")


class ClearCapturePoint(Arguments):
    point: str = PointId


class ListCaptures(Arguments):
    job: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{1,64}$")
    rank: int | None = Field(default=None, ge=0, le=1_000_000)
    point: str | None = Field(default=None, pattern=r"^cp-[0-9a-f]{10}$")
    kind: Literal["point", "exception"] | None = None


class ReadCapture(Arguments):
    capture: str | None = Field(default=None, pattern=r"^cap-[0-9a-f]{1,12}$",
                                description="one capture's id (or a unique prefix)")  # fmt: skip
    point: str | None = Field(default=None, pattern=r"^cp-[0-9a-f]{10}$",
                              description="with expression: each rank's latest")  # fmt: skip
    expression: str | None = Field(default=None, min_length=1, max_length=200, description=(
        "a path over captured values (loss, batch.shape, cfg['lr'], xs[0]); nothing runs"
    ))  # fmt: skip
    frame: int = Frame

    @model_validator(mode="after")
    def _one_capture_or_a_point(self) -> ReadCapture:
        if (self.capture is None) == (self.point is None):
            raise ValueError("give a capture, or a point with an expression")
        if self.point is not None and self.expression is None:
            raise ValueError("a point is read with an expression, across its ranks")
        return self


_FILTER_WORDS = (
    "`filter` picks workers by any of job (id), task (glob on the task name or Actor.method), "
    "actor (id or class), node (IP or node id prefix), ranks (a rank set: 0-3,8, mesh "
    "coordinates 'dp=0 tp=1', group=mesh_tp:5, a role; terms apart by a space all hold); empty "
    "means every worker."
)


@dataclass(frozen=True)
class Tool:
    name: str
    arguments: type[Arguments]
    description: str
    #: Only reads: offered to view tokens. Anything that runs code or moves a worker is not.
    reads: bool

    def input_schema(self) -> dict[str, Any]:
        return inline_refs(self.arguments.model_json_schema())


TOOLS = (
    Tool("list_workers", ListWorkers, "The Ray workers the bridge holds: paused (at a "
         "breakpoint(), an editor's breakpoint, an exception) and running live ones, each with "
         "id, job, name, rank and role where known, node, pid, where it stands, state, and the "
         f"exception of a post-mortem stop. {_FILTER_WORDS}", reads=True),
    Tool("stacks", Stacks, "Merged stacks of a job's workers, paused and running (running ones "
         "are read with py-spy without stopping them): ranks standing in the same place are "
         "grouped, so a hung job shows which ranks wait in a collective and which is elsewhere "
         f"(the straggler). With the hang watch on, its verdicts come too. {_FILTER_WORDS}",
         reads=True),
    Tool("hangs", Hangs, "Is a job hung, and why? The hang watch's verdict of each watched "
         "job (every job with live workers): `progressing` or `suspected_hang`, with the ranks "
         "that hold it up first among `stragglers` (each with `why` and where), and for "
         "torch.distributed jobs `collective`: the group, the collective sequence number `seq` "
         "at which the ranks' Flight Recorders disagree, its op, the ranks `waiting` there, the "
         "ranks `missing` (never came) and `mismatch` (called another op, or other sizes or "
         "dtypes, with the call site); `waits`: ranks that issued a collective (NCCL returns "
         "at once) and block later, each with the op, `seq`, where it was called and where the "
         "rank blocks (`.item()`, `synchronize`); `unread` ranks whose recorder could not be "
         "read; `report`, a directory on the bridge's machine kept after the job.", reads=True),
    Tool("evaluate", Evaluate, "Evaluate a Python expression in every matching paused worker "
         "(or one `worker`), in frame `frame`, side by side; `differs` marks a value unlike the "
         f"most common one. Runs code in the workers. {_FILTER_WORDS}", reads=False),
    Tool("source", Source, "The code around where a paused worker stands (or the line of "
         "frame `frame`), read on the worker's node, with the frame's function, file and line.",
         reads=True),
    Tool("variables", Variables, "The local variables of frame `frame` of a paused worker, "
         "with their types; long values are cut (evaluate an expression for more).", reads=True),
    Tool("set_breakpoints", SetBreakpoints, "Set line breakpoints in a file on the live "
         "workers (jobs run with raydap.live) of `job`, or of every job: the workers stop there "
         "without any breakpoint() in the code, and live workers that start later get them "
         "too. With `ranks` (and `job`), only the ranks of that rank set get them, also ranks "
         "whose coordinates are known later. Replaces the agent's earlier breakpoints in that "
         "file (on that rank set, or for every rank). Says, for each worker, "
         "whether each line was verified. Then call wait_for_pause.", reads=False),
    Tool("clear_breakpoints", ClearBreakpoints, "Remove the agent's breakpoints in a file on "
         "the live workers of `job` (or every job; with `ranks`, those it set on that rank "
         "set). Paused workers stay paused.", reads=False),
    Tool("wait_for_pause", WaitForPause, "Wait until at least `count` matching workers are "
         "paused (workers paused already count), up to `timeout_s` seconds; returns them with "
         f"where each stopped and why, or says none did in time. {_FILTER_WORDS}", reads=True),
    Tool("continue_workers", Group, "Continue every matching paused worker at once (or one "
         "`worker`); all of them when given neither, as ranks of a collective must run "
         f"together. {_FILTER_WORDS}", reads=False),
    Tool("pause_workers", Group, "Pause matching running workers where they are (or one "
         "`worker`), with no breakpoint() in the code. A worker blocked in native code (a "
         "collective, I/O) pauses when that call returns: it is listed as pending, with where "
         f"it is blocked. {_FILTER_WORDS}", reads=False),
    Tool("step", Step, "Step a paused worker one line (`over`), into a call, or out of its "
         "function, and say where it stopped next (other workers stay as they are).",
         reads=False),
    Tool("set_capture_point", SetCapturePoint, "Look without stopping: every live worker "
         "(of `job`, or `rank` only) that reaches `path`:`line` records its stack and local "
         "variables and runs on; no stop, nobody waits, the job's collectives are untouched. "
         "At most one capture a second per worker (`interval`), `most` in all, for an hour "
         "(`expires_in`). Then list_captures and read_capture.", reads=False),
    Tool("clear_capture_point", ClearCapturePoint, "Remove a capture point set through MCP or "
         "HTTP; its captures stay.", reads=False),
    Tool("list_captures", ListCaptures, "The capture points set (by any door, with their "
         "owner, counts, and why one turned itself off) and the captures kept: each with its "
         "id, kind (`point`, or `exception` for a failed task's post-mortem stop), job, rank, "
         "file, line and function.", reads=True),
    Tool("read_capture", ReadCapture, "One capture's frames with their locals (values read "
         "from their structure: tensors as shape, dtype and device; secrets redacted; cuts "
         "marked), or with `point` and `expression` that value in every rank's latest capture "
         "side by side. Reads what was captured; runs nothing.", reads=True),
)  # fmt: skip

BY_NAME = {tool.name: tool for tool in TOOLS}


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with ``$ref``s to its ``$defs`` replaced by what they name: not every MCP
    client follows references."""
    definitions = schema.pop("$defs", {})

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            reference = node.get("$ref")
            if isinstance(reference, str) and reference.startswith("#/$defs/"):
                rest = {k: v for k, v in node.items() if k != "$ref"}
                return {**resolve(definitions[reference.removeprefix("#/$defs/")]), **rest}
            return {k: resolve(v) for k, v in node.items()}
        if isinstance(node, list):
            return [resolve(item) for item in node]
        return node

    resolved: dict[str, Any] = resolve(schema)
    return resolved
