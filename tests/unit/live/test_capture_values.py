"""Reading values for a capture never runs the program's code, and every bound it reaches says
so where it cut: a hostile object (a ``__repr__``, property or ``__getattr__`` that raises,
sleeps or recurses) is read from its structure, and a huge one is read short."""

from __future__ import annotations

import enum
import json
import linecache
import os
import sys
import time
import warnings
from collections import OrderedDict
from typing import Any

import numpy
import pytest

from raydap.live.capture_values import REDACTED, Bounds, read_frames, read_value
from raydap.live.redact import BadPattern, Redactor

CALLED: list[str] = []


class Hostile:
    """Everything a reader could call runs code that a capture must never run."""

    __slots__ = ("__dict__", "slot")

    def __init__(self) -> None:
        object.__setattr__(self, "slot", 7)
        object.__getattribute__(self, "__dict__")["plain"] = "kept"

    def __repr__(self) -> str:
        CALLED.append("repr")
        time.sleep(5)
        return "never"

    def __getattribute__(self, name: str) -> Any:
        CALLED.append(f"getattribute {name}")
        raise RuntimeError("no")

    def __getattr__(self, name: str) -> Any:
        CALLED.append(f"getattr {name}")
        raise RuntimeError("no")

    @property
    def costly(self) -> int:
        CALLED.append("property")
        raise RuntimeError("no")


class LyingList(list[int]):
    def __iter__(self) -> Any:
        CALLED.append("iter")
        raise RuntimeError("no")

    def __len__(self) -> int:
        CALLED.append("len")
        return 10**9


class LyingStr(str):
    def __str__(self) -> str:
        CALLED.append("str")
        return "never"


@pytest.fixture(autouse=True)
def nothing_called() -> Any:
    CALLED.clear()
    yield
    assert CALLED == []


def child(node: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in node["children"] if c["name"] == name)


def test_a_hostile_object_is_read_from_its_structure_alone() -> None:
    node = read_value(Hostile(), Bounds())

    assert node["type"].endswith("Hostile") and node["value"].endswith("Hostile object>")
    assert child(node, "plain")["value"] == "'kept'" and child(node, "slot")["value"] == "7"
    assert "costly" not in {c["name"] for c in node["children"]}  # a property is not read


def test_subclasses_of_builtins_are_read_through_the_builtin() -> None:
    listed = read_value(LyingList([1, 2, 3]), Bounds())
    text = read_value(LyingStr("plain"), Bounds())

    assert listed["value"].endswith("of 3") and [c["value"] for c in listed["children"]] == [
        "1", "2", "3"
    ]  # fmt: skip
    assert text["value"] == "'plain'"


def test_every_bound_cuts_and_says_so() -> None:
    bounds = Bounds(items=3, chars=10, depth=2)

    long_list = read_value(list(range(100)), bounds)
    long_text = read_value("x" * 50, bounds)
    deep = read_value({"a": {"b": {"c": 1}}}, bounds)
    huge = read_value(10**5000, bounds)

    assert len(long_list["children"]) == 3 and long_list["cut"] == "97 more items"
    assert long_text["value"] == repr("x" * 10) and long_text["cut"] == "40 more characters"
    assert child(child(deep, "a"), "b")["cut"] == "depth"
    assert huge["cut"] == "too long" and "bits" in huge["value"]


def test_a_capture_stays_within_its_byte_budget() -> None:
    big = {f"k{i}": "v" * 200 for i in range(5000)}
    items = [big] * 50

    def frame_with(values: Any) -> Any:
        return sys._getframe()

    frames, cut = read_frames(frame_with(items), Bounds(bytes=8 * 1024, items=1000))

    assert cut is True
    assert len(json.dumps(frames)) < 3 * 8 * 1024  # roughly the budget, never the whole value


def test_cycles_and_shared_values() -> None:
    loop: list[Any] = []
    loop.append(loop)
    shared = [1]

    node = read_value([loop, shared, shared], Bounds())

    assert child(child(node, "0"), "0")["cut"] == "cycle"
    assert child(node, "1") == {**child(node, "2"), "name": "1"}  # shared is not a cycle


def test_tensors_give_shape_dtype_device_and_small_values() -> None:
    torch = pytest.importorskip("torch")  # its CPU wheel is on this machine for 3.11 only
    small, large = torch.arange(4.0), torch.zeros(64, 64)

    s, la = (read_value(v, Bounds()) for v in (small, large))

    assert (s["shape"], s["dtype"], s["device"], s["values"]) == (
        [4], "torch.float32", "cpu", "[0.0, 1.0, 2.0, 3.0]"
    )  # fmt: skip
    assert la["shape"] == [64, 64] and "values" not in la and "not read" in la["cut"]


def test_arrays_give_shape_dtype_and_small_values() -> None:
    small, large = numpy.arange(6).reshape(2, 3), numpy.zeros((64, 64))

    a, la = (read_value(v, Bounds()) for v in (small, large))

    assert (a["shape"], a["dtype"], a["values"]) == ([2, 3], "int64", "[[0, 1, 2], [3, 4, 5]]")
    assert la["shape"] == [64, 64] and "values" not in la and "not read" in la["cut"]


def test_secret_names_are_redacted_at_every_level() -> None:
    def frame_kept() -> Any:
        api_token = "s3cr3t"  # noqa: F841 (read from the frame)
        settings = {"password": "hunter2", "user": "me"}  # noqa: F841
        return sys._getframe()

    frames, _ = read_frames(frame_kept(), Bounds())
    local = {v["name"]: v for v in frames[0]["locals"]}

    assert local["api_token"]["value"] == REDACTED
    assert child(local["settings"], "password")["value"] == REDACTED
    assert child(local["settings"], "user")["value"] == "'me'"
    values = json.dumps([f.get("locals") for f in frames])  # the source is the code, as written
    assert "s3cr3t" not in values and "hunter2" not in values


class Shade(enum.Enum):
    AWS_SECRET_ACCESS_KEY = 1


class Meta(type):
    def __eq__(cls, other: object) -> bool:
        CALLED.append("metaclass eq")
        return False

    __hash__ = type.__hash__


class Compared(metaclass=Meta):
    """A key whose class compares by running code."""


SECRET_TEXTS = {
    "header": "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload",
    "url": "postgres://admin:hunter2@db.internal:5432/x",
    "aws": "AKIAABCDEFGHIJKLMNOP",
    "hf": "hf_" + "a1B2" * 9,
    "openai": "sk-" + "x" * 24,
    "github": "ghp_" + "A" * 36,
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIE...",
}


def test_secrets_are_found_under_keys_of_any_type_and_in_values() -> None:
    """Found on main: a key that is not a plain ``str`` was shown as ``<bytes>`` and its value
    never checked, a key was cut before it was checked, and values were never looked at."""
    settings: dict[Any, Any] = {
        b"HF_TOKEN": "bytes-key", ("aws", "secret"): "tuple-key", LyingStr("db_password"): "sub",
        Shade.AWS_SECRET_ACCESS_KEY: "enum-key", "x" * 300 + "_token": "long-key",
        Compared(): "meta", "user": "me", **SECRET_TEXTS,
    }  # fmt: skip
    node = read_value(settings, Bounds(items=100))
    shown = json.dumps(node)
    for leaked in ("bytes-key", "tuple-key", "sub", "enum-key", "long-key", *SECRET_TEXTS.values()):
        assert leaked not in shown, leaked
    assert "'me'" in shown and "'meta'" in shown  # what is no secret stays
    [member] = [c for c in node["children"] if c["name"].endswith("Shade.AWS_SECRET_ACCESS_KEY")]
    assert member["value"] == REDACTED


def test_the_environment_is_redacted_whole() -> None:
    """``os.environ`` is read as an object whose ``_data`` holds bytes keys: every variable, an
    ``HF_TOKEN`` among them, showed under any local name."""
    os.environ["RAYDAP_TEST_ENV_SECRET"] = "plain-value-of-a-secret"
    try:
        for mapping in (os.environ, os.environb):
            node = read_value({"env": mapping}, Bounds())
            assert child(node, "env")["value"] == REDACTED
            assert "plain-value-of-a-secret" not in json.dumps(node)
    finally:
        del os.environ["RAYDAP_TEST_ENV_SECRET"]


def test_a_project_adds_its_own_patterns() -> None:
    redactor = Redactor().with_patterns(["name:*ssn*", r"value:\bEMP-[0-9]{6}\b"])
    node = read_value({"user_ssn": "123", "badge": "EMP-123456", "n": 1}, Bounds(redactor=redactor))
    assert (
        child(node, "user_ssn")["value"] == REDACTED and child(node, "badge")["value"] == REDACTED
    )
    assert child(node, "n")["value"] == "1"
    with pytest.raises(BadPattern, match="name:GLOB or value:REGEX"):
        Redactor().with_patterns(["ssn"])
    assert Redactor.from_settings(redactor.settings()) == redactor  # as a point carries it


def test_a_loaders_get_source_is_never_called(tmp_path: Any) -> None:
    class Loader:
        def get_source(self, name: str) -> str:
            CALLED.append("get_source")
            return "x = 1\n"

    path = str(tmp_path / "not_on_disk.py")
    linecache.lazycache(path, {"__name__": "m", "__loader__": Loader()})
    code = compile("def f():\n    import sys\n    return sys._getframe()\n", path, "exec")
    namespace: dict[str, Any] = {"__loader__": Loader(), "__name__": "m"}
    exec(code, namespace)
    frames, _ = read_frames(namespace["f"](), Bounds())
    assert frames[0]["path"] == path and frames[0]["source"]["lines"] == []
    linecache.cache.pop(path, None)


def test_tensors_that_cannot_give_their_values_keep_the_capture() -> None:
    """Found on main: these lost the whole capture, silently."""
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():  # each kind is a prototype or deprecated: as users have it
        warnings.simplefilter("ignore")
        nested = torch.nested.nested_tensor([torch.arange(2.0), torch.arange(3.0)])
        quantized = torch.quantize_per_tensor(torch.arange(4.0), 0.1, 0, torch.quint8)
        csr = torch.arange(4.0).reshape(2, 2).to_sparse_csr()
    coo = torch.arange(4.0).reshape(2, 2).to_sparse()

    def frame_kept() -> Any:
        values = [nested, quantized, csr, coo]  # noqa: F841 (read from the frame)
        return sys._getframe()

    frames, _ = read_frames(frame_kept(), Bounds())
    [listed] = [v for v in frames[0]["locals"] if v["name"] == "values"]
    cuts = [c["cut"] for c in listed["children"]]
    assert cuts == ["a nested tensor's values are not read",
                    "values of a quantized tensor are not read",
                    "values of a sparse_csr tensor are not read",
                    "values of a sparse_coo tensor are not read"]  # fmt: skip


def test_frames_carry_their_source_and_locals_only_at_the_top() -> None:
    def inner(depth: int) -> Any:
        return sys._getframe() if depth == 0 else inner(depth - 1)

    frames, cut = read_frames(inner(8), Bounds(frames=6, frames_with_locals=2))

    assert len(frames) == 6 and cut is True
    assert [("locals" in f) for f in frames] == [True, True, False, False, False, False]
    source = frames[0]["source"]
    assert "return sys._getframe()" in source["lines"][frames[0]["line"] - source["first"]]
    assert isinstance(read_value(OrderedDict(a=1), Bounds())["children"], list)
