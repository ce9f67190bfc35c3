"""One session's translation between its client's ids and paths and each worker's.

Pure state, no I/O. Each debugpy numbers its threads, frames, variables and sources from 1, so
a session showing several workers gives the client ids of its own; paths are mapped between the
client's files and the worker's (:mod:`.paths`); a worker file the client cannot open is given a
``sourceReference`` the session answers by reading the file through the worker.
"""

from __future__ import annotations

from typing import Any

from raydap.adapter.resume import SessionIds
from raydap.adapter.sessions.ids import IdMap
from raydap.adapter.sessions.paths import PathMapper, rewrite_sources
from raydap.protocol import Route

_IDS = ("threadId", "frameId", "variablesReference")


class Translation:
    """Client ids and paths <-> ``(worker key, worker's id or path)``, for one session."""

    def __init__(self, paths: PathMapper) -> None:
        self.paths = paths
        self.threads: IdMap[str] = IdMap()
        self.frames: IdMap[str] = IdMap()
        self.variables: IdMap[str] = IdMap()
        self.sources: IdMap[str] = IdMap()
        self._by_name = {"threadId": self.threads, "frameId": self.frames,
                         "variablesReference": self.variables}  # fmt: skip
        self._by_route = {Route.THREAD: self.threads, Route.FRAME: self.frames,
                          Route.VARIABLES: self.variables, Route.SOURCE: self.sources}  # fmt: skip
        self._unopenable: dict[int, tuple[str, str]] = {}  # sourceReference -> worker, path
        self._unopenable_refs: dict[tuple[str, str], int] = {}
        self._minted = 0  # the (negative) worker-side numbers of unopenable sources

    def ids_for(self, route: Route) -> IdMap[str] | None:
        """The ids a request on ``route`` names its worker by (None: it names none)."""
        return self._by_route.get(route)

    def unopenable(self, reference: object) -> tuple[str, str] | None:
        """The worker and path behind a ``sourceReference`` minted for an unopenable file."""
        return self._unopenable.get(reference) if isinstance(reference, int) else None

    def resumed(self, key: str) -> None:
        """Frames and variables live only while a worker is stopped (DAP)."""
        self.frames.forget(key)
        self.variables.forget(key)

    def forget(self, key: str) -> list[int]:
        """The worker left: drop all its ids; the client's ids of its threads, which exited."""
        threads = self.threads.ids_of(key)
        for ids in (self.threads, self.frames, self.variables, self.sources):
            ids.forget(key)
        self.paths.roots.pop(key, None)  # a follow session sees hundreds of children come and go
        for reference, (worker, path) in list(self._unopenable.items()):
            if worker == key:
                del self._unopenable[reference]
                del self._unopenable_refs[worker, path]
        return threads

    def export(self) -> SessionIds:
        """The ids this session's client holds (sources minted here for unopenable files
        are left out: they are minted again when their stop is shown again)."""
        sources = [t for t in self.sources.triples() if t[1] > 0]
        return SessionIds(
            threads=self.threads.triples(),
            frames=self.frames.triples(),
            variables=self.variables.triples(),
            sources=sources,
        )

    def seed(self, ids: SessionIds) -> None:
        """Take over the ids an earlier session's client holds (see :mod:`.resume`)."""
        self.threads.seed(ids.threads)
        self.frames.seed(ids.frames)
        self.variables.seed(ids.variables)
        self.sources.seed(t for t in ids.sources if t[1] > 0)

    def to_worker(self, key: str, arguments: Any) -> Any:
        """A copy of a request's arguments in the worker's ids and paths."""
        if not isinstance(arguments, dict):
            return arguments
        args = dict(arguments)
        for name in _IDS:
            if isinstance(args.get(name), int) and args[name]:
                mapped = self._by_name[name].to_worker(args[name])
                if mapped is not None:
                    args[name] = mapped[1]
        if isinstance(args.get("source"), dict):
            source = dict(args["source"])
            if isinstance(source.get("path"), str):
                source["path"] = self.paths.to_worker(key, source["path"])
            if isinstance(source.get("sourceReference"), int) and source["sourceReference"]:
                source["sourceReference"] = self._worker_source(source["sourceReference"])
            args["source"] = source
        if isinstance(args.get("sourceReference"), int) and args["sourceReference"]:
            args["sourceReference"] = self._worker_source(args["sourceReference"])
        return args

    def to_client(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        """Rewrite ``body`` (the session's own copy) in the client's ids and paths."""
        if "threadId" in body and isinstance(body["threadId"], int):
            body["threadId"] = self.threads.to_client(key, body["threadId"])
        for frame in body.get("stackFrames") or []:
            frame["id"] = self.frames.to_client(key, frame["id"])
        for container in ("scopes", "variables"):
            for item in body.get(container) or []:
                self._variables_to_client(key, item)
        self._variables_to_client(key, body)
        rewrite_sources(body, lambda source: self._source_to_client(key, source))
        return body

    def _worker_source(self, reference: int) -> int:
        mapped = self.sources.to_worker(reference)
        return mapped[1] if mapped else 0

    def _variables_to_client(self, key: str, item: dict[str, Any]) -> None:
        if isinstance(item.get("variablesReference"), int) and item["variablesReference"]:
            item["variablesReference"] = self.variables.to_client(key, item["variablesReference"])

    def _source_to_client(self, key: str, source: dict[str, Any]) -> None:
        reference = source.get("sourceReference")
        if isinstance(reference, int) and reference:
            source["sourceReference"] = self.sources.to_client(key, reference)
        path = source.get("path")
        if not isinstance(path, str):
            return
        if self.paths.cannot_open(path) and not reference:
            minted = self._unopenable_refs.get((key, path))
            if minted is None:
                self._minted -= 1  # never a number debugpy gives
                minted = self.sources.to_client(key, self._minted)
                self._unopenable[minted] = (key, path)
                self._unopenable_refs[key, path] = minted
            source["sourceReference"] = minted
            source.setdefault("origin", "Ray worker (file not on this machine)")
        source["path"] = self.paths.to_client(key, path)
