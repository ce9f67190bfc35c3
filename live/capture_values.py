"""Reading a running frame's values without running anything of the program.

A capture is taken on the worker's own thread, in the middle of its work, so reading must never
call the program back: no ``__repr__``, no property, no ``__getattr__``, no ``__iter__`` of a
class of its own, which could sleep, raise, take a lock or recurse. Values are read from their
structure instead: builtin scalars by their builtin repr, containers through the builtin type's
own C methods (a subclass's overrides are never called), an object's attributes through the
C descriptors of its ``__dict__`` and ``__slots__`` found on its class. Tensors and arrays give
their shape, dtype and device, and their values only when small and in CPU memory: a capture
never synchronizes a GPU or copies device memory.

Every bound (:class:`Bounds`) cuts where it is reached and says so in the value (``cut``), so a
reader can tell a short list from a list shown short. Secrets are redacted as they are read
(:mod:`.redact`: by name, whatever a key's type, by value, and the environment whole), and a
value that cannot be read is shown as its type with the reason: the capture is never lost.
"""

from __future__ import annotations

import dataclasses
import itertools
import linecache
import os
import sys
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from raydap.live.redact import DEFAULT, REDACTED, Redactor

#: A value as captured: ``type`` and ``value`` (a display string), ``children`` (each a value
#: with its ``name``), ``cut`` (why it or its children stop short) and, for tensors and arrays,
#: ``shape``, ``dtype``, ``device``.
Node = dict[str, Any]

__all__ = ["REDACTED", "Bounds", "read_frames", "read_traceback", "read_value"]
_SCALARS = (type(None), bool, int, float, complex)
#: The scalar types by id: found without comparing classes (a metaclass's ``__eq__`` is code).
_SCALAR_IDS: dict[int, type] = {id(t): t for t in _SCALARS}
_CALLABLES = (
    types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.ModuleType,
    types.CodeType, types.FrameType, types.TracebackType,
)  # fmt: skip
_SMALL_ARRAY = 16
#: How far past what is shown of a text a secret is looked for: one that starts in the shown
#: part and runs on is found whole (the longest shape is under 64 characters; what is never
#: shown cannot leak).
_SECRET_SPILL = 64
#: Locals pydevd puts in a frame at a post-mortem stop (the exception it stopped on).
_DEBUGGER_LOCALS = frozenset({"__exception__"})
#: Class names already read (see :func:`_type_name`), bounded.
_TYPE_NAMES: dict[type, str] = {}
_MOST_TYPE_NAMES = 1024
#: Roughly what a value's JSON takes beside its strings: ``{"name": , "type": , "value": }``.
_NODE_OVERHEAD = 40


@dataclass(frozen=True)
class Bounds:
    """How much one capture takes (the defaults are Cloud Debugger's, which ran in production
    for years: 20 frames, locals in the top 5, 256 characters a value, 25 items)."""

    frames: int = 20
    frames_with_locals: int = 5
    depth: int = 3
    #: How deep the locals of the frames that called it are read: a capture is about the
    #: point's own frame, and its callers' objects (a Ray worker's ``self``) cost most.
    outer_depth: int = 1
    items: int = 25
    chars: int = 256
    #: Roughly the capture's JSON size: values past it are cut.
    bytes: int = 32 * 1024
    #: Source lines kept around each frame with locals, before and after its line.
    context_lines: int = 8
    #: Which names and values are secrets (the bridge's ``--redact`` patterns, sent with the
    #: capture point).
    redactor: Redactor = DEFAULT


@dataclass
class _Budget:
    left: int
    cut: bool = False
    seen: set[int] = field(default_factory=set)

    def take(self, size: int) -> bool:
        if self.left <= 0:
            self.cut = True
            return False
        self.left -= size
        return True


def read_frames(frame: types.FrameType | None, bounds: Bounds) -> tuple[list[Node], bool]:
    """The stack from ``frame`` outwards: ``(frames, cut)``, each frame with its function,
    path, line, source lines around it and, in the innermost ones, its locals."""
    return _read_stack(_outwards(frame), bounds)


def read_traceback(
    traceback: types.TracebackType | None, bounds: Bounds
) -> tuple[list[Node], bool]:
    """The frames an exception went through, the raising one first, then the callers of the
    outermost one (still running: the handler that caught it)."""
    passed: list[tuple[types.FrameType, int]] = []
    while traceback is not None:
        passed.append((traceback.tb_frame, traceback.tb_lineno))
        traceback = traceback.tb_next
    outer = _outwards(passed[0][0].f_back) if passed else iter(())
    return _read_stack(itertools.chain(reversed(passed), outer), bounds)


def _outwards(frame: types.FrameType | None) -> Iterator[tuple[types.FrameType, int]]:
    while frame is not None:
        yield frame, frame.f_lineno
        frame = frame.f_back


def _read_stack(
    stack: Iterable[tuple[types.FrameType, int]], bounds: Bounds
) -> tuple[list[Node], bool]:
    budget = _Budget(bounds.bytes)
    outer = dataclasses.replace(bounds, depth=min(bounds.depth, bounds.outer_depth))
    frames: list[Node] = []
    for frame, line in stack:
        if len(frames) == bounds.frames:
            return frames, True
        code = frame.f_code
        entry: Node = {
            "function": getattr(code, "co_qualname", code.co_name),
            "path": code.co_filename,
            "line": line,
        }
        if len(frames) < bounds.frames_with_locals:
            entry["source"] = _source(code.co_filename, line, bounds)
            if code.co_name == "<module>" and frames:  # an outer module's globals: hundreds
                entry["cut"] = "a module's globals are not captured"
            else:
                entry["locals"] = _locals(frame, outer if frames else bounds, budget)
        frames.append(entry)
    return frames, budget.cut


def read_value(value: object, bounds: Bounds) -> Node:
    """One value, under ``bounds`` (its own byte budget)."""
    return _read(value, bounds, _Budget(bounds.bytes), 0)


def _locals(frame: types.FrameType, bounds: Bounds, budget: _Budget) -> list[Node]:
    named: list[Node] = []
    values = {k: v for k, v in dict(frame.f_locals).items() if k not in _DEBUGGER_LOCALS}
    for name, value in values.items():
        if not budget.take(len(name) + _NODE_OVERHEAD):
            left = len(values) - len(named)
            named.append({"name": "...", "type": "", "value": "", "cut": f"{left} more locals"})
            break
        named.append(_named(name, value, bounds, budget, 0))
    return named


def _named(name: str, value: object, bounds: Bounds, budget: _Budget, depth: int) -> Node:
    """A value under its name: the whole name decides whether it is a secret, then it is cut
    for showing. A value that cannot be read is its type and why, never a lost capture."""
    if bounds.redactor.secret_name(name):
        node: Node = {"type": _type_name(type(value)), "value": REDACTED, "cut": "redacted"}
    else:
        try:
            node = _read(value, bounds, budget, depth)  # a new dict: named in place
        except Exception as exc:  # a value of a kind the reader does not know how to read
            kind = _type_name(type(value))
            node = {"type": kind, "value": f"<{kind}>", "cut": f"not read: {_type_name(type(exc))}"}
    node["name"] = name if len(name) <= bounds.chars else name[: bounds.chars]
    return node


def _read(value: object, bounds: Bounds, budget: _Budget, depth: int) -> Node:
    kind = type(value)
    if issubclass(kind, _SCALARS):
        return _scalar(value, kind, bounds, budget)
    if issubclass(kind, (str, bytes, bytearray)):
        return _text(value, kind, bounds, budget)
    if (array := _array(value, kind, bounds)) is not None:
        budget.take(len(str(array)) + _NODE_OVERHEAD)
        return array
    if issubclass(kind, _CALLABLES) or issubclass(kind, type):
        shown = _callable_name(value, kind)
        budget.take(len(shown) + _NODE_OVERHEAD)
        return {"type": _type_name(kind), "value": shown}
    if id(value) in budget.seen:
        return {"type": _type_name(kind), "value": "<seen above>", "cut": "cycle"}
    budget.seen.add(id(value))
    try:
        return _composite(value, kind, bounds, budget, depth)
    finally:
        budget.seen.discard(id(value))


def _scalar(value: Any, kind: type, bounds: Bounds, budget: _Budget) -> Node:
    base = _SCALAR_IDS.get(id(kind)) or next(t for t in _SCALARS if issubclass(kind, t))
    if base is int and not issubclass(kind, bool) and int.bit_length(value) > 4000:
        shown, cut = f"an int of {int.bit_length(value)} bits", "too long"
    else:
        builtin_repr: Any = base.__repr__
        shown, cut = builtin_repr(value), None
        if len(shown) > bounds.chars:
            shown, cut = shown[: bounds.chars], "too long"
    budget.take(len(shown))
    node: Node = {"type": _type_name(kind), "value": shown}
    return node if cut is None else {**node, "cut": cut}


def _text(value: Any, kind: type, bounds: Bounds, budget: _Budget) -> Node:
    """A string or bytes, through the builtin type (a subclass's ``__str__`` is not called);
    one whose text holds a secret (a bearer token, a key) is redacted."""
    head: str | bytes
    if issubclass(kind, str):
        text = str.__str__(value)
        length, head = len(text), text[: bounds.chars]
        searched = text[: bounds.chars + _SECRET_SPILL]
    else:
        base: Any = bytes if issubclass(kind, bytes) else bytearray
        length, head = base.__len__(value), bytes(base.__getitem__(value, slice(0, bounds.chars)))
        spilled = bytes(base.__getitem__(value, slice(0, bounds.chars + _SECRET_SPILL)))
        searched = spilled.decode("latin-1")
    if bounds.redactor.secret_value(searched):
        return {"type": _type_name(kind), "value": REDACTED, "cut": "redacted"}
    shown = repr(head)
    budget.take(len(shown))
    node: Node = {"type": _type_name(kind), "value": shown}
    if length > bounds.chars:
        node["cut"] = f"{length - bounds.chars} more characters"
    return node


def _composite(value: Any, kind: type, bounds: Bounds, budget: _Budget, depth: int) -> Node:
    items, length = _items(value, kind, bounds)
    if items is None:
        return _object(value, kind, bounds, budget, depth)
    node: Node = {"type": _type_name(kind), "value": f"{_type_name(kind)} of {length}"}
    budget.take(len(node["value"]))
    if depth >= bounds.depth:
        return {**node, "cut": "depth"} if length else node
    children = []
    for name, item in items:
        if not budget.take(len(name) + _NODE_OVERHEAD):
            node["cut"] = "capture size"
            break
        children.append(_named(name, item, bounds, budget, depth + 1))
    node["children"] = children
    if length > len(children) and "cut" not in node:
        node["cut"] = f"{length - len(children)} more items"
    return node


def _items(value: Any, kind: type, bounds: Bounds) -> tuple[list[tuple[str, Any]] | None, int]:
    """Up to ``bounds.items`` (name, item) pairs of a builtin container, through the builtin
    type's methods; ``None`` for anything else."""
    limit = bounds.items
    if issubclass(kind, dict):
        pairs: list[tuple[str, Any]] = []
        for key, item in dict.items(value):
            if len(pairs) == limit:
                break
            pairs.append((_key_name(key), item))
        return pairs, dict.__len__(value)
    sequence: Any
    for sequence in (list, tuple):
        if issubclass(kind, sequence):
            length = sequence.__len__(value)
            shown = min(limit, length)
            return [(str(i), sequence.__getitem__(value, i)) for i in range(shown)], length
    for unordered in (set, frozenset):
        if issubclass(kind, unordered):
            found: list[tuple[str, Any]] = []
            for item in unordered.__iter__(value):
                if len(found) == limit:
                    break
                found.append((str(len(found)), item))
            return found, unordered.__len__(value)
    return None, 0


def _key_name(key: Any, nested: int = 0) -> str:
    """A dict key as a name, whatever its type, read as :func:`_read` reads values (a ``str``
    subclass, bytes, a tuple of names, an enum's member name): secrets are found by it. Classes
    are told apart by identity and ``issubclass``: comparing them would run a metaclass."""
    kind = type(key)
    if issubclass(kind, str):
        return str.__str__(key)
    if issubclass(kind, (bytes, bytearray)):
        base: Any = bytes if issubclass(kind, bytes) else bytearray
        return repr(bytes(base.__getitem__(key, slice(0, 4096))))
    if issubclass(kind, _SCALARS):
        scalar: Any = _SCALAR_IDS.get(id(kind)) or next(t for t in _SCALARS if issubclass(kind, t))
        return str(scalar.__repr__(key))
    if issubclass(kind, tuple) and nested < 3:
        items: Any = tuple.__getitem__(key, slice(0, 8))
        return "(" + ", ".join(_key_name(item, nested + 1) for item in items) + ")"
    member = dict(_attributes(key, kind)).get("_name_")  # an enum member
    if type(member) is str:
        return f"{_type_name(kind)}.{member}"
    return f"<{_type_name(kind)}>"


def _object(value: Any, kind: type, bounds: Bounds, budget: _Budget, depth: int) -> Node:
    """An instance of a class of the program: its attributes, read through the C descriptors
    on its class (a ``__dict__`` or ``__slots__`` the class replaced is not read)."""
    if _is_environment(kind):
        return {"type": _type_name(kind), "value": REDACTED, "cut": "redacted: the environment"}
    node: Node = {"type": _type_name(kind), "value": f"<{_type_name(kind)} object>"}
    budget.take(len(node["value"]))
    attributes = _attributes(value, kind)
    if not attributes:
        return node
    if depth >= bounds.depth:
        return {**node, "cut": "depth"}
    children = []
    for name, item in attributes[: bounds.items]:
        if not budget.take(len(name) + _NODE_OVERHEAD):
            node["cut"] = "capture size"
            break
        children.append(_named(name, item, bounds, budget, depth + 1))
    node["children"] = children
    if len(attributes) > len(children) and "cut" not in node:
        node["cut"] = f"{len(attributes) - len(children)} more attributes"
    return node


def _attributes(value: Any, kind: type) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    dict_read = False
    for klass in type.__dict__["__mro__"].__get__(kind):
        namespace = type.__dict__["__dict__"].__get__(klass)
        for name, descriptor in namespace.items():
            if name == "__dict__" and type(descriptor) is types.GetSetDescriptorType:
                if dict_read:
                    continue
                dict_read = True
                try:
                    own = descriptor.__get__(value, kind)
                except (AttributeError, TypeError):
                    continue
                if type(own) is dict:
                    found[:0] = [(k, v) for k, v in dict.items(own) if type(k) is str]
            elif type(descriptor) is types.MemberDescriptorType and not name.startswith("__"):
                try:
                    found.append((name, descriptor.__get__(value, kind)))
                except AttributeError:  # a slot never set
                    continue
    return found


def _array(value: Any, kind: type, bounds: Bounds) -> Node | None:
    """A torch tensor or numpy array: shape, dtype, device, and small CPU values."""
    torch = sys.modules.get("torch")
    if torch is not None and issubclass(kind, torch.Tensor):
        try:
            return _tensor(value, kind, torch, bounds)
        except Exception as exc:  # a kind of tensor that cannot say what it holds
            return {"type": _type_name(kind), "value": f"<{_type_name(kind)}>",
                    "cut": f"not read: {_type_name(type(exc))}"}  # fmt: skip
    numpy = sys.modules.get("numpy")
    if numpy is not None and kind is numpy.ndarray:
        node = {"type": "numpy.ndarray", "shape": list(value.shape), "dtype": str(value.dtype),
                "device": "cpu", "value": f"ndarray{tuple(value.shape)} {value.dtype}"}  # fmt: skip
        if value.size <= _SMALL_ARRAY and value.dtype.kind in "biufc":
            node["values"] = _cut_text(repr(value.tolist()), bounds)
        elif value.size:
            node["cut"] = "values of a large array are not read"
        return node
    return None


def _tensor(value: Any, kind: type, torch: Any, bounds: Bounds) -> Node:
    if kind is not torch.Tensor and kind is not torch.nn.Parameter:
        # A subclass (DTensor, a wrapper) runs Python of its own on every access.
        return {
            "type": _type_name(kind),
            "value": f"<{_type_name(kind)}>",
            "cut": "a tensor subclass is not read",
        }
    if value.is_nested:  # its sizes differ per item: it has no one shape
        return {
            "type": _type_name(kind),
            "value": "nested tensor",
            "dtype": str(value.dtype),
            "device": str(value.device),
            "cut": "a nested tensor's values are not read",
        }
    shape, dtype, device = list(value.shape), str(value.dtype), str(value.device)
    node: Node = {
        "type": _type_name(kind), "shape": shape, "dtype": dtype, "device": device,
        "value": f"tensor{tuple(shape)} {dtype.removeprefix('torch.')} on {device}",
    }  # fmt: skip
    if not value.numel():
        return node
    if value.layout is not torch.strided:
        node["cut"] = f"values of a {str(value.layout).removeprefix('torch.')} tensor are not read"
    elif value.is_quantized:
        node["cut"] = "values of a quantized tensor are not read"
    elif value.device.type != "cpu" or value.numel() > _SMALL_ARRAY:
        node["cut"] = "values of a large or device tensor are not read"
    else:
        node["values"] = _cut_text(repr(value.detach().tolist()), bounds)
    return node


def _cut_text(text: str, bounds: Bounds) -> str:
    return text if len(text) <= bounds.chars else text[: bounds.chars] + "..."


def _callable_name(value: Any, kind: type) -> str:
    if issubclass(kind, type):
        return f"<class {_type_name(value)}>"
    if kind is types.ModuleType:
        return f"<module {_module_name(value)}>"
    target, target_kind = value, kind
    if kind is types.MethodType:
        target = types.MethodType.__dict__["__func__"].__get__(value, kind)
        target_kind = type(target)
    if target_kind in (types.FunctionType, types.BuiltinFunctionType):
        qualname = target_kind.__dict__["__qualname__"].__get__(target, target_kind)
        return f"<{_type_name(kind)} {qualname}>"
    return f"<{_type_name(kind)}>"


def _module_name(module: types.ModuleType) -> str:
    descriptor: Any = vars(types.ModuleType)["__dict__"]
    namespace = descriptor.__get__(module, types.ModuleType)
    name = dict.get(namespace, "__name__") if type(namespace) is dict else None
    return name if type(name) is str else "?"


def _type_name(kind: type) -> str:
    # Named once per class of no metaclass of its own (hashing one runs no program code): a
    # capture names the same few classes hundreds of times.
    plain = type(kind) is type
    if plain and (known := _TYPE_NAMES.get(kind)) is not None:
        return known
    module = type.__dict__["__module__"].__get__(kind)
    qualname = type.__dict__["__qualname__"].__get__(kind)
    if type(module) is not str or module == "builtins":
        name = str(qualname) if type(qualname) is str else "?"
    else:
        name = f"{module}.{qualname}" if type(qualname) is str else module
    if plain:
        if len(_TYPE_NAMES) >= _MOST_TYPE_NAMES:
            _TYPE_NAMES.clear()
        _TYPE_NAMES[kind] = name
    return name


def _is_environment(kind: type) -> bool:
    """``os.environ``, ``os.environb`` or a subclass: redacted whole (every secret a job was
    given is in it, under its own variables' names). By identity along the class's own MRO."""
    if type(kind) is type:  # os._Environ's metaclass is ABCMeta, and so is each subclass's
        return False
    mro = type.__dict__["__mro__"].__get__(kind)
    return any(klass is os._Environ for klass in mro)


def _source(path: str, line: int, bounds: Bounds) -> Node:
    """The lines around ``line``, so the capture shows its code after the worker is gone. Read
    from the file (or linecache's copy of it), never through a module's loader: a loader's
    ``get_source`` is the program's code."""
    cached = linecache.cache.get(path)
    if cached is not None and len(cached) == 1:  # a loader's promise, not lines
        lines = _file_lines(path)
    else:
        lines = linecache.getlines(path)  # no module globals: files only
    first = max(1, line - bounds.context_lines)
    last = min(len(lines), line + bounds.context_lines)
    return {
        "first": first,
        "lines": [text.rstrip("\n")[: bounds.chars * 2] for text in lines[first - 1 : last]],
    }


def _file_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            return file.readlines(8 * 2**20)
    except (OSError, ValueError):
        return []
