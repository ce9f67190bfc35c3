"""Which paused workers a group command or a follow session means."""

from __future__ import annotations

import functools
import json
from fnmatch import fnmatchcase
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from raydap.bridge.workers.rank_sets import MAX_TEXT, RankSet
from raydap.bridge.workers.rank_sets import parse as parse_ranks
from raydap.bridge.workers.records import BreakpointRecord


@functools.lru_cache(maxsize=256)
def rank_set(text: str) -> RankSet:
    """The rank set ``text`` says, parsed once for the many workers a command matches."""
    return parse_ranks(text)


def _a_rank_set(text: str) -> str:
    rank_set(text)  # says what is wrong, and what one looks like
    return text


#: A rank set as every door takes it: its text, checked (docs/rank-sets.md).
RankSetText = Annotated[str, AfterValidator(_a_rank_set), Field(max_length=MAX_TEXT)]


class WorkerFilter(BaseModel):
    """Any subset of fields; an empty filter matches every worker."""

    model_config = ConfigDict(extra="forbid")

    job: str | None = Field(default=None, max_length=200, description="job id")
    task: str | None = Field(
        default=None, max_length=500, description="glob on the task name or Actor.method"
    )
    actor: str | None = Field(default=None, max_length=200, description="actor id or class")
    node: str | None = Field(default=None, max_length=200, description="node id prefix or IP")
    ranks: RankSetText | None = Field(
        default=None,
        description="a rank set: ranks 0-3,8, mesh coordinates tp=1 dp=0:2, a group "
        "group=mesh_tp:5, a role (actor); terms apart by spaces intersect",
    )

    def matches(self, record: BreakpointRecord) -> bool:
        if self.job is not None and record.job_id != self.job:
            return False
        if self.ranks is not None and not rank_set(self.ranks).matches(record.rank_facts()):
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
            fields = dict(part.strip().split("=", 1) for part in _parts(text) if part.strip())
            if "ranks" in fields:  # ranks=[0-3,8] or ranks="0-3,8": its own commas
                fields["ranks"] = fields["ranks"].strip().strip("[]\"'")
        return WorkerFilter.model_validate(fields)
    except (ValueError, ValidationError):
        raise BadFilter(
            f"{text!r} is not a filter: use job=ID,task=GLOB,actor=ID,node=IP,ranks=[0-3,8] "
            'or JSON such as {"job": "02000000", "ranks": "0-3"}'
        ) from None


def _parts(text: str) -> list[str]:
    """``key=value`` parts apart by ',', but not those inside ``[...]`` or quotes."""
    parts, current, closing = [], "", ""
    for char in text:
        if closing:
            closing = "" if char == closing else closing
        elif char in "[\"'":
            closing = {"[": "]"}.get(char, char)
        elif char == ",":
            parts.append(current)
            current = ""
            continue
        current += char
    return [*parts, current]
