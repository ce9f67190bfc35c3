"""A live worker's own stacks, read as the bridge's ``raydapStacks`` reads them: in this
process, from another thread, while the thread read runs on."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from raydap.bridge.cluster.remote_stacks import Reading
from raydap.bridge.hangs.live_stacks import reading
from raydap.live import stacks


class Loud:
    """A value whose repr would run the program's code on the reader's thread."""

    def __repr__(self) -> str:
        raise AssertionError("a live worker's locals are never repr'd")


def fetch_batch(ready: threading.Event, release: threading.Event) -> None:
    step, batch, name, model = 7, [1, 2, 3], "x" * 500, Loud()  # noqa: F841 (read from outside)
    huge = 1 << 5000  # noqa: F841
    ready.set()
    release.wait(30)


def answer_from_a_reader(arguments: dict[str, Any]) -> dict[str, Any]:
    """What pydevd's reader thread answers (this test's main thread is then a thread read)."""
    answered: list[dict[str, Any]] = []
    reader = threading.Thread(
        target=lambda: answered.append(stacks.answer(arguments)), name="reader"
    )
    reader.start()
    reader.join(10)
    return answered[0]


@pytest.fixture
def waiting_thread() -> Any:
    ready, release = threading.Event(), threading.Event()
    thread = threading.Thread(target=fetch_batch, args=(ready, release), name="loader")
    thread.start()
    ready.wait(10)
    yield thread
    release.set()
    thread.join(10)


def test_every_thread_but_the_readers_own_is_read_without_running_its_code(
    waiting_thread: threading.Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RANK", "3")
    body = answer_from_a_reader({"locals": True, "environment": ["RANK", "NOT_SET_HERE"]})
    names = [t["name"] for t in body["threads"]]
    assert names[0] == "MainThread" and "loader" in names
    [loader] = [t for t in body["threads"] if t["name"] == "loader"]
    assert loader["os_thread_id"] == waiting_thread.native_id
    top = next(f for f in loader["frames"] if f["function"] == "fetch_batch")
    assert top["path"] == __file__
    assert top["locals"]["step"] == "7" and top["locals"]["batch"] == "<list of 3>"
    assert top["locals"]["model"] == f"<{__name__}.Loud>"
    assert len(top["locals"]["name"]) <= stacks.MAX_REPR
    assert top["locals"]["huge"] == "<int of 5001 bits>"
    assert body["environment"] == {"RANK": "3"}
    assert "reader" not in names  # the thread that answers is not one read
    main = body["threads"][0]["frames"]
    assert any(f["function"] == "answer_from_a_reader" for f in main)


def test_the_bridge_reads_the_answer_as_py_spy_readings(waiting_thread: threading.Thread) -> None:
    found = reading(answer_from_a_reader({}))
    assert isinstance(found, Reading)
    loader = next(t for t in found.threads if t.name == "loader")
    assert any(f.function == "fetch_batch" and f.locals is None for f in loader.frames)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"threads": []}, "it has no thread to show"),
        ({"threads": "many"}, "its stacks could not be read: Input should be a valid list"),
        ({"threads": [{"name": "t", "frames": [{"function": "f", "path": "p", "line": -1}]}]},
         "its stacks could not be read: Input should be greater than or equal to 0"),
        ({"threads": [{"name": "t", "frames": []}] * 2000},
         "its stacks could not be read: List should have at most 1024 items after validation, "
         "not 2000"),
        ({"threads": [], "pad": "x" * (5 * 1024 * 1024)}, "its stacks weigh over 4194304 bytes"),
    ],
)  # fmt: skip
def test_what_a_worker_answers_is_checked(body: Any, why: str) -> None:
    assert reading(body) == why
