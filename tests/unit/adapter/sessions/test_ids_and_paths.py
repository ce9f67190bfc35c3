from raydap.adapter.sessions.ids import IdMap
from raydap.adapter.sessions.paths import PathMapper, rewrite_sources

PKG = "/tmp/ray/session_1/runtime_resources/working_dir_files/_ray_pkg_0a1b2c"


def test_ids_are_unique_across_workers_and_map_back() -> None:
    ids: IdMap[str] = IdMap()
    a1, b1 = ids.to_client("a", 1), ids.to_client("b", 1)
    assert a1 != b1
    assert ids.to_client("a", 1) == a1  # stable
    assert ids.to_worker(b1) == ("b", 1)
    assert ids.to_client("a", 0) == 0  # DAP's "none" stays none


def test_forgetting_a_worker_keeps_the_map_bounded() -> None:
    ids: IdMap[str] = IdMap()
    for local in range(1, 1001):
        ids.to_client("a", local)
    kept = ids.to_client("b", 7)
    ids.forget("a")
    assert len(ids) == 1
    assert ids.to_worker(kept) == ("b", 7)
    assert ids.to_client("a", 1) not in (kept,)  # fresh ids, never reused
    assert ids.ids_of("b") == [kept]


def test_package_paths_map_to_the_local_root_and_back_per_worker() -> None:
    paths = PathMapper.from_attach({"localRoot": "/home/me/proj/"})
    other_node = PKG.replace("0a1b2c", "ffee00")
    assert paths.to_client("w1", f"{PKG}/train/loop.py") == "/home/me/proj/train/loop.py"
    assert paths.to_client("w2", f"{other_node}/train/loop.py") == "/home/me/proj/train/loop.py"
    assert paths.to_worker("w1", "/home/me/proj/train/loop.py") == f"{PKG}/train/loop.py"
    assert paths.to_worker("w2", "/home/me/proj/train/loop.py") == f"{other_node}/train/loop.py"
    assert paths.to_worker("w3", "/home/me/proj/x.py") == "/home/me/proj/x.py"  # root unknown
    assert paths.to_client("w1", "/usr/lib/python3/os.py") == "/usr/lib/python3/os.py"


def test_explicit_path_mappings_win_and_need_a_whole_component() -> None:
    paths = PathMapper.from_attach(
        {"pathMappings": [{"localRoot": "/src", "remoteRoot": "/app"}, {"bad": 1}]}
    )
    assert paths.to_client("w", "/app/main.py") == "/src/main.py"
    assert paths.to_client("w", "/application/main.py") == "/application/main.py"
    assert paths.to_worker("w", "/src/main.py") == "/app/main.py"


def test_only_unmapped_package_paths_are_unopenable_unless_the_client_has_no_files() -> None:
    assert PathMapper().cannot_open(f"{PKG}/a.py")
    assert not PathMapper().cannot_open("/usr/lib/python3/os.py")
    assert not PathMapper(local_root="/src").cannot_open(f"{PKG}/a.py")
    assert PathMapper(remote_sources=True).cannot_open("/usr/lib/python3/os.py")


def test_every_source_object_in_a_body_is_rewritten() -> None:
    body = {
        "stackFrames": [{"id": 1, "source": {"path": "a"}}, {"id": 2, "source": {"path": "b"}}],
        "breakpoint": {"source": {"path": "c", "sources": [{"path": "d"}]}},
        "sources": [{"path": "e"}],
    }
    seen: list[str] = []
    rewrite_sources(body, lambda source: seen.append(source["path"]))
    assert sorted(seen) == ["a", "b", "c", "d", "e"]
