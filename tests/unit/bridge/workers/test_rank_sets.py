"""The rank-set language: ranges, coordinates, groups, roles, errors, and the matcher against a
brute-force one over a 2 x 2 x 2 mesh."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raydap.bridge.workers.rank_sets import (
    MAX_TEXT,
    SYNTAX,
    Coordinate,
    GroupOf,
    RankFacts,
    Ranks,
    RankSetError,
    Role,
    parse,
)

DIMS = ("pp", "dp", "tp")


def mesh_rank(rank: int, role: str | None = None) -> RankFacts:
    """Rank ``rank`` of a 2 x 2 x 2 (pp, dp, tp) mesh laid out row-major, as DeviceMesh does,
    with its groups named as torch names them (``mesh_<dim>``)."""
    coords = dict(zip(DIMS, (rank // 4, rank // 2 % 2, rank % 2), strict=True))

    def along(dim: str) -> frozenset[int]:
        return frozenset(r for r in range(8) if all(
            (r // 4, r // 2 % 2, r % 2)[i] == coords[d] for i, d in enumerate(DIMS) if d != dim
        ))  # fmt: skip

    return RankFacts(rank, role, coords, {f"mesh_{d}": along(d) for d in DIMS})


MESH = [mesh_rank(r, "actor" if r < 4 else "critic") for r in range(8)]


def ranks(text: str) -> list[int]:
    chosen = parse(text)
    return [f.rank for f in MESH if chosen.matches(f) and f.rank is not None]


def test_ranges_coordinates_groups_and_roles() -> None:
    assert ranks("0-3,8") == [0, 1, 2, 3]  # a range includes both ends; 8 is no rank here
    assert ranks("tp=1") == [1, 3, 5, 7]
    assert ranks("dp=0 pp=1") == [4, 5]  # terms intersect
    assert ranks("dp=0;pp=1") == [4, 5]
    assert ranks("tp=0:2") == list(range(8))  # a slice, as Python's
    assert ranks("pp=1:") == [4, 5, 6, 7]
    assert ranks("dp=(1, 3)") == [2, 3, 6, 7]
    assert ranks("group=mesh_tp:5") == [4, 5]  # the tp group that holds rank 5
    assert ranks("group=mesh_pp:2") == [2, 6]
    assert ranks("critic") == [4, 5, 6, 7] == ranks("role=critic")
    assert ranks("actor,critic tp=0") == [0, 2, 4, 6]  # a union inside one term
    assert ranks("0,pp=1") == [0, 4, 5, 6, 7]


def test_what_is_unknown_of_a_rank_does_not_match() -> None:
    bare = RankFacts(rank=3)  # no mesh known yet
    assert parse("3").matches(bare) and not parse("tp=1").matches(bare)
    assert not parse("0-3").matches(RankFacts())  # not even its number


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "an empty rank set"),
        ("   ", "an empty rank set"),
        ("3-1", "a range goes up"),
        ("0,,2", "an empty item"),
        ("dp=(1,3", "unbalanced parentheses"),
        ("dp=1,3)", "unbalanced parentheses"),
        ("tp=x", "is not a rank set item"),
        ("role=3", "a role is a name"),
        ("99999999", "is over"),
        ("x" * (MAX_TEXT + 1), "at most"),
        (",".join(["1"] * 300), "at most 256"),
    ],
)
def test_what_is_not_a_rank_set_says_where_and_how_one_looks(text: str, said: str) -> None:
    with pytest.raises(RankSetError, match=said) as raised:
        parse(text)
    if said not in ("a range goes up", "is over", "at most", "at most 256"):
        assert SYNTAX in str(raised.value)  # what one looks like, beside what is wrong


atoms = st.one_of(
    st.builds(lambda lo, n: Ranks(lo, lo + n), st.integers(0, 9), st.integers(0, 4)),
    st.builds(
        lambda d, vs: Coordinate(d, frozenset(vs)),
        st.sampled_from(DIMS),
        st.sets(st.integers(0, 2), min_size=1, max_size=3),
    ),
    st.builds(
        lambda d, a, b: Coordinate(d, None, a, b),
        st.sampled_from(DIMS),
        st.integers(0, 2),
        st.one_of(st.none(), st.integers(0, 3)),
    ),
    st.builds(GroupOf, st.sampled_from([f"mesh_{d}" for d in DIMS]), st.integers(0, 8)),
    st.builds(Role, st.sampled_from(["actor", "critic", "rollout"])),
)


def text_of(atom: object) -> str:
    if isinstance(atom, Ranks):
        return f"{atom.low}-{atom.high}" if atom.high != atom.low else str(atom.low)
    if isinstance(atom, Coordinate) and atom.values is not None:
        return f"{atom.dim}=({','.join(map(str, sorted(atom.values)))})"
    if isinstance(atom, Coordinate):
        return f"{atom.dim}={atom.start}:{'' if atom.stop is None else atom.stop}"
    if isinstance(atom, GroupOf):
        return f"group={atom.desc}:{atom.member}"
    assert isinstance(atom, Role)
    return f"role={atom.name}"


def brute_force(atom: object, facts: RankFacts) -> bool:
    """Each form's meaning, written out over the mesh's own numbers."""
    if isinstance(atom, Ranks):
        return facts.rank in range(atom.low, atom.high + 1)
    if isinstance(atom, Coordinate):
        at = facts.coords[atom.dim]
        allowed = atom.values if atom.values is not None else range(8)[atom.start : atom.stop]
        return at in allowed
    if isinstance(atom, GroupOf):
        member = next((f for f in MESH if f.rank == atom.member), None)
        dim = atom.desc.removeprefix("mesh_")
        return member is not None and all(
            facts.coords[d] == member.coords[d] for d in DIMS if d != dim
        )
    assert isinstance(atom, Role)
    return facts.role == atom.name


@given(st.lists(st.lists(atoms, min_size=1, max_size=3), min_size=1, max_size=3))
def test_the_matcher_agrees_with_brute_force(terms: list[list[object]]) -> None:
    text = " ".join(",".join(map(text_of, term)) for term in terms)
    chosen = parse(text)
    for facts in MESH:
        expected = all(any(brute_force(a, facts) for a in term) for term in terms)
        assert chosen.matches(facts) == expected, (text, facts.rank)


def test_the_mesh_stand_in_is_a_mesh() -> None:
    """Every dimension's groups partition the world (as DeviceMesh's do)."""
    for dim in DIMS:
        groups = {f.groups[f"mesh_{dim}"] for f in MESH}
        assert sorted(itertools.chain.from_iterable(groups)) == list(range(8))
