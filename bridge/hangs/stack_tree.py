"""Many ranks' stacks as one tree, as parallel debuggers show a job (sans-I/O): identical
paths of many workers collapse into one branch with the list of its workers, and where they
diverge the tree branches. The root's children are the outermost frames."""

from __future__ import annotations

from pydantic import BaseModel, Field

from raydap.bridge.cluster.pyspy import Frame

#: Stacks deeper than this are cut at the outermost end (the frames nearest the stop stay).
MAX_FRAMES = 200


class StackNode(BaseModel):
    function: str
    path: str
    line: int
    workers: list[str] = Field(default_factory=list)
    children: list[StackNode] = Field(default_factory=list)
    #: Each worker's locals in this frame, where they were read: ``{worker: {name: repr}}``.
    locals: dict[str, dict[str, str]] | None = None


def _same_place(node: StackNode, frame: Frame) -> bool:
    """Python frames are the same where file and line are; native ones (line 0) where
    library and function are."""
    if frame.line:
        return (node.path, node.line) == (frame.path, frame.line)
    return (node.path, node.line, node.function) == (frame.path, 0, frame.function)


def merge(stacks: dict[str, list[Frame]]) -> StackNode:
    """One tree of many stacks, each given innermost frame first (as DAP reports them).
    debugpy names a method ``step`` and py-spy ``Worker.step``: the fuller name is kept."""
    root = StackNode(function="", path="", line=0)
    for worker, frames in stacks.items():
        root.workers.append(worker)
        node = root
        for frame in reversed(frames[:MAX_FRAMES]):
            child = next((c for c in node.children if _same_place(c, frame)), None)
            if child is None:
                child = StackNode(function=frame.function, path=frame.path, line=frame.line)
                node.children.append(child)
            elif len(frame.function) > len(child.function):
                child.function = frame.function
            child.workers.append(worker)
            if frame.locals is not None:
                if child.locals is None:
                    child.locals = {}
                child.locals[worker] = frame.locals  # (a tree of its own: built here, in place)
            node = child
    _order(root)
    return root


def _order(node: StackNode) -> None:
    """Largest groups first, so the common path reads top to bottom."""
    node.children.sort(key=lambda c: (-len(c.workers), c.path, c.line))
    for child in node.children:
        _order(child)


_POST_MORTEM = " (Current frame)"


def innermost_first(frames: list[Frame]) -> list[Frame]:
    """A stack innermost frame first. At a post-mortem stop debugpy lists the frame that
    caught the exception (named ``... (Current frame)``) and then the traceback, outermost
    first: turned round here, so the frame that raised is innermost, as everywhere else."""
    if not frames or not frames[0].function.endswith(_POST_MORTEM):
        return frames
    caught = frames[0].model_copy(
        update={"function": frames[0].function.removesuffix(_POST_MORTEM)}
    )
    return [*reversed(frames[1:]), caught]
