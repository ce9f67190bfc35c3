"""Stops moved out of Ray's breakpoint hook before anyone sees them (Python 3.12+ without
``raydap.live``; :mod:`.ray_hook` says why, :mod:`.settler` decides): a part of
:class:`~.upstream.Upstream`, which sends what the settler plans."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from raydap.adapter.errors import UpstreamError
from raydap.adapter.ray_hook import DROP_TAGS_STATEMENT, REARM_STATEMENT, Settle
from raydap.adapter.upstream_life import State
from raydap.protocol import Event

if TYPE_CHECKING:
    from raydap.adapter.upstream import Upstream

log = logging.getLogger("raydap.adapter.upstream")


async def settle(upstream: Upstream, message: Event) -> None:
    """Move a stop out of Ray's breakpoint hook before anyone sees it (:mod:`.ray_hook`).

    Nothing is shown until the thread stands in the user's code: a step out of the hook
    is answered by a new ``stopped`` event, which comes back here. Whatever fails, the
    stop is shown where it is."""
    body = message.body if isinstance(message.body, dict) else {}
    thread_id = int(body["threadId"])
    settling = upstream._settler.begin(thread_id, message)
    action, moved = Settle.SHOW, None
    try:
        trace = await upstream._exchange(
            "stackTrace", {"threadId": thread_id, "startFrame": 0, "levels": 2}, None
        )
        frames = (trace.body or {}).get("stackFrames") or [] if trace.success else []
        action = upstream._settler.plan(settling, frames)
        if settling.steps == 0 and upstream.stops_in_ray_hook is None:
            upstream.stops_in_ray_hook = action is not Settle.SHOW
            if upstream.stops_in_ray_hook:  # Python 3.12+, no raydap.live: see ray_hook
                upstream._spawn(drop_pydevd_tags(upstream))
        if action is Settle.STEP:
            upstream._settler.moving(thread_id, settling, action)
            moved = await upstream._exchange("next", {"threadId": thread_id}, None)
        elif action is Settle.REARM:
            rearmed = await upstream._exchange(
                "evaluate",
                {"expression": REARM_STATEMENT, "frameId": frames[0]["id"], "context": "repl"},
                None,
            )
            if not rearmed.success:
                log.warning("%s: cannot show its post-mortem stop: %s", upstream.name,
                            rearmed.message)  # fmt: skip
                action = Settle.SHOW
            else:
                upstream._settler.moving(thread_id, settling, action)
                moved = await upstream._exchange("continue", {"threadId": thread_id}, None)
        if moved is not None and not moved.success:
            upstream._settler.drop(thread_id)
            action = Settle.SHOW
    except UpstreamError as exc:
        upstream._settler.drop(thread_id)
        if upstream.state is State.CLOSED:
            return
        log.warning("%s: showing a stop as it is: %s", upstream.name, exc)
        action = Settle.SHOW
    except Exception:  # a bug here must not hide the stop from everyone
        upstream._settler.drop(thread_id)
        log.exception("%s: showing a stop as it is", upstream.name)
        action = Settle.SHOW
    if action is Settle.SHOW:
        upstream._show_stop(settling.shown or message)


async def drop_pydevd_tags(upstream: Upstream) -> None:
    """Once the worker shows its stop, keep its later exceptions picklable
    (:mod:`.ray_hook`)."""
    await upstream._first_stop.wait()
    try:
        _, frames = await upstream.stack(levels=1)
        answer = await upstream.request(
            "evaluate",
            {"expression": DROP_TAGS_STATEMENT, "frameId": frames[0]["id"], "context": "repl"},
        )
    except UpstreamError as exc:
        answer = None
        log.info("%s: pydevd's exception tags left as they are: %s", upstream.name, exc)
    if answer is not None and not answer.success:
        log.info("%s: pydevd's exception tags left as they are: %s", upstream.name, answer.message)
