"""Where the bridge connects to a legacy pdb, and why it will not when it cannot."""

from __future__ import annotations

import pytest

from raydap.bridge.cluster.pdb_keys import Unreachable, local_addresses, pdb_address


def node_at(ip: str | None):  # type: ignore[no-untyped-def]
    async def node_ip(node_id: str) -> str | None:
        return ip

    return node_ip


async def test_an_external_pdb_is_reached_where_it_said() -> None:
    assert await pdb_address("10.0.0.7", 4444, "n1", node_at("10.0.0.7")) == ("10.0.0.7", 4444)


async def test_a_localhost_pdb_on_this_machine_is_reached_on_loopback() -> None:
    here = next(iter(local_addresses()))
    assert await pdb_address("localhost", 4444, "n1", node_at(here)) == ("127.0.0.1", 4444)


async def test_a_localhost_pdb_on_another_node_is_refused_with_what_would_help() -> None:
    """Connecting to localhost here would reach whatever listens on that port here."""
    with pytest.raises(Unreachable, match="--ray-debugger-external") as refused:
        await pdb_address("localhost", 4444, "n2", node_at("203.0.113.9"))
    assert "203.0.113.9" in str(refused.value)
    with pytest.raises(Unreachable):
        await pdb_address("127.0.0.1", 4444, None, node_at(None))
    with pytest.raises(Unreachable, match="no port"):
        await pdb_address("10.0.0.7", None, "n1", node_at("10.0.0.7"))
