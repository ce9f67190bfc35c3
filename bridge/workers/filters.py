"""Which paused workers a group command or a follow session means."""

from __future__ import annotations

import json
from fnmatch import fnmatchcase
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from raydap.bridge.workers.records import BreakpointRecord


class WorkerFilter(BaseModel):
    """Any subset of fields; an empty filter matches every worker."""

    model_config = ConfigDict(extra="forbid")

    job: str | None = Field(default=None, max_length=200, description="job id")
    task: str | None = Field(
        default=None, max_length=500, description="glob on the task name or Actor.method"
    )
    actor: str | None = Field(default=None, max_length=200, description="actor id or class")
    node: str | None = Field(default=None, max_length=200, description="node id prefix or IP")

    def matches(self, record: BreakpointRecord) -> bool:
        if self.job is not None and record.job_id != self.job:
            return False
        if self.task is not None and not fnmatchcase(record.task_name or "", self.task):
            return False
        if self.actor is not None and self.actor not in (record.actor_id, record.actor_class):
            return False
        return self.node is None or (
            record.node_ip == self.node or (record.node_id or "").startswith(self.node)
        )


class BadFilter(ValueError):
    """Text that is not a filter; the message says what one looks like."""


def parse_filter(text: str) -> WorkerFilter:
    """A filter written as text: ``job=02000000,task=train*``, JSON, or empty for every
    worker (command lines, and editors whose configurations hold only strings, as Helix's)."""
    text = text.strip()
    try:
        if text.startswith("{"):
            fields: Any = json.loads(text)
        else:
            fields = dict(part.strip().split("=", 1) for part in text.split(",") if part.strip())
        return WorkerFilter.model_validate(fields)
    except (ValueError, ValidationError):
        raise BadFilter(
            f"{text!r} is not a filter: use job=ID,task=GLOB,actor=ID,node=IP "
            'or JSON such as {"job": "02000000"}'
        ) from None
