"""Every expression the bridge evaluates in a worker, evaluated here on this Python (the matrix
runs this file on 3.10 to 3.13), against small stand-ins for the torch and Ray objects they read.
Through debugpy on a real Ray head they are tested end to end in tests/e2e."""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from raydap.adapter.upstream import in_worker


def evaluated(expression: str) -> Any:
    """As pydevd evaluates it: one expression, in a frame's namespace (here an empty one)."""
    return eval(compile(expression, "<evaluate>", "eval"), {})


def test_a_file_is_read_whole_up_to_the_limit(tmp_path: Path) -> None:
    source = tmp_path / "train.py"
    source.write_bytes(b"x = 1\n# caf\xe9 in latin-1\n")
    assert evaluated(in_worker.read_file(str(source))) == "x = 1\n# caf\ufffd in latin-1\n"
    assert evaluated(in_worker.read_file(str(source), most=4)) is None
    quoted = tmp_path / 'it\'s "quoted".py'
    quoted.write_text("ok\n")
    assert evaluated(in_worker.read_file(str(quoted))) == "ok\n"
    with pytest.raises(FileNotFoundError):  # an error the client is answered with
        evaluated(in_worker.read_file(str(tmp_path / "missing.py")))


def test_lines_are_read_as_the_workers_tracebacks_see_them(tmp_path: Path) -> None:
    source = tmp_path / "job.py"
    source.write_text("".join(f"line {n}\n" for n in range(1, 11)))
    assert evaluated(in_worker.read_lines(str(source), 3, 5)) == "line 3\nline 4\nline 5\n"
    assert evaluated(in_worker.read_lines(str(source), 0, 2)) == "line 1\nline 2\n"
    assert evaluated(in_worker.read_lines(str(tmp_path / "gone.py"), 1, 5)) == ""


class FakeDist:
    def __init__(self, initialized: bool, rank: int = 0) -> None:
        self.initialized, self.rank = initialized, rank

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return self.initialized

    def get_rank(self) -> int:
        return self.rank


def test_the_rank_is_torchs_once_a_group_is_up_else_the_environments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "torch.distributed", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    assert evaluated(in_worker.RANK) is None  # no torch imported: none imported for asking
    assert "torch.distributed" not in sys.modules
    monkeypatch.setenv("RANK", "2")
    assert evaluated(in_worker.RANK) == 2
    monkeypatch.setitem(sys.modules, "torch.distributed", FakeDist(initialized=False))
    assert evaluated(in_worker.RANK) == 2
    monkeypatch.setitem(sys.modules, "torch.distributed", FakeDist(initialized=True, rank=5))
    assert evaluated(in_worker.RANK) == 5
    monkeypatch.setenv("RANK", "not a number")
    monkeypatch.setitem(sys.modules, "torch.distributed", FakeDist(initialized=False))
    assert evaluated(in_worker.RANK) is None


def test_a_train_workers_rank_is_its_world_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    context = SimpleNamespace(get_world_rank=lambda: 3)
    train = SimpleNamespace(get_context=lambda: context)
    monkeypatch.setitem(sys.modules, "ray", SimpleNamespace(train=train, __path__=[]))
    monkeypatch.setitem(sys.modules, "ray.train", train)
    assert evaluated(in_worker.TRAIN_RANK) == 3


def child_loop() -> None:
    """A target, named by the child's expression."""


def test_a_child_is_named_as_a_dataloader_worker_or_by_its_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "torch.utils.data", raising=False)
    assert evaluated(in_worker.CHILD_NAME) == multiprocessing.current_process().name
    process = multiprocessing.Process(target=child_loop, name="Process-2")
    monkeypatch.setattr(multiprocessing, "current_process", lambda: process)
    assert evaluated(in_worker.CHILD_NAME) == "Process-2 child_loop"
    data = SimpleNamespace(get_worker_info=lambda: SimpleNamespace(id=1))
    monkeypatch.setitem(sys.modules, "torch.utils.data", data)
    assert evaluated(in_worker.CHILD_NAME) == "DataLoader worker 1"
    monkeypatch.setitem(
        sys.modules, "torch.utils.data", SimpleNamespace(get_worker_info=lambda: None)
    )
    assert evaluated(in_worker.CHILD_NAME) == "Process-2 child_loop"
