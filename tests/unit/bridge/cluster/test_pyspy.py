"""py-spy's answers, as captured from py-spy 0.4 on this machine, read into frames."""

from __future__ import annotations

import json

import pytest

from raydap.bridge.cluster.pyspy import BadDump, main_thread, parse_json, parse_text

TEXT = """Process 5846: /work/main/.venv/bin/python threads.py
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 5846 (idle): "MainThread"
    Condition.wait (threading.py:327)
    Event.wait (threading.py:629)
    wait_here (threads.py:7)
    <module> (threads.py:8)
Thread 5848 (active+gil): "loader"
    worker_loop (threads.py:4)
    Thread.run (threading.py:982)
"""

JSON = [
    {"pid": 6025, "thread_id": 1399, "thread_name": "loader", "os_thread_id": 6027,
     "active": False, "owns_gil": False,
     "frames": [{"name": "worker_loop", "filename": "/tmp/threads.py", "module": None,
                 "short_filename": "threads.py", "line": 4, "locals": None}]},
    {"pid": 6025, "thread_id": 1400, "thread_name": "MainThread", "os_thread_id": 6025,
     "active": False, "owns_gil": False,
     "frames": [{"name": "wait_here", "filename": "/tmp/threads.py", "line": 7},
                {"name": "<module>", "filename": "/tmp/threads.py", "line": 8}]},
]  # fmt: skip


def test_the_text_dump_is_read_thread_by_thread_innermost_first() -> None:
    threads = parse_text(TEXT)
    assert [t.name for t in threads] == ["MainThread", "loader"]
    main = main_thread(threads, 5846)
    assert [(f.function, f.path, f.line) for f in main.frames][-2:] == [
        ("wait_here", "threads.py", 7),
        ("<module>", "threads.py", 8),
    ]


def test_the_json_dump_gives_full_paths_and_the_main_thread_is_found() -> None:
    threads = parse_json(json.dumps(JSON))
    main = main_thread(threads, 6025)
    assert main.name == "MainThread"
    assert main.frames[0].path == "/tmp/threads.py" and main.frames[0].line == 7


@pytest.mark.parametrize("answer", ["{}", '[{"frames": 3}]', "not json", "[]" + " " * 9_000_000])
def test_unreadable_json_is_a_clear_error(answer: str) -> None:
    with pytest.raises(BadDump):
        parse_json(answer)


@pytest.mark.parametrize("answer", ["", "Error: Failed to get process executable name"])
def test_a_text_without_threads_is_a_clear_error(answer: str) -> None:
    with pytest.raises(BadDump):
        parse_text(answer)
