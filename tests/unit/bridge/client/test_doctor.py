"""What ``raydap doctor`` says of a node whose kernel refuses py-spy and gdb a sibling: the
refusals as the tools print them (captured on a machine that refused them), the node's facts
as the probe reports them."""

from __future__ import annotations

from typing import Any

import pytest

from raydap.bridge.client.doctor import check_node
from raydap.bridge.cluster.ptrace_check import has_ptrace_capability, refused

PY_SPY_REFUSED = (
    "Permission Denied: Try running again with elevated permissions by going "
    "'sudo env \"PATH=$PATH\" !!'"
)
GDB_REFUSED = "ptrace: Operation not permitted."


def node(**facts: Any) -> dict[str, Any]:
    return {
        "node_ip": "10.0.0.7", "node_id": "ab" * 20, "debugpy": "1.8.22", "ray": "2.60.0",
        "python": "3.11.9", "env": {}, "py_spy": "/usr/bin/py-spy", "gdb": "/usr/bin/gdb",
        "gdb_calls": "", "ptrace_scope": "0", "cap_sys_ptrace": False, "raydap": True,
        "unsupported": [], "sibling_attach": {"py_spy": "", "gdb": ""}, **facts,
    }  # fmt: skip


def said(answer: dict[str, Any]) -> str:
    return "\n".join(str(f) for f in check_node(answer))


def test_ptrace_scope_1_is_named_for_py_spy_and_gdb_both() -> None:
    text = said(node(ptrace_scope="1", sibling_attach={"py_spy": PY_SPY_REFUSED,
                                                       "gdb": GDB_REFUSED}))  # fmt: skip
    for tool in ("py-spy", "gdb"):
        assert f"{tool} may not attach to a sibling process" in text
    assert text.count("kernel.yama.ptrace_scope is 1") == 2
    assert text.count("sysctl -w kernel.yama.ptrace_scope=0") == 2
    assert "stacks of workers nobody holds cannot be read" in text
    assert "a hung worker cannot be paused from outside" in text
    assert "newer gdb" not in text  # not gdb's fault


@pytest.mark.parametrize(
    ("scope", "capable", "named"),
    [
        ("0", False, "lack CAP_SYS_PTRACE"),
        (None, False, "lack CAP_SYS_PTRACE"),
        ("2", False, "only CAP_SYS_PTRACE may trace"),
        ("3", True, "no process may trace"),
        ("1", True, "although the workers hold CAP_SYS_PTRACE"),
    ],
)
def test_each_cause_has_its_own_fix(scope: str | None, capable: bool, named: str) -> None:
    text = said(node(ptrace_scope=scope, cap_sys_ptrace=capable,
                     sibling_attach={"py_spy": PY_SPY_REFUSED, "gdb": ""}))  # fmt: skip
    assert named in text
    assert "[  ok] node 10.0.0.7 (abababababab): gdb attaches to a sibling process" in text


def test_a_gdb_that_attaches_but_breaks_calls_is_the_gdbs_fault() -> None:
    text = said(node(gdb_calls="gdb cannot call into a process on this node"))
    assert "install a newer gdb" in text
    assert "py-spy attaches to a sibling process" in text


def test_the_refusals_and_capabilities_are_read_as_the_kernel_says_them() -> None:
    assert refused(PY_SPY_REFUSED) and refused(GDB_REFUSED)
    assert not refused("Process 42: python3 -c import time")
    assert has_ptrace_capability("CapEff:\t000001fffeffffff\n")
    assert not has_ptrace_capability("CapEff:\t00000000a80425fb\n")  # Docker's default set
