"""The prompt of ``raydap attach``: readline with history and completion, in the main thread.

The DAP client lives on an event loop in a helper thread; the prompt calls into it and
waits. So ``input`` and Ctrl-C behave as in any terminal program: Ctrl-C while a worker runs
leaves (the workers go on), Ctrl-C at the prompt only clears the line, Ctrl-D quits.
"""

from __future__ import annotations

import asyncio
import codeop
import concurrent.futures
import contextlib
import os
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from raydap.bridge.client.dap_client import DapClient, DapRequestFailed
from raydap.bridge.client.dap_relay import relayed_channel
from raydap.bridge.client.pdb import commands
from raydap.bridge.client.pdb.debugger import Debugger, SessionEnded
from raydap.bridge.client.pdb.handlers import QUIT, RESUMED, dispatch
from raydap.live import private

try:
    import readline
except ImportError:  # Windows without pyreadline: a plain prompt
    readline = None  # type: ignore[assignment]

T = TypeVar("T")
HISTORY_LENGTH = 1000
#: Completion stops at these, so ``obj.at<Tab>`` completes the attribute alone.
_DELIMITERS = " \t\n`~!@#$%^&*()-=+[{]}\\|;:'\",<>/?."
_EXPRESSION_COMMANDS = {"p", "pp", "whatis", "display", "undisplay", "each", "condition"}


def history_file() -> Path:
    """``$RAYDAP_HISTORY``, else ``$XDG_STATE_HOME/raydap/history``."""
    if os.environ.get("RAYDAP_HISTORY"):
        return Path(os.environ["RAYDAP_HISTORY"])
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "raydap" / "history"


class LoopThread:
    """An event loop in a daemon thread, for a synchronous caller."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="dap")
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout)
        except (KeyboardInterrupt, concurrent.futures.TimeoutError):
            future.cancel()
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)


class History:
    """readline's history, read at start and written back at the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        if readline is not None:
            readline.clear_history()
            readline.set_history_length(HISTORY_LENGTH)
            with contextlib.suppress(OSError):
                readline.read_history_file(path)

    def save(self) -> None:
        """Write the history owner-only (it holds what was typed, secrets too); one that cannot
        be written is said, with the variable that picks another place."""
        if readline is None:
            return
        try:
            if not os.path.lexists(self.path):  # made owner-only before anything is in it
                private.make_folder(self.path.parent)
                private.open_private(self.path, "a", exclusive=True).close()
            if not private.is_own_file(self.path):
                return  # /dev/null, a link, another's file: the history is off, nothing touched
            with private.open_private(self.path, "a"):
                pass  # made 0600 if it was not, through the file, never a link's target
            readline.write_history_file(self.path)
        except OSError as exc:
            print(
                f"raydap: history not kept: cannot write {self.path}: {exc.strerror or exc} "
                "(RAYDAP_HISTORY picks another file)",
                file=sys.stderr,
            )


class Console:
    def __init__(self, loop: LoopThread, debugger: Debugger) -> None:
        self.loop = loop
        self.debugger = debugger
        self.last_command = ""
        self._matches: list[str] = []
        if readline is not None:
            readline.set_completer_delims(_DELIMITERS)
            readline.set_completer(self._complete)
            readline.parse_and_bind("tab: complete")

    def _complete(self, text: str, state: int) -> str | None:
        """readline's completer: command names first on a line, else the worker's names."""
        if state == 0:
            self._matches = []
            try:
                self._matches = self._candidates(text)
            except Exception:  # a completer must never raise into readline
                self._matches = []
        return self._matches[state] if state < len(self._matches) else None

    def _candidates(self, text: str) -> list[str]:
        assert readline is not None
        line = readline.get_line_buffer()[: readline.get_endidx()]
        parsed = commands.parse(line)
        first_word = not line[: readline.get_begidx()].strip()
        found = [name for name in commands.names() if name.startswith(text)] if first_word else []
        if parsed.command is None:
            expression = line.removeprefix("!").lstrip() if line.lstrip().startswith("!") else line
        elif parsed.command in _EXPRESSION_COMMANDS:
            expression = line.split(None, 1)[1] if " " in line.strip() else ""
        else:
            return found
        names = self.loop.call(self.debugger.complete(expression), timeout=5)
        return sorted({*found, *(n for n in names if n.startswith(text))})

    def read(self, prompt: str) -> str | None:
        """A line, or ``None`` at end of input (Ctrl-D)."""
        while True:
            try:
                return input(prompt)
            except EOFError:
                print()
                return None
            except KeyboardInterrupt:
                print("\n--KeyboardInterrupt-- (q or Ctrl-D leaves; the worker stays paused)")

    def run(self) -> int:
        """Prompt at each stop until ``q``, Ctrl-D or the end of the session."""
        debugger = self.debugger
        try:
            self.loop.call(debugger.wait_for_stop())
            while True:
                self.loop.call(debugger.catch_up())
                line = self.read(debugger.prompt())
                if line is None:
                    return 0
                if not line.strip():
                    line = self.last_command  # pdb repeats the last command
                parsed = commands.parse(line)
                if parsed.command is not None:
                    self.last_command = line
                if parsed.command == "interact":
                    self.interact()
                    continue
                if parsed.command == "clear" and not parsed.argument:
                    answer = self.read("Clear all breaks? ")
                    if (answer or "").strip().lower() not in ("y", "yes"):
                        continue
                try:
                    outcome = self.loop.call(dispatch(debugger, parsed))
                except KeyboardInterrupt:
                    print("\n--KeyboardInterrupt--")
                    continue
                except DapRequestFailed as exc:
                    print(f"*** {exc}")
                    continue
                if outcome is QUIT:
                    return 0
                if outcome is RESUMED:
                    # A step ends in the same thread; after ``c`` any thread's stop will do.
                    thread = None if parsed.command == "continue" else debugger.current
                    self.loop.call(debugger.wait_for_stop(thread))
        except SessionEnded as ended:
            print(f"raydap: {ended}")
            return 0
        except KeyboardInterrupt:
            print("\nraydap: left (running workers go on; paused ones stay paused)")
            return 0
        except (ConnectionError, OSError) as exc:
            print(f"raydap: {exc}")
            return 1

    def interact(self) -> None:
        """pdb's ``interact``: a Python prompt in the current frame, until Ctrl-D."""
        print("*interactive*")
        compiler = codeop.CommandCompiler()
        buffer: list[str] = []
        while True:
            line = self.read("... " if buffer else ">>> ")
            if line is None:
                print("now exiting InteractiveConsole...")
                return
            buffer.append(line)
            text = "\n".join(buffer)
            try:
                complete = compiler(text, "<stdin>", "single")
            except SyntaxError as exc:
                print(f"*** SyntaxError: {exc.msg}")
                buffer = []
                continue
            if complete is None:
                continue
            buffer = []
            try:
                self.loop.call(self.debugger.run_python(text))
            except KeyboardInterrupt:
                print("\nKeyboardInterrupt")


async def _connect(host: str, port: int, ssl: Any, token: str | None) -> DapClient:
    return DapClient(await relayed_channel(host, port, ssl), token=token)


async def _attach(client: DapClient, arguments: dict[str, Any]) -> None:
    await client.attach(**arguments)


def run_terminal(
    host: str, port: int, target: dict[str, Any], token: str | None, ssl: Any = None
) -> int:
    """``raydap attach``: attach with ``target`` (``breakpoint`` or ``follow``) and prompt."""
    loop = LoopThread()
    history = History(history_file())
    try:
        # Through a relay, so the session goes on when the bridge is replaced.
        client = loop.call(_connect(host, port, ssl, token))
    except OSError as exc:
        print(f"raydap: cannot reach the bridge's DAP port {host}:{port}: {exc}")
        loop.stop()
        return 1
    debugger = Debugger(client, follow="follow" in target)
    try:
        try:
            loop.call(_attach(client, target))
        except DapRequestFailed as exc:
            print(f"raydap: {exc}")
            return 1
        return Console(loop, debugger).run()
    finally:
        history.save()
        with contextlib.suppress(concurrent.futures.TimeoutError, OSError):
            loop.call(client.close(), timeout=10)
        loop.stop()
