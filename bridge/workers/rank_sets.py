"""Rank sets: ranks named as people think of them, in one language the bridge alone parses.

Clients send the text; this parses it once and matches ranks against it (sans-I/O). The forms:

- ranks: ``0-3,8`` (a range includes both ends);
- a device-mesh coordinate: ``pp=1``, ``tp=0:2`` (a slice, as Python's: 0 and 1), ``dp=(1,3)``;
- a process group by its description and one rank in it: ``group=mesh_tp:5`` (the tp group that
  holds rank 5);
- a role: ``actor`` (verl's ``actor``, ``critic``, ...), or ``role=actor``.

Inside one term, ``,`` is a union (``0-3,8``, ``actor,critic``); terms apart by a space or ``;``
intersect (``pp=1 tp=0``). A rank is matched by what is known of it (:class:`RankFacts`): a
term about something unknown of a rank (its coordinates before its mesh is known) does not
match it.
"""

from __future__ import annotations

import re
from collections.abc import Container, Mapping
from dataclasses import dataclass, field

#: The longest text, the most atoms, and the largest number a rank set may hold.
MAX_TEXT = 1000
MAX_ATOMS = 256
MAX_NUMBER = 10_000_000

SYNTAX = (
    "a rank set is terms apart by spaces or ';' (all must hold), each a ','-separated union "
    "of: ranks 0-3,8; a mesh coordinate pp=1, tp=0:2 (a slice) or dp=(1,3); a group by its "
    "description and one of its ranks group=mesh_tp:5; a role actor (or role=actor)"
)

#: A dimension, group description or role as a rank set writes it.
NAME = r"[A-Za-z_][A-Za-z0-9_.\-]{0,63}"
_RANKS = re.compile(r"(\d+)(?:-(\d+))?")
_GROUP = re.compile(rf"group=({NAME}):(\d+)")
_COORD = re.compile(rf"({NAME})=(\(\s*\d+(?:\s*,\s*\d+)*\s*\)|\d*:\d*|\d+)")
_ROLE = re.compile(rf"(?:role=)?({NAME})")


class RankSetError(ValueError):
    """Text that is not a rank set; the message says where, and what one looks like."""


@dataclass(frozen=True)
class RankFacts:
    """What is known of one rank: its global number, its role, its coordinate along each
    mesh dimension, and the global ranks of each of its process groups by description."""

    rank: int | None = None
    role: str | None = None
    coords: Mapping[str, int] = field(default_factory=dict)
    groups: Mapping[str, Container[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranks:
    low: int
    high: int

    def matches(self, facts: RankFacts) -> bool:
        return facts.rank is not None and self.low <= facts.rank <= self.high


@dataclass(frozen=True)
class Coordinate:
    """``dim`` in ``values``, or in ``[start, stop)`` where ``values`` is None (a slice)."""

    dim: str
    values: frozenset[int] | None = None
    start: int = 0
    stop: int | None = None

    def matches(self, facts: RankFacts) -> bool:
        at = facts.coords.get(self.dim)
        if at is None:
            return False
        if self.values is not None:
            return at in self.values
        return self.start <= at and (self.stop is None or at < self.stop)


@dataclass(frozen=True)
class GroupOf:
    """The rank is in the group of this description that holds ``member``."""

    desc: str
    member: int

    def matches(self, facts: RankFacts) -> bool:
        return self.member in facts.groups.get(self.desc, frozenset())


@dataclass(frozen=True)
class Role:
    name: str

    def matches(self, facts: RankFacts) -> bool:
        return facts.role == self.name


Atom = Ranks | Coordinate | GroupOf | Role


@dataclass(frozen=True)
class RankSet:
    """Terms that must all hold, each a union of atoms."""

    terms: tuple[tuple[Atom, ...], ...]
    text: str

    def matches(self, facts: RankFacts) -> bool:
        for term in self.terms:  # loops, not all(any(...)): ten thousand ranks a command
            for atom in term:
                if atom.matches(facts):
                    break
            else:
                return False
        return True


def parse(text: str) -> RankSet:
    """The rank set ``text`` says; :class:`RankSetError` saying where it is not one."""
    if not isinstance(text, str) or not text.strip():
        raise RankSetError(f"an empty rank set: {SYNTAX}")
    if len(text) > MAX_TEXT:
        raise RankSetError(f"a rank set is at most {MAX_TEXT} characters")
    terms = [_term(t) for t in _split_terms(text)]
    if sum(map(len, terms)) > MAX_ATOMS:
        raise RankSetError(f"a rank set names at most {MAX_ATOMS} ranges, coordinates or roles")
    return RankSet(tuple(terms), text.strip())


def _split_terms(text: str) -> list[str]:
    """Terms apart by spaces or ';', leaving the spaces inside ``(...)`` alone."""
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0 or depth > 1:
            raise RankSetError(f"unbalanced parentheses in {text!r}: {SYNTAX}")
        if depth == 0 and (char.isspace() or char == ";"):
            if current:
                terms.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise RankSetError(f"unbalanced parentheses in {text!r}: {SYNTAX}")
    return [*terms, current] if current else terms


def _term(text: str) -> tuple[Atom, ...]:
    atoms: list[Atom] = []
    for part in _split_union(text):
        atoms.append(_atom(part))
    return tuple(atoms)


def _split_union(text: str) -> list[str]:
    """A term's atoms apart by ',' (not those inside ``(...)``: ``dp=(1,3)`` is one)."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    if any(not p.strip() for p in parts):
        raise RankSetError(f"an empty item in {text!r}: {SYNTAX}")
    return [p.strip() for p in parts]


def _atom(text: str) -> Atom:
    if found := _RANKS.fullmatch(text):
        low = _number(found[1])
        high = _number(found[2]) if found[2] is not None else low
        if high < low:
            raise RankSetError(f"{text!r}: a range goes up ({high}-{low}?)")
        return Ranks(low, high)
    if found := _GROUP.fullmatch(text):
        return GroupOf(found[1], _number(found[2]))
    if found := _COORD.fullmatch(text):
        dim, value = found[1], found[2]
        if dim == "role":
            raise RankSetError(f"{text!r}: a role is a name ({SYNTAX})")
        if value.startswith("("):
            return Coordinate(dim, frozenset(_number(v) for v in value.strip("()").split(",")))
        if ":" in value:
            start, stop = value.split(":")
            return Coordinate(
                dim, None, _number(start) if start else 0, _number(stop) if stop else None
            )
        return Coordinate(dim, frozenset({_number(value)}))
    if found := _ROLE.fullmatch(text):
        return Role(found[1])
    raise RankSetError(f"{text!r} is not a rank set item: {SYNTAX}")


def _number(text: str) -> int:
    value = int(text.strip())
    if value > MAX_NUMBER:
        raise RankSetError(f"{value} is over {MAX_NUMBER:,}")
    return value
