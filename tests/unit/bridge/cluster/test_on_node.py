"""What the node-side pause says when it cannot work, before touching any process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from raydap.bridge.cluster import on_node


def test_without_gdb_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing there; the venv's bin has no gdb
    monkeypatch.setenv("HOME", str(tmp_path))
    assert "gdb is not installed" in on_node.pause_in_place(os.getpid())


def test_remote_debugging_turned_off_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_DISABLE_REMOTE_DEBUG", "1")
    assert "PYTHON_DISABLE_REMOTE_DEBUG" in on_node.pause_in_place(os.getpid())


@pytest.mark.parametrize(
    ("name", "source"),
    [("pause_handler", on_node.PAUSE_HANDLER), ("rescue_handler", on_node.RESCUE_HANDLER)],
)
def test_the_handler_files_are_private_and_valid_python(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str, source: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    written = Path(on_node._handler_file(name, source))
    assert written.parent.stat().st_mode & 0o077 == 0  # only its owner may write there
    compile(written.read_text(), str(written), "exec")


def test_py_spy_on_a_process_that_exited_is_an_error_not_a_crash() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    [(pid, answer)] = on_node.read_stacks([gone.pid], timeout=10).items()
    assert pid == gone.pid and answer.keys() == {"error"} and answer["error"]


def test_a_home_that_cannot_be_written_falls_back_to_a_private_temp_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker node whose home is read-only (some containers) still reads stacks."""
    home = tmp_path / "home"
    home.write_text("a file where the home directory should be")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr("tempfile.tempdir", None)  # read TMPDIR again
    folder = Path(on_node._private_folder("locks"))
    assert folder == tmp_path / "tmp" / f"raydap-{os.getuid()}" / "locks"
    assert folder.parent.stat().st_mode & 0o077 == 0


def test_a_folder_of_another_user_is_never_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if os.getuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    (tmp_path / "home" / ".cache" / "raydap").mkdir(parents=True)
    os.chown(tmp_path / "home" / ".cache" / "raydap", 65534, 65534)
    (tmp_path / "tmp" / f"raydap-{os.getuid()}").mkdir(parents=True)
    os.chown(tmp_path / "tmp" / f"raydap-{os.getuid()}", 65534, 65534)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(PermissionError, match="another user's"):
        on_node._private_folder()


@pytest.mark.parametrize(
    ("source", "handler"),
    [(on_node.PAUSE_HANDLER, "raydap_pause"), (on_node.RESCUE_HANDLER, "raydap_rescue")],
)
def test_a_handler_file_run_in_a_process_installs_its_handler_and_keeps_the_old_one(
    tmp_path: Path, source: str, handler: str
) -> None:
    """As the injection runs it inside a worker (exec of the file, in a namespace of its own),
    in a process without raydap on its path."""
    written = tmp_path / "handler.py"
    written.write_text(source)
    script = (
        "import signal\n"
        "def own(signum, frame): pass\n"
        "signal.signal(signal.SIGUSR2, own)\n"
        f"exec(compile(open({str(written)!r}).read(), {str(written)!r}, 'exec'), {{}})\n"
        "installed = signal.getsignal(signal.SIGUSR2)\n"
        "print(installed.__name__, installed.__globals__['_previous'].__name__)\n"
    )
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True,
                          check=True, cwd=tmp_path)  # fmt: skip
    assert done.stdout.split() == [handler, "own"]
