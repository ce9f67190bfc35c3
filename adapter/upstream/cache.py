"""Answers that stay true while a worker stays stopped.

Every request to debugpy costs about 44 ms, and editors ask the same things again and again
(each client, each view, each refresh). Within one stop nothing read-only changes, so the first
answer serves every later identical request, and identical requests in flight share one trip.
What may have changed is dropped: everything when the worker moves, the variables when a
client writes one or runs code in the REPL.
"""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

from raydap.protocol import Response
from raydap.protocol import command as command_info

Key = tuple[str, str]


class StopCache:
    def __init__(self) -> None:
        self._answers: dict[Key, asyncio.Future[Response]] = {}

    def __len__(self) -> int:
        return len(self._answers)

    @staticmethod
    def key(command: str, arguments: Any) -> Key | None:
        """The cache key of a request, or None if its answer must not be cached.

        ``stackTrace`` is keyed without ``startFrame`` and ``levels``: the whole stack is
        fetched once and every slice an editor asks for is cut from it."""
        if not command_info(command).cacheable:
            return None
        args = dict(arguments) if isinstance(arguments, dict) else {}
        if command == "stackTrace":
            args.pop("startFrame", None)
            args.pop("levels", None)
        return command, json.dumps(args, sort_keys=True, separators=(",", ":"))

    @staticmethod
    def upstream_arguments(command: str, arguments: Any) -> Any:
        """What to ask debugpy for on a miss: the whole stack for any ``stackTrace``."""
        if command != "stackTrace" or not isinstance(arguments, dict):
            return arguments
        return {k: v for k, v in arguments.items() if k not in ("startFrame", "levels")}

    def get(self, key: Key) -> asyncio.Future[Response] | None:
        return self._answers.get(key)

    def put(self, key: Key, answer: asyncio.Future[Response]) -> None:
        self._answers[key] = answer

    def discard(self, key: Key, answer: asyncio.Future[Response]) -> None:
        """Forget a failed answer (only if it is still the one cached)."""
        if self._answers.get(key) is answer:
            del self._answers[key]

    def clear(self) -> None:
        """The worker moved (resumed, stepped, stopped anew): nothing cached holds."""
        self._answers.clear()

    def after_request(self, command: str, arguments: Any) -> None:
        """Drop what a successful request may have changed."""
        looks_only = (
            command == "evaluate"
            and isinstance(arguments, dict)
            and arguments.get("context") in ("hover", "watch")
        )
        if command_info(command).writes_variables and not looks_only:
            self._drop("variables")
            self._drop("scopes")

    def _drop(self, command: str) -> None:
        for key in [k for k in self._answers if k[0] == command]:
            del self._answers[key]


def answer_for(command: str, arguments: Any, response: Response) -> Response:
    """A private copy of a cached answer, cut to the slice of the stack asked for."""
    body = copy.deepcopy(response.body)
    if command == "stackTrace" and response.success and isinstance(body, dict):
        args = arguments if isinstance(arguments, dict) else {}
        frames = body.get("stackFrames") or []
        start = int(args.get("startFrame") or 0)
        levels = int(args.get("levels") or 0)
        body["stackFrames"] = frames[start : start + levels] if levels else frames[start:]
        body["totalFrames"] = len(frames)
    return response.model_copy(update={"body": body})
