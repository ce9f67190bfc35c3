"""Source paths as the worker sees them, and as the client does.

Code shipped with ``runtime_env={"working_dir": ...}`` runs from
``.../runtime_resources/working_dir_files/_ray_pkg_<hash>/`` on each node (``py_modules_files``
likewise). The client has the same files under its own ``localRoot``. This maps one to the
other in both directions, per worker, since each node unpacks to its own directory.

A client with no copy of the files at all (the web page) says ``"remoteSources": true``: then
every file it is shown is one it cannot open, and is read through its worker.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

RAY_PACKAGE = re.compile(
    r"^(?P<root>.*/runtime_resources/(?:working_dir_files|py_modules_files)/_ray_pkg_[0-9a-f]+)"
    r"(?P<rest>/.*)?$"
)


@dataclass
class PathMapper:
    """``local_root`` stands for every worker's Ray package directory; ``mappings`` are
    explicit ``(local, remote)`` prefix pairs, as VS Code's ``pathMappings``."""

    local_root: str | None = None
    mappings: list[tuple[str, str]] = field(default_factory=list)
    #: Each worker's package directory, learned from the paths it reports.
    roots: dict[Hashable, str] = field(default_factory=dict)
    #: The client has none of the files (a browser): it opens none of them.
    remote_sources: bool = False

    @classmethod
    def from_attach(cls, arguments: dict[str, Any]) -> PathMapper:
        """From the attach arguments ``localRoot``, ``pathMappings`` and ``remoteSources``."""
        local_root = arguments.get("localRoot")
        pairs = []
        for item in arguments.get("pathMappings") or []:
            if isinstance(item, dict) and item.get("localRoot") and item.get("remoteRoot"):
                pairs.append((str(item["localRoot"]), str(item["remoteRoot"])))
        root = str(local_root).rstrip("/") if isinstance(local_root, str) and local_root else None
        remote = arguments.get("remoteSources") is True
        return cls(root, sorted(pairs, key=lambda p: -len(p[1])), remote_sources=remote)

    @property
    def active(self) -> bool:
        return bool(self.local_root or self.mappings)

    def to_client(self, key: Hashable, path: str) -> str:
        for local, remote in self.mappings:
            if _under(path, remote):
                return local.rstrip("/") + path[len(remote.rstrip("/")) :]
        found = RAY_PACKAGE.match(path)
        if found:
            self.roots[key] = found["root"]
            if self.local_root:
                return self.local_root + (found["rest"] or "")
        return path

    def to_worker(self, key: Hashable, path: str) -> str:
        for local, remote in sorted(self.mappings, key=lambda p: -len(p[0])):
            if _under(path, local):
                return remote.rstrip("/") + path[len(local.rstrip("/")) :]
        root = self.roots.get(key)
        if self.local_root and root and _under(path, self.local_root):
            return root + path[len(self.local_root) :]
        return path

    def cannot_open(self, path: str) -> bool:
        """A worker path the client cannot have: any, for a client with no files; else one
        inside a Ray package, with no mapping."""
        if self.remote_sources:
            return True
        return (
            not self.local_root
            and RAY_PACKAGE.match(path) is not None
            and not any(_under(path, remote) for _, remote in self.mappings)
        )


def _under(path: str, prefix: str) -> bool:
    prefix = prefix.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


def rewrite_sources(value: Any, rewrite: Callable[[dict[str, Any]], None]) -> None:
    """Apply ``rewrite`` to every DAP ``Source`` object in a message body, in place."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name == "source" and isinstance(item, dict):
                rewrite(item)
                for nested in item.get("sources") or []:
                    if isinstance(nested, dict):
                        rewrite(nested)
            elif name == "sources" and isinstance(item, list):
                for nested in item:
                    if isinstance(nested, dict):
                        rewrite(nested)
            elif isinstance(item, (dict, list)):
                rewrite_sources(item, rewrite)
    elif isinstance(value, list):
        for item in value:
            rewrite_sources(item, rewrite)
