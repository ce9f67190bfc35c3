"""A session's translation of ids and paths, with plain values: no worker, no socket."""

from __future__ import annotations

from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.sessions.translate import Translation
from raydap.protocol import Route

PKG = "/tmp/ray/session_1/runtime_resources/working_dir_files/_ray_pkg_0a1b2c"


def test_two_workers_ids_never_meet_and_a_worker_leaving_takes_all_of_its_own() -> None:
    ids = Translation(PathMapper.from_attach({}))
    for key in ("w1", "w2"):  # both number their thread, frame and variables 1
        body = {"threadId": 1, "stackFrames": [{"id": 1, "source": {"sourceReference": 1}}],
                "variables": [{"variablesReference": 1}]}  # fmt: skip
        ids.to_client(key, body)
    assert ids.to_worker("w2", {"threadId": 2, "frameId": 2, "variablesReference": 2}) == {
        "threadId": 1, "frameId": 1, "variablesReference": 1
    }  # fmt: skip
    assert ids.forget("w1") == [1]  # the client's id of its thread, which exited
    frames = ids.ids_for(Route.FRAME)
    assert frames is not None and frames.to_worker(1) is None and frames.to_worker(2) == ("w2", 1)
    assert len(ids.sources) == 1  # w1's source went with it


def test_files_the_client_cannot_open_get_one_reference_each() -> None:
    """With no localRoot, a file of a Ray package is on the worker's node only."""
    ids = Translation(PathMapper.from_attach({}))
    path = f"{PKG}/train.py"
    first = ids.to_client("w1", {"source": {"path": path}})["source"]["sourceReference"]
    again = ids.to_client("w1", {"source": {"path": path}})["source"]["sourceReference"]
    other = ids.to_client("w2", {"source": {"path": path}})["source"]["sourceReference"]
    assert first == again != other
    assert ids.unopenable(first) == ("w1", path) and ids.unopenable(other) == ("w2", path)
    ids.forget("w1")
    assert ids.unopenable(first) is None
    model = f"{PKG}/model.py"  # w2's second file, after w1 left: a reference of its own
    newer = ids.to_client("w2", {"source": {"path": model}})["source"]["sourceReference"]
    assert ids.unopenable(newer) == ("w2", model) and ids.unopenable(other) == ("w2", path)
    assert ids.to_client("w1", {"source": {"path": "/home/me/x.py"}}) == {
        "source": {"path": "/home/me/x.py"}
    }  # a file outside any package stays as it is


def test_a_client_with_no_files_is_given_a_reference_for_every_file() -> None:
    """The web page has no checkout: every file it is shown is read through the worker."""
    ids = Translation(PathMapper.from_attach({"remoteSources": True}))
    job, library = "/home/me/job.py", "/usr/lib/python3.11/json/__init__.py"
    for path in (job, library, f"{PKG}/train.py"):
        source = ids.to_client("w1", {"source": {"path": path}})["source"]
        assert source["path"] == path and ids.unopenable(source["sourceReference"]) == ("w1", path)
    assert not PathMapper.from_attach({"remoteSources": "yes"}).remote_sources  # true, or not


def test_workers_that_leave_leave_no_path_roots_behind() -> None:
    """A follow session sees hundreds of short-lived children (DataLoader workers, one set an
    epoch): what it learned of each one's package directory goes with it."""
    ids = Translation(PathMapper.from_attach({"localRoot": "/home/me/job"}))
    for n in range(300):
        key = f"child{n}"
        shown = ids.to_client(key, {"source": {"path": f"{PKG}/data.py"}})
        assert shown["source"]["path"] == "/home/me/job/data.py"
        ids.forget(key)
    assert ids.paths.roots == {}
