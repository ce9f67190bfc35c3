"""Which bridge raydap's client commands talk to, and with what token.

``RAYDAP_URL`` and ``RAYDAP_TOKEN`` when set; otherwise the connection file of a bridge running
on this machine (the one at ``RAYDAP_URL``, or the only one), which holds its URL and token, so
``raydap list`` just works next to ``raydap serve``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from raydap.bridge.server import connection_file
from raydap.bridge.server.settings import default_runtime_dir

DEFAULT_URL = "http://127.0.0.1:7800"


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAYDAP_")

    url: str | None = None
    token: SecretStr | None = None
    #: A CA bundle for a bridge serving TLS with its own certificate.
    ca_file: Path | None = None
    runtime_dir: Path = Field(default_factory=default_runtime_dir)


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


def find_bridge() -> BridgeTarget:
    settings = ClientSettings()
    url = settings.url.rstrip("/") if settings.url else None
    found = connection_file.find(settings.runtime_dir, url)
    token = settings.token.get_secret_value() if settings.token is not None else None
    if found is not None:
        return BridgeTarget(
            url or found.url, token or found.token, found.dap_port, settings.ca_file
        )
    return BridgeTarget(url or DEFAULT_URL, token, None, settings.ca_file)
