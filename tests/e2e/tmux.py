"""A terminal program driven as a person drives it: keys sent to a real tmux pane, the screen
read back. Each session runs on its own tmux server, stopped by its pid."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import uuid
from collections.abc import Callable

from tests.waiting import wait_until

#: ``raydap attach``'s prompt, which names the worker.
PROMPT = r"\(raydap [\w.]+ pid \d+\)"  # task and pid, from the fields the bridge gives


class Terminal:
    def __init__(self, command: list[str], env: dict[str, str], width: int = 200) -> None:
        self.socket = f"raydap-test-{uuid.uuid4().hex[:8]}"
        environment = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # The program's exit status stays on screen; the pane then waits to be read.
        shell = f"env {environment} {shlex.join(command)}; echo EXITED $?; sleep 600"
        self._tmux("new-session", "-d", "-x", str(width), "-y", "50", shell)
        self._tmux("set-option", "-g", "history-limit", "20000")
        self.server_pid = int(self._tmux("display-message", "-p", "#{pid}").strip())

    def _tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10,
            env={k: v for k, v in os.environ.items() if k != "TMUX"},
        )  # fmt: skip
        if done.returncode != 0:
            raise AssertionError(f"tmux {args[0]}: {done.stderr}")
        return done.stdout

    def type(self, line: str, enter: bool = True) -> None:
        self._tmux("send-keys", "-t", "0", "-l", line)
        if enter:
            self._tmux("send-keys", "-t", "0", "Enter")

    def key(self, name: str) -> None:
        self._tmux("send-keys", "-t", "0", name)

    def screen(self) -> str:
        """Everything the pane showed, scrollback included."""
        return self._tmux("capture-pane", "-p", "-J", "-t", "0", "-S", "-20000")

    def wait_for(
        self, wanted: str | Callable[[str], bool], timeout: float = 30, after: int = 0
    ) -> str:
        """The screen once ``wanted`` shows up in it (past the first ``after`` characters)."""
        found = wanted if callable(wanted) else (lambda text: wanted in text)

        def shown() -> str | None:
            text = self.screen()
            return text if found(text[after:]) else None

        return wait_until(
            shown, timeout=timeout, every=0.1, what=f"{wanted!r} on screen", context=self.screen
        )

    def command(self, line: str, timeout: float = 30, prompt: str = PROMPT) -> str:
        """Type a line at the prompt; what it printed until the next prompt."""
        before = len(self.screen().rstrip())
        self.type(line)

        def prompted(text: str) -> bool:
            lines = text.rstrip().splitlines()
            return len(lines) > 1 and re.fullmatch(prompt, lines[-1]) is not None

        answer = self.wait_for(prompted, timeout, after=before).rstrip()[before:]
        return "\n".join(answer.splitlines()[1:-1])  # without the typed line and the new prompt

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.server_pid, signal.SIGTERM)
