"""The one list of private debugpy, Ray and torch APIs raydap depends on: every hook is found
on this Python (the matrix runs this on each; torch's on 3.11, where it installs), a moved one
is named with what is gone, and no private use in raydap's code is left off the list."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from raydap.live import compat

ROOT = Path(__file__).resolve().parents[3]


def found_here() -> dict[str, dict[str, str]]:
    """Every hook's finding in a fresh interpreter (importing pydevd changes a process)."""
    script = "import json; from raydap.live import compat; " \
        "print(json.dumps([f.as_dict() for f in compat.check()]))"  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, env={"PYDEVD_DISABLE_FILE_VALIDATION": "1"})  # fmt: skip
    return {f["hook"]: f for f in json.loads(done.stdout.splitlines()[-1])}


def test_every_hook_raydap_uses_is_found_on_this_python() -> None:
    findings = found_here()
    assert set(findings) == {hook.name for hook in compat.HOOKS}
    assert not [f for f in findings.values() if f["state"] == "unsupported"]
    for hook in compat.HOOKS:
        installed = importlib.util.find_spec(hook.module.split(".")[0]) is not None
        if hook.in_this_python() and installed and hook.library != "torch":
            assert findings[hook.name]["state"] == "ok", findings[hook.name]
    if importlib.util.find_spec("torch") is not None:  # 3.11: the CPU build, gloo only
        torch_hooks = [f for f in findings.values() if f["library"] == "torch"]
        assert {f["state"] for f in torch_hooks} == {"ok", "not_here"}
        assert [f["why"] for f in torch_hooks if f["state"] == "not_here"] == [
            "this torch has no NCCL"
        ]


def test_a_moved_hook_is_named_with_what_is_gone_and_an_absent_library_is_not_blamed() -> None:
    moved = compat.Hook("ray.util.debugpy._debugpy_breakpoint", "ray", "patched", "worker",
                        ("raydap.live.ray_hook",), "why", compat.RAY_CHECKED,
                        "ray.util.debugpy", ("_debugpy_breakpoint_v2",))  # fmt: skip
    assert compat._finding(moved).state == "unsupported"
    assert compat._finding(moved).why == "ray.util.debugpy._debugpy_breakpoint_v2 is gone"
    absent = compat.Hook("nothing.here", "torch", "called", "worker", (), "why", "", "no_such_lib")
    assert compat._finding(absent) == compat.Finding(
        "nothing.here", "torch", "not_here", "no_such_lib is not installed"
    )
    old_python = compat.Hook("x", "python", "read", "worker", (), "", "", "sys", below=(3, 0))
    assert compat._finding(old_python).state == "not_here"


#: What a private use of debugpy, Ray, torch or CPython looks like in raydap's source.
PRIVATE = re.compile(
    r"_pydevd_bundle\.|_pydevd_sys_monitoring|import pydevd|from pydevd|ray\._private|ray\._raylet"
    r"|ray_debugpy\._|internal_kv\._|c10d\._|_posixsubprocess|rpdb\.|c10d_c\b"
)


@pytest.mark.parametrize("folder", ["live", "adapter", "bridge"])
def test_every_private_use_in_raydap_is_on_the_list(folder: str) -> None:
    listed = {user for hook in compat.HOOKS for user in hook.users}
    unlisted = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        if path.name == "compat.py":
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(("raydap", *parts)).removesuffix(".__init__")
        code = "\n".join(
            line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")
        )
        if PRIVATE.search(code) and module not in listed:
            unlisted.append(f"{module}: {PRIVATE.search(code).group(0)}")  # type: ignore[union-attr]
    assert not unlisted, f"private APIs used but not in raydap.live.compat.HOOKS: {unlisted}"


def test_the_docs_list_every_hook() -> None:
    listed = (ROOT / "docs" / "compat.md").read_text()
    assert not [hook.name for hook in compat.HOOKS if f"`{hook.name}`" not in listed]


def test_a_request_debugpy_drops_or_gains_is_named() -> None:
    class Processor:
        """pydevd as a later version might be: no ``threads``, and ``loadedSources`` added."""

        def on_loadedsources_request(self) -> None: ...

    class Module:
        PyDevJsonCommandProcessor = Processor

    problem = compat._request_handlers(Module)
    assert problem is not None
    assert "no longer answers threads" in problem
    assert "now answers loadedSources" in problem
    assert "evaluate" not in problem  # debugpy's adapter answers it itself
