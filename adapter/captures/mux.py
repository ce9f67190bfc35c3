"""A capture served as a read-only stop: the session a DAP client gets by attaching with
``{"capture": ID}``.

Dump debugging in editors works this way (MIEngine's ``coreDumpPath``, vscode-go's core mode,
lldb-dap's ``coreFile``): the session starts stopped, shows the stack and variables, and refuses
to continue or step. Here every answer is read from what was captured, so it works after the
worker and its job are gone: ``source`` serves the captured lines, ``evaluate`` reads a path over
captured values (:mod:`.paths`) and runs nothing anywhere. No worker is involved, so
nothing here waits or does I/O: the session sends what :meth:`CaptureMux.handle` returns.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from raydap.adapter.captures.paths import ARRAY_FIELDS, read_path
from raydap.adapter.errors import Kind, WorkerError
from raydap.adapter.resume import Resume
from raydap.protocol import Event, Request, Response, event, response_to

THREAD_ID = 1
#: The furthest a captured source is padded to (the bridge refuses a capture past it).
MAX_FIRST_LINE = 1_000_000
#: What a capture session answers without a worker (anything else is refused, saying why).
_READS = frozenset({
    "threads", "stackTrace", "scopes", "variables", "source", "evaluate", "exceptionInfo",
    "loadedSources", "modules", "setBreakpoints", "setFunctionBreakpoints",
    "setExceptionBreakpoints", "completions",
})  # fmt: skip


@dataclass(frozen=True)
class CaptureFeed:
    """What an attach to a capture is given: the capture, as plain values."""

    id: str
    #: Who it is of, for the thread's name ("rank 2 Rank.train (pid 81 on 10.0.0.3)").
    label: str
    #: Innermost first: ``function``, ``path``, ``line``, ``source`` (``first``, ``lines``)
    #: and ``locals`` where captured.
    frames: Sequence[dict[str, Any]]
    #: ``Type: message`` for an exception's capture.
    exception: str | None = None
    #: Why it was taken, said in the stop ("capture point cp-..., hit 120").
    description: str = "capture"
    #: The worker it was taken in, as fields (a thread's ``worker``, as in a live session):
    #: ``capture``, ``task``, ``pid``, ``rank``, ``node``.
    worker: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Refs:
    """Variable and source references, handed out as the client asks."""

    variables: dict[int, Sequence[Any]] = field(default_factory=dict)
    sources: dict[int, dict[str, Any]] = field(default_factory=dict)
    counter: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def variables_ref(self, children: Sequence[Any]) -> int:
        ref = next(self.counter)
        self.variables[ref] = children
        return ref


class CaptureMux:
    """Answers a client's requests from one capture; never talks to a worker."""

    def __init__(self, feed: CaptureFeed, send: Callable[[Event], None]) -> None:
        self.feed = feed
        self._send = send
        self._refs = _Refs()
        self._source_refs: dict[int, int] = {}  # frame index -> source reference

    # -- the session's side -----------------------------------------------------------------

    def start(self) -> None:
        """The client is configured: it is told of the one thread, stopped where captured."""
        self._send(event("thread", {"reason": "started", "threadId": THREAD_ID}))
        body: dict[str, Any] = {
            "reason": "exception" if self.feed.exception else "capture",
            "description": self.feed.description, "threadId": THREAD_ID,
            "allThreadsStopped": True, "preserveFocusHint": False,
        }  # fmt: skip
        if self.feed.exception:
            body["text"] = self.feed.exception
        self._send(event("stopped", body))

    def take_back_breakpoints(self) -> None:
        """A capture holds no breakpoints."""

    def close(self) -> None:
        """Nothing to let go: no worker is held."""

    def resume_state(self) -> Resume:
        return Resume()

    def restore(self, resume: Resume) -> None:
        """A capture session needs nothing back from a replaced bridge: it is read again."""

    async def handle(self, request: Request) -> Response:
        command = request.command
        if command not in _READS:
            raise WorkerError(
                f"{command!r}: this is a capture of {self.feed.label} ({self.feed.id}), read-only:"
                " the worker ran on when it was taken, so it cannot continue, step or change",
                Kind.REFUSED,
            )
        return response_to(request, getattr(self, f"_{command}")(request.args))

    # -- answers ----------------------------------------------------------------------------

    def _threads(self, _: dict[str, Any]) -> dict[str, Any]:
        name = f"{self.feed.label} (capture {self.feed.id})"
        worker = {"label": name, **self.feed.worker}
        return {"threads": [{"id": THREAD_ID, "name": name, "worker": worker}]}

    def _stackTrace(self, args: dict[str, Any]) -> dict[str, Any]:
        start = max(0, int(args.get("startFrame") or 0))
        levels = int(args.get("levels") or 0)
        frames = list(enumerate(self.feed.frames))[start:]
        if levels > 0:
            frames = frames[:levels]
        shown = []
        for index, frame in frames:
            path = str(frame.get("path", ""))
            source: dict[str, Any] = {"name": PurePosixPath(path).name, "path": path}
            if isinstance(frame.get("source"), dict):
                source["sourceReference"] = self._source_ref(index)
            shown.append({
                "id": index + 1, "name": str(frame.get("function", "?")),
                "line": int(frame.get("line") or 0), "column": 1, "source": source,
                **({} if "locals" in frame else {"presentationHint": "subtle"}),
            })  # fmt: skip
        return {"stackFrames": shown, "totalFrames": len(self.feed.frames)}

    def _scopes(self, args: dict[str, Any]) -> dict[str, Any]:
        frame = self._frame(args.get("frameId"))
        values = frame.get("locals")
        if not isinstance(values, list):
            return {"scopes": []}
        ref = self._refs.variables_ref(values)
        scope = {"name": "Locals (captured)", "variablesReference": ref, "expensive": False,
                 "namedVariables": len(values), "presentationHint": "locals"}  # fmt: skip
        return {"scopes": [scope]}

    def _variables(self, args: dict[str, Any]) -> dict[str, Any]:
        children = self._refs.variables.get(int(args.get("variablesReference") or 0))
        if children is None:
            raise WorkerError("no such variables in this capture", Kind.NOT_FOUND)
        return {"variables": [self._variable(c) for c in children if isinstance(c, dict)]}

    def _evaluate(self, args: dict[str, Any]) -> dict[str, Any]:
        frame = self._frame(args.get("frameId") or 1)
        values = frame.get("locals")
        if not isinstance(values, list):
            raise WorkerError("this frame's locals were not captured", Kind.NOT_FOUND)
        node = read_path(values, str(args.get("expression", "")))
        shown = self._variable(node)
        return {"result": shown["value"], "type": shown.get("type"),
                "variablesReference": shown["variablesReference"]}  # fmt: skip

    def _source(self, args: dict[str, Any]) -> dict[str, Any]:
        ref = int(
            args.get("sourceReference") or (args.get("source") or {}).get("sourceReference") or 0
        )
        source = self._refs.sources.get(ref)
        if source is None:
            raise WorkerError("this capture holds no such source", Kind.NOT_FOUND)
        # Line numbers as in the file: the lines not captured are left empty. The bridge took
        # the capture within bounds (its first line at most a million): padded as one string.
        first = min(max(int(source.get("first") or 1), 1), MAX_FIRST_LINE)
        lines = [str(line) for line in source.get("lines") or []]
        return {"content": "\n" * (first - 1) + "\n".join(lines) + "\n",
                "mimeType": "text/x-python"}  # fmt: skip

    def _exceptionInfo(self, _: dict[str, Any]) -> dict[str, Any]:
        text = self.feed.exception or ""
        kind, _colon, message = text.partition(": ")
        return {"exceptionId": kind or "capture", "description": message or text,
                "breakMode": "unhandled"}  # fmt: skip

    def _loadedSources(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"sources": []}

    def _modules(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"modules": [], "totalModules": 0}

    def _completions(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"targets": []}

    def _setBreakpoints(self, args: dict[str, Any]) -> dict[str, Any]:
        asked = args.get("breakpoints") or args.get("lines") or []
        unset = {"verified": False, "message": "a capture is read-only: no breakpoints here"}
        return {"breakpoints": [unset for _ in asked]}

    def _setFunctionBreakpoints(self, args: dict[str, Any]) -> dict[str, Any]:
        return self._setBreakpoints(args)

    def _setExceptionBreakpoints(self, _: dict[str, Any]) -> dict[str, Any]:
        return {}

    # -- helpers ----------------------------------------------------------------------------

    def _frame(self, frame_id: object) -> dict[str, Any]:
        index = (frame_id if isinstance(frame_id, int) else 0) - 1
        if not 0 <= index < len(self.feed.frames):
            raise WorkerError(f"no frame {frame_id} in this capture", Kind.NOT_FOUND)
        return dict(self.feed.frames[index])

    def _source_ref(self, index: int) -> int:
        if index not in self._source_refs:
            ref = next(self._refs.counter)
            self._refs.sources[ref] = dict(self.feed.frames[index]["source"])
            self._source_refs[index] = ref
        return self._source_refs[index]

    def _variable(self, node: dict[str, Any]) -> dict[str, Any]:
        """A captured value as a DAP variable; a cut is said in its value."""
        children: list[dict[str, Any]] = list(node.get("children") or [])
        children += [
            {"name": f, "type": "", "value": str(node[f])} for f in ARRAY_FIELDS if f in node
        ]
        value = str(node.get("value", ""))
        if node.get("cut"):
            value += f"  (not captured: {node['cut']})"
        return {
            "name": str(node.get("name", "")), "value": value, "type": str(node.get("type", "")),
            "variablesReference": self._refs.variables_ref(children) if children else 0,
        }  # fmt: skip
