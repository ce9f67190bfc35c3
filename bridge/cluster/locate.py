"""Finding the Ray cluster's dashboard from what a person has at hand.

Order: ``--dashboard-url``; ``RAY_ADDRESS`` when it is already an HTTP URL (a job-submission
address); otherwise the dashboard address the head records in GCS, for ``--address``,
``RAY_ADDRESS`` or the cluster started on this machine.
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from typing import Any

from raydap.bridge.cluster import ray_auth


class ClusterNotFound(Exception):
    """No Ray cluster could be found; the message says what to pass."""


def is_loopback(host: str) -> bool:
    """``localhost`` or a loopback address: reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Cluster:
    dashboard_url: str
    #: Known unless only a dashboard URL was given; needed to list legacy pdb breakpoints.
    gcs_address: str | None = None


def locate(address: str | None, dashboard: str | None) -> Cluster:
    if dashboard:
        gcs = _gcs_address(address) if address else None
        return Cluster(_http(dashboard), gcs)
    address = address or os.environ.get("RAY_ADDRESS") or "auto"
    if address.startswith(("http://", "https://")):
        return Cluster(address)
    gcs = _gcs_address(address)
    return Cluster(_http(_dashboard_from_gcs(gcs)), gcs)


def _http(url: str) -> str:
    return url if url.startswith(("http://", "https://")) else f"http://{url}"


def _gcs_address(address: str) -> str:
    from ray._private import services  # imported late: importing Ray takes a second

    try:
        return str(services.canonicalize_bootstrap_address_or_die(address))
    except (ConnectionError, ValueError) as exc:
        raise ClusterNotFound(
            f"no Ray cluster at {address!r} ({exc}); start one with `ray start --head`, "
            "pass --address HOST:PORT or --dashboard-url, or try `raydap demo`"
        ) from None


def gcs_client(gcs_address: str) -> Any:
    """Ray's GCS client, sending Ray's auth token when there is one."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]

    ray_auth.enable_for_gcs()
    return GcsClient(address=gcs_address)


def _dashboard_from_gcs(gcs_address: str) -> str:
    try:
        value = gcs_client(gcs_address).internal_kv_get(b"dashboard", namespace=b"dashboard")
    except Exception as exc:  # Ray raises its own RpcError types
        raise ClusterNotFound(
            f"cannot read the dashboard address from GCS {gcs_address}: {exc}"
        ) from None
    if not value:
        raise ClusterNotFound(
            f"the cluster at {gcs_address} runs no dashboard; raydap needs it "
            "(`ray start --head --include-dashboard=true`), or pass --dashboard-url"
        )
    return bytes(value).decode()
