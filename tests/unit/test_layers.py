"""The direction of imports: bridge -> adapter -> protocol, and inside the bridge
client -> server -> mcp -> service -> hangs, captures -> workers -> cluster. A module may import
its own room and the rooms below it, never one above; the protocol layer does no I/O at all."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from raydap.protocol import extension

ROOT = Path(__file__).resolve().parents[2]
#: Rooms from the bottom up; a module may import from its own room and those before it.
ROOMS = [
    "raydap.protocol.extension",  # raydap's own DAP messages' names: imports nothing
    "raydap.live",  # runs inside Ray workers: imports nothing of raydap but those names
    "raydap.protocol",
    "raydap.adapter",  # what its rooms share: errors, channels, requests, resuming
    "raydap.adapter.captures",  # capture sessions, paths and points
    "raydap.adapter.upstream",  # the connection to each worker, and what it owns
    "raydap.adapter.sessions",  # client sessions, over the upstream and the captures
    "raydap.bridge.cluster",
    "raydap.bridge.workers",  # holding workers
    "raydap.bridge.hangs",  # diagnosing hangs: given the workers, never imported by them
    "raydap.bridge.captures",  # capture points and captures: beside hangs, never importing it
    "raydap.bridge.service",  # the doors' one entry
    "raydap.bridge.mcp",
    "raydap.bridge.server",
    "raydap.bridge.client",
    "raydap.bridge",
]
#: What sans-I/O means: the protocol layer reads bytes it is given, and nothing else.
IO_MODULES = {"asyncio", "socket", "ssl", "selectors", "aiohttp", "websockets", "subprocess"}


def modules() -> dict[str, Path]:
    found = {}
    for folder in ("live", "protocol", "adapter", "bridge"):
        for path in (ROOT / folder).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            name = ".".join(("raydap", *parts)).removesuffix(".__init__")
            found[name] = path
    return found


def room(module: str) -> int:
    """The room of the longest prefix that names the module (``raydap.bridge`` holds only
    what no room inside the bridge does)."""
    matching = [p for p in ROOMS if module == p or module.startswith(p + ".")]
    return ROOMS.index(max(matching, key=len))


def imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_the_package_is_found() -> None:
    assert {
        "raydap.protocol.codec",
        "raydap.adapter.sessions.mux",
        "raydap.bridge.client.cli",
    } <= set(modules())


def test_a_module_is_in_the_innermost_room_that_names_it() -> None:
    assert ROOMS[room("raydap.bridge.server.http_api")] == "raydap.bridge.server"
    assert ROOMS[room("raydap.bridge.__main__")] == "raydap.bridge"
    assert ROOMS[room("raydap.protocol")] == "raydap.protocol"


@pytest.mark.parametrize("module", sorted(modules()))
def test_imports_point_down(module: str) -> None:
    upward = [
        name
        for name in imports(modules()[module])
        if name.startswith("raydap.") and name in modules() and room(name) > room(module)
        and not _own(module, name)
    ]  # fmt: skip
    assert not upward, f"{module} imports from a room above it: {upward}"


def _own(module: str, name: str) -> bool:
    """Whether ``name`` is one of package ``module``'s own modules, which it may re-export
    (``raydap.adapter`` names its rooms' main classes)."""
    return modules()[module].name == "__init__.py" and name.startswith(module + ".")


def test_the_capture_room_does_not_reach_into_the_hang_room() -> None:
    """Rooms side by side: each is given the workers, and neither needs the other."""
    crossing = [
        (module, name)
        for module, path in modules().items()
        if module.startswith("raydap.bridge.captures")
        for name in imports(path)
        if name.startswith("raydap.bridge.hangs")
    ]
    assert not crossing


def import_graph(found: dict[str, Path]) -> dict[str, set[str]]:
    """Which of ``found`` each module imports. Imports under ``TYPE_CHECKING`` count (a piece
    that names its owner's type to call its privates is tied to it all the same); ``from pkg
    import submodule`` imports the submodule, not the package; a package re-exporting its own
    modules imports nothing of them here."""
    graph = {}
    for module, path in found.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    submodule = f"{node.module}.{alias.name}"
                    targets.add(submodule if submodule in found else node.module)
        package = path.name == "__init__.py"
        graph[module] = {
            t for t in targets
            if t in found and t != module and not (package and t.startswith(module + "."))
        }  # fmt: skip
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each group of modules that import one another, round (Tarjan's strongly connected
    components of more than one module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph[module]):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while (top := stack.pop()) != module:
                group.append(top)
            if group:
                found.append(sorted([module, *group]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_one_another_round() -> None:
    assert circles(import_graph(modules())) == []


def test_a_circle_is_found_through_type_checking_and_a_package_is_not_one(tmp_path: Path) -> None:
    sources = {
        "pkg/__init__.py": "from pkg.owner import Owner\n",  # re-exports its own: no circle
        "pkg/owner.py": "from pkg import piece\nclass Owner: ...\n",
        "pkg/piece.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from pkg.owner import Owner\n",
        "pkg/alone.py": "import pkg\n",
    }  # fmt: skip
    found = {}
    for name, text in sources.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
        found[name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")] = (
            tmp_path / name
        )
    assert circles(import_graph(found)) == [["pkg.owner", "pkg.piece"]]
    (tmp_path / "pkg/piece.py").write_text("OWNER = 'given as an argument'\n")
    assert circles(import_graph(found)) == []


@pytest.mark.parametrize("module", sorted(m for m in modules() if m.startswith("raydap.protocol")))
def test_the_protocol_layer_does_no_io(module: str) -> None:
    used = {name.split(".")[0] for name in imports(modules()[module])}
    assert not used & IO_MODULES, f"{module} imports {used & IO_MODULES}"


def test_code_in_workers_reads_the_messages_names_without_pydantic() -> None:
    """``raydap.live`` runs in every Ray worker: the one module of raydap it reads brings
    nothing else of the protocol layer (pydantic, its messages) with it."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, raydap.protocol.extension; print(sorted(sys.modules))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "'raydap.protocol.extension'" in loaded
    assert "'pydantic'" not in loaded and "'raydap.protocol.messages'" not in loaded


def test_the_extensions_copy_of_the_replaced_event_is_the_protocols() -> None:
    source = (ROOT / "vscode-ext" / "src" / "bridgeDebugAdapter.ts").read_text()
    assert f"export const REPLACED_EVENT = '{extension.REPLACED}';" in source


#: The doors that answer through the workers service: of the adapter they speak only its error
#: vocabulary (the DAP doors build the adapter's sessions; the HTTP door keeps the set of them
#: open on /dap, to close them when the bridge stops).
SERVICE_DOORS = {
    "raydap.bridge.server.http_api": set(),
    "raydap.bridge.server.http.common": {"raydap.adapter.ClientSession"},
    "raydap.bridge.server.http.workers": set(),
    "raydap.bridge.server.http.hangs": set(),
    "raydap.bridge.server.http.captures": set(),
    "raydap.bridge.server.http.breakpoints": set(),
    "raydap.bridge.mcp.catalog": set(),
    "raydap.bridge.mcp.desk": set(),
    "raydap.bridge.mcp.server": set(),
    "raydap.bridge.client.cli": set(),
}


@pytest.mark.parametrize("door", sorted(SERVICE_DOORS))
def test_doors_speak_only_the_adapters_errors(door: str) -> None:
    allowed = {"raydap.adapter", "raydap.adapter.errors", *SERVICE_DOORS[door]}
    used = {
        name
        for name in imports(modules()[door])
        if name.startswith("raydap.adapter") and name not in allowed
        and not name.startswith("raydap.adapter.errors.")
    }  # fmt: skip
    assert not used, f"{door} reaches past the service into {sorted(used)}"


#: What the command line and the other clients may use of the server: the settings its flags
#: are made from, the connection file's and the token file's formats (``raydap token`` edits
#: the latter), running a bridge in this process (``process``, the demo's ``bridge``) and the
#: errors of preparing its folders. Nothing of its insides.
SERVER_FOR_CLIENTS = {
    "raydap.bridge.server.settings",
    "raydap.bridge.server.connection_file",
    "raydap.bridge.server.token_file",
    "raydap.bridge.server.process",
    "raydap.bridge.server.bridge",
    "raydap.bridge.server.directories",
}


@pytest.mark.parametrize(
    "module", sorted(m for m in modules() if m.startswith("raydap.bridge.client"))
)
def test_clients_use_only_the_servers_entries(module: str) -> None:
    reached = {
        name
        for name in imports(modules()[module])
        if name.startswith("raydap.bridge.server.") and name in modules()
        and name not in SERVER_FOR_CLIENTS
    }  # fmt: skip
    assert not reached, f"{module} reaches into the server: {sorted(reached)}"
