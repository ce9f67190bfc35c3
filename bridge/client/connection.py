"""Which bridge raydap's client commands talk to, and with what token.

The bridge: ``RAYDAP_URL`` when set; else the connection file of a bridge running on this
machine as this user (the one at ``RAYDAP_URL``, or the only one), which holds its URL and
token, so ``raydap list`` just works next to ``raydap serve``; else, on a head shared by a
team, the copy without a token that the bridge leaves in the team's folder (``--share-dir``,
``RAYDAP_SHARE_DIR``, ``/run/raydap-team`` by default).

The token, first found of: ``RAYDAP_TOKEN``, the connection file's, and the one this user
saved for that bridge with ``raydap login`` (``$XDG_CONFIG_HOME/raydap/tokens.json``).
"""

from __future__ import annotations

import json
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from raydap.bridge.server import connection_file
from raydap.bridge.server.settings import default_runtime_dir
from raydap.live import private

DEFAULT_URL = "http://127.0.0.1:7800"


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAYDAP_")

    url: str | None = None
    token: SecretStr | None = None
    #: A CA bundle for a bridge serving TLS with its own certificate.
    ca_file: Path | None = None
    runtime_dir: Path = Field(default_factory=default_runtime_dir)
    #: Where a team's bridge leaves its connection file without a token (docs/deploy.md).
    share_dir: Path = Path("/run/raydap-team")


@dataclass(frozen=True)
class BridgeTarget:
    url: str
    token: str | None
    #: The DAP port, when the connection file says it (else ask ``/healthz``).
    dap_port: int | None = None
    ca_file: Path | None = None

    @property
    def host(self) -> str:
        return self.url.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.url.startswith("https:"):
            return None
        return ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)


def saved_tokens_path() -> Path:
    """Where ``raydap login`` keeps this user's tokens, by bridge URL (owner-only)."""
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(config) / "raydap" / "tokens.json"


def saved_tokens() -> dict[str, str]:
    path = saved_tokens_path()
    try:
        if path.stat().st_size > connection_file.MAX_BYTES:
            return {}
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(url): str(token) for url, token in found.items() if isinstance(token, str)}


def save_token(url: str, token: str) -> Path:
    """Keep ``token`` for the bridge at ``url``, readable by this user only."""
    path = saved_tokens_path()
    private.make_folder(path.parent)
    tokens = {**saved_tokens(), url.rstrip("/"): token}
    private.write_whole(path, json.dumps(tokens, indent=1).encode())
    return path


def find_bridge() -> BridgeTarget:
    settings = ClientSettings()
    url = settings.url.rstrip("/") if settings.url else None
    found = connection_file.find(settings.runtime_dir, url)
    if found is None:
        found = connection_file.find(settings.share_dir, url)
    token = settings.token.get_secret_value() if settings.token is not None else None
    if found is not None:
        url = url or found.url
        token = token or found.token
    url = url or DEFAULT_URL
    token = token or saved_tokens().get(url.rstrip("/"))
    return BridgeTarget(url, token, found.dap_port if found else None, settings.ca_file)
