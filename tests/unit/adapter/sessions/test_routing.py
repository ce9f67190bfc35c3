"""Which worker a request is for, from plain ids: no socket (routing never reads a worker's
connection, so the workers here have none)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from raydap.adapter.errors import Kind
from raydap.adapter.sessions.paths import PathMapper
from raydap.adapter.sessions.routing import RoutingError, route
from raydap.adapter.sessions.translate import Translation
from raydap.adapter.sessions.workers import Worker
from raydap.adapter.upstream.connection import Upstream
from raydap.protocol import Request


def worker(key: str) -> Worker:
    return Worker(key=key, upstream=cast(Upstream, None))


def ask(command: str, **arguments: Any) -> Request:
    return Request(command=command, arguments=arguments)


def test_a_request_goes_to_the_worker_whose_id_it_names() -> None:
    ids = Translation(PathMapper.from_attach({}))
    workers = {key: worker(key) for key in ("w1", "w2")}
    for key in workers:  # both number their frame 1
        ids.to_client(key, {"stackFrames": [{"id": 1}]})
    assert route(ask("scopes", frameId=2), workers, ids) is workers["w2"]
    assert route(ask("scopes", frameId=1), workers, ids) is workers["w1"]


def test_one_worker_takes_what_names_no_worker_and_two_refuse_it() -> None:
    ids = Translation(PathMapper.from_attach({}))
    alone = {"w1": worker("w1")}
    assert route(ask("loadedSources"), alone, ids) is alone["w1"]
    with pytest.raises(RoutingError, match="select a stack frame"):
        route(ask("loadedSources"), {**alone, "w2": worker("w2")}, ids)
    with pytest.raises(RoutingError, match="no paused worker"):
        route(ask("loadedSources"), {}, ids)


def test_an_id_of_a_worker_gone_or_not_an_integer_is_said_so() -> None:
    ids = Translation(PathMapper.from_attach({}))
    ids.to_client("w1", {"stackFrames": [{"id": 1}]})
    workers = {"w2": worker("w2"), "w3": worker("w3")}
    with pytest.raises(RoutingError, match="resumed or left") as gone:
        route(ask("scopes", frameId=1), workers, ids)
    assert gone.value.kind is Kind.NOT_FOUND
    with pytest.raises(RoutingError, match="frameId must be an integer"):
        route(ask("scopes", frameId="1"), workers, ids)
    with pytest.raises(RoutingError, match="frameId must be an integer"):
        route(ask("scopes", frameId=True), workers, ids)
