"""Stacks as py-spy reports them, read into frames (sans-I/O).

Two forms: ``py-spy dump --json`` (what raydap runs on each node: full paths) and the plain
text dump that Ray's dashboard answers on ``/worker/traceback`` (file names only). Both are
outside input: size-capped and checked, and anything else is an error that says so.
"""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, ValidationError

MAX_DUMP_BYTES = 8 * 1024 * 1024
MAX_THREADS = 1024
#: Locals kept per frame, and characters per value (py-spy's reprs are already short).
MAX_LOCALS = 64
MAX_REPR = 200
_THREAD = re.compile(r'^Thread (?P<id>\w+) \((?P<state>[^)]*)\)(?:: "(?P<name>.*)")?\s*$')
_FRAME = re.compile(r"^\s{4}(?P<function>.+?) \((?P<path>.+):(?P<line>\d+)\)\s*$")


class BadDump(Exception):
    """What py-spy answered could not be read."""


class Frame(BaseModel):
    function: str
    path: str
    line: int
    #: Its local variables' short reprs, where they were read (``--locals``, debugpy).
    locals: dict[str, str] | None = None
    #: A native (C/C++) frame, read with ``--native``: ``path`` is its library.
    native: bool = False


def short(value: str) -> str:
    return value if len(value) <= MAX_REPR else value[: MAX_REPR - 1] + "…"


class ThreadStack(BaseModel):
    name: str
    #: The OS thread id (the process id for the main thread), when py-spy says it.
    os_thread_id: int | None = None
    #: Innermost frame first, as py-spy and DAP list them.
    frames: list[Frame]


class _JsonLocal(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    repr: str | None = None


class _JsonFrame(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str
    filename: str
    line: int
    #: The shared library of a native frame; None for a Python one.
    module: str | None = None
    locals: list[_JsonLocal] | None = None

    def frame(self) -> Frame:
        found = None
        if self.locals is not None:
            found = {v.name: short(v.repr or "?") for v in self.locals[:MAX_LOCALS]}
        return Frame(
            function=self.name, path=self.filename, line=self.line, locals=found,
            native=self.module is not None,
        )  # fmt: skip


class _JsonThread(BaseModel):
    model_config = ConfigDict(extra="ignore")
    thread_name: str | None = None
    os_thread_id: int | None = None
    frames: list[_JsonFrame]


def parse_json(text: str) -> list[ThreadStack]:
    if len(text) > MAX_DUMP_BYTES:
        raise BadDump(f"py-spy answered over {MAX_DUMP_BYTES} bytes")
    try:
        rows = json.loads(text)
        if not isinstance(rows, list):
            raise BadDump("py-spy's JSON is not a list of threads")
        threads = [_JsonThread.model_validate(row) for row in rows[:MAX_THREADS]]
    except (ValueError, ValidationError) as exc:
        raise BadDump(f"unreadable py-spy JSON: {str(exc)[:200]}") from None
    return [
        ThreadStack(
            name=t.thread_name or str(t.os_thread_id or "?"),
            os_thread_id=t.os_thread_id,
            frames=[f.frame() for f in t.frames],
        )
        for t in threads
    ]


def parse_text(text: str) -> list[ThreadStack]:
    """py-spy's text dump (``Thread 12 (idle): "MainThread"`` then indented frames)."""
    if len(text) > MAX_DUMP_BYTES:
        raise BadDump(f"py-spy answered over {MAX_DUMP_BYTES} bytes")
    threads: list[ThreadStack] = []
    for line in text.splitlines():
        if header := _THREAD.match(line):
            if len(threads) >= MAX_THREADS:
                break
            ident = header["id"]
            os_id = int(ident) if ident.isdigit() else None
            threads.append(ThreadStack(name=header["name"] or ident, os_thread_id=os_id, frames=[]))
        elif (frame := _FRAME.match(line)) and threads:
            threads[-1].frames.append(
                Frame(function=frame["function"], path=frame["path"], line=int(frame["line"]))
            )
    if not threads:
        raise BadDump(f"no thread in py-spy's answer: {text.strip()[:200]!r}")
    return threads


def main_thread(threads: list[ThreadStack], pid: int) -> ThreadStack:
    """The thread that runs a Ray worker's tasks: its main thread."""
    for thread in threads:
        if thread.name == "MainThread" or thread.os_thread_id == pid:
            return thread
    return threads[0]
