import asyncio

from raydap.adapter.upstream.cache import StopCache, answer_for
from raydap.protocol import Response


def stack(count: int) -> Response:
    frames = [{"id": i, "name": f"f{i}", "line": i} for i in range(1, count + 1)]
    body = {"stackFrames": frames, "totalFrames": count}
    return Response(request_seq=1, success=True, command="stackTrace", body=body)


def test_every_stack_slice_shares_one_key() -> None:
    first = StopCache.key("stackTrace", {"threadId": 1, "startFrame": 0, "levels": 1})
    rest = StopCache.key("stackTrace", {"threadId": 1, "startFrame": 1, "levels": 19})
    other = StopCache.key("stackTrace", {"threadId": 2})
    assert first == rest != other
    assert StopCache.upstream_arguments("stackTrace", {"threadId": 1, "levels": 1}) == {
        "threadId": 1
    }


def test_slices_are_cut_from_the_whole_stack_and_are_private_copies() -> None:
    whole = stack(30)
    top = answer_for("stackTrace", {"threadId": 1, "levels": 1}, whole)
    assert [f["id"] for f in top.body["stackFrames"]] == [1]
    assert top.body["totalFrames"] == 30
    rest = answer_for("stackTrace", {"threadId": 1, "startFrame": 1, "levels": 19}, whole)
    assert [f["id"] for f in rest.body["stackFrames"]] == list(range(2, 21))
    rest.body["stackFrames"][0]["id"] = 999  # a caller rewriting ids (the mux does)
    assert whole.body["stackFrames"][1]["id"] == 2


def test_writes_and_repl_drop_variables_but_keep_frames() -> None:
    async def scenario() -> None:
        cache = StopCache()
        loop = asyncio.get_running_loop()
        for command, args in (
            ("stackTrace", {"threadId": 1}),
            ("variables", {"variablesReference": 5}),
        ):
            key = StopCache.key(command, args)
            assert key is not None
            cache.put(key, loop.create_future())
        cache.after_request("evaluate", {"expression": "x", "context": "hover"})
        assert len(cache) == 2  # hovering changes nothing
        cache.after_request("evaluate", {"expression": "x.append(1)", "context": "repl"})
        assert len(cache) == 1
        assert cache.get(StopCache.key("stackTrace", {"threadId": 1})) is not None  # type: ignore[arg-type]
        cache.clear()
        assert len(cache) == 0

    asyncio.run(scenario())


def test_requests_that_act_are_never_cached() -> None:
    for command in ("evaluate", "continue", "setVariable", "next", "setBreakpoints"):
        assert StopCache.key(command, {}) is None
