"""Ray's own token authentication (Ray >= 2.52, ``RAY_AUTH_MODE=token``): the bridge is a Ray
client like any other, so it finds Ray's token where Ray's clients look and sends it to the
dashboard and GCS."""

from __future__ import annotations

import os
from pathlib import Path

#: A token file larger than this is not a token.
MAX_TOKEN_BYTES = 4096


def token_source() -> tuple[str, str] | None:
    """Ray's token and where it came from: ``RAY_AUTH_TOKEN``, the file ``RAY_AUTH_TOKEN_PATH``
    names, or ``~/.ray/auth_token``; None if there is none."""
    value = os.environ.get("RAY_AUTH_TOKEN", "").strip()
    if value:
        return value, "RAY_AUTH_TOKEN"
    named = os.environ.get("RAY_AUTH_TOKEN_PATH")
    path = Path(named).expanduser() if named else Path.home() / ".ray" / "auth_token"
    try:
        with path.open("rb") as file:
            value = file.read(MAX_TOKEN_BYTES + 1).decode(errors="replace").strip()
    except OSError:
        return None
    if not value or len(value) > MAX_TOKEN_BYTES:
        return None
    return value, str(path)


def dashboard_headers() -> dict[str, str]:
    """What the dashboard needs to let the bridge in when Ray's auth is on."""
    found = token_source()
    return {"Authorization": f"Bearer {found[0]}"} if found else {}


def enable_for_gcs() -> None:
    """Ray's GCS client sends the token only in token mode: turn it on when a token exists
    and nobody chose a mode (what Ray's own ``ray.init`` does)."""
    if "RAY_AUTH_MODE" not in os.environ and token_source() is not None:
        from ray._raylet import AuthenticationTokenLoader, Config  # type: ignore[attr-defined]

        os.environ["RAY_AUTH_MODE"] = "token"
        Config.initialize("")  # Ray caches its config: read the mode again
        AuthenticationTokenLoader.instance().reset_cache()
