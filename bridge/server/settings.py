"""Everything ``raydap serve`` can be told, in one model: its flags fill it, and so do
``RAYDAP_*`` environment variables (a flag wins). The command line is generated from the
fields, so a setting is declared once, here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from raydap.bridge.cluster.locate import is_loopback
from raydap.live.redact import DEFAULT as DEFAULT_REDACTOR
from raydap.live.redact import Redactor

Port = Annotated[int, Field(ge=0, le=65535)]
#: A list given as one comma-separated flag or variable.
Names = Annotated[list[str], NoDecode]
#: A list given as one space-separated flag or variable (a regular expression may hold commas).
Patterns = Annotated[list[str], NoDecode]


def default_runtime_dir() -> Path:
    """Where running bridges leave their connection files."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "raydap"
    return Path.home() / ".local" / "share" / "raydap" / "runtime"


def default_reports_dir() -> Path:
    """Hang reports outlive the bridge, so they are state, never the runtime directory."""
    from raydap.bridge.hangs.reports import default_root

    return default_root()


def default_captures_dir() -> Path:
    """Beside the hang reports: captures too are kept after the job and the bridge."""
    return default_reports_dir().parent / "captures"


#: The value Kubernetes gives ``<SERVICE>_PORT`` (and Docker links ``<ALIAS>_PORT``) for a
#: Service: never a raydap setting, whose addresses carry no ``tcp://``.
SERVICE_ADDRESS = re.compile(r"(tcp|udp|sctp)://[^\s/]+:\d+", re.IGNORECASE)


def platform_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """The ``RAYDAP_*`` variables that a platform set for a Service named ``raydap...``
    (``RAYDAP_PORT=tcp://10.96.0.7:7800`` in every pod of its namespace), not for raydap:
    they are never read as settings."""
    found = os.environ if environ is None else environ
    return sorted(
        name for name, value in found.items()
        if name.upper().startswith("RAYDAP_") and SERVICE_ADDRESS.fullmatch(value.strip())
    )  # fmt: skip


class _RaydapEnvironment(EnvSettingsSource):
    """The environment, less :func:`platform_variables`."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        skipped = {name.lower() for name in platform_variables()}
        loaded = super()._load_env_vars()
        return {name: value for name, value in loaded.items() if name.lower() not in skipped}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAYDAP_", extra="forbid")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _RaydapEnvironment(settings_cls)

    address: str | None = Field(
        None, description="Ray GCS address HOST:PORT (default: RAY_ADDRESS, else local)"
    )
    dashboard_url: str | None = Field(None, description="Ray dashboard URL (default: from GCS)")
    host: str = Field("127.0.0.1", description="address to listen on (loopback)")
    port: Port = Field(7800, description="HTTP/WebSocket port; 0 picks a free one")
    dap_port: Port = Field(7801, description="DAP TCP port; 0 picks a free one")
    poll_interval: float = Field(0.1, gt=0, le=60, description="seconds between discovery polls")
    live_poll_interval: float = Field(
        0.5, gt=0, le=60, description="seconds between looks for new raydap.live workers"
    )
    hold_timeout: float | None = Field(None, gt=0, description="resume untouched workers after s")
    request_timeout: float = Field(30.0, gt=0, description="seconds a worker has to answer")
    handshake_timeout: float = Field(10.0, gt=0, description="seconds a client has to attach")
    token: SecretStr | None = Field(
        None, description="a debug token (environment only, never a flag)", exclude=True
    )
    token_file: Path | None = Field(
        None, description="tokens, one 'NAME ROLE SECRET' a line (ROLE: debug or view)"
    )
    no_token: bool = Field(
        False, description="serve without a token (single-user machines; loopback only)"
    )
    insecure: bool = Field(
        False,
        description="allow --no-token on a non-loopback --host (anyone reaching it runs code)",
    )
    allowed_hosts: Names = Field(
        default_factory=list,
        description="more Host names to serve, comma-separated (a reverse proxy's name)",
    )
    allowed_origins: Names = Field(
        default_factory=list,
        description="more browser origins to accept, comma-separated (https://proxy.example)",
    )
    audit_log: Path | None = Field(None, description="append a JSON line per attach, continue ...")
    redact: Patterns = Field(
        default_factory=list,
        description="more secrets to hide, space-separated name:GLOB or value:REGEX items "
        "(docs/security.md lists those always hidden)",
    )
    tls_cert: Path | None = Field(None, description="serve HTTP, WebSocket and DAP over TLS")
    tls_key: Path | None = Field(None, description="the key of --tls-cert")
    max_connections: int = Field(256, ge=1, description="connections in total")
    max_connections_per_address: int = Field(32, ge=1, description="connections per address")
    hang_after: float = Field(
        60.0, gt=0, le=86_400,
        description="seconds a job's ranks may stand still, one waiting, to be a suspected hang",
    )  # fmt: skip
    hang_watch: Literal["live", "all", "off"] = Field(
        "live", description="which jobs to watch for hangs: with live workers, all, off"
    )
    hang_sample_interval: float = Field(
        5.0, ge=0.5, le=600, description="seconds between samples of watched jobs' stacks"
    )
    hang_reports: Path = Field(
        default_factory=default_reports_dir,
        description="where each suspected hang's report goes (verdict, stacks, Flight Recorder "
        "dumps; kept after the job); default $XDG_STATE_HOME/raydap/hangs",
    )
    hang_reports_kept: int = Field(
        50, ge=1, le=100_000, description="hang reports kept at most (the oldest go first)"
    )
    hang_reports_mb: int = Field(
        200, ge=1, le=1_000_000, description="megabytes of hang reports kept at most"
    )
    captures: Path = Field(
        default_factory=default_captures_dir,
        description="where captures are kept (capture points' and post-mortem stops'; kept "
        "after the job and across bridges); default $XDG_STATE_HOME/raydap/captures",
    )
    captures_kept: int = Field(
        10_000, ge=1, le=1_000_000, description="captures kept at most (the oldest go first)"
    )
    captures_mb: int = Field(
        256, ge=1, le=1_000_000, description="megabytes of captures kept at most"
    )
    post_mortem_hold: float = Field(
        600.0, ge=0, le=7 * 86_400,
        description="seconds a post-mortem stop (RAY_DEBUG_POST_MORTEM=1) is held, once "
        "captured, while nobody is attached to it or follows its job; then the task fails as "
        "it would without a debugger, freeing its GPUs (0: capture and let go at once)",
    )  # fmt: skip
    debug_group_timeout: float = Field(
        3600.0, ge=0, le=7 * 86_400,
        description="seconds every collective timeout of a debugged job's ranks is raised to, "
        "so that a rank stopped alone does not get its peers killed (0: leave them alone)",
    )  # fmt: skip
    runtime_dir: Path = Field(
        default_factory=default_runtime_dir, description="where the connection file goes"
    )
    share_dir: Path | None = Field(
        None,
        description="a folder whose group may use this bridge (a team's head): a copy of the "
        "connection file without the token goes there, so members' raydap commands find the "
        "bridge and use their own token (raydap login); docs/deploy.md",
    )

    @field_validator("allowed_hosts", "allowed_origins", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("redact", mode="before")
    @classmethod
    def _patterns(cls, value: Any) -> Any:
        items = value.split() if isinstance(value, str) else value
        if isinstance(items, list):
            DEFAULT_REDACTOR.with_patterns(str(item) for item in items)  # says what is wrong
        return items

    @property
    def redactor(self) -> Redactor:
        """The one redactor: the defaults and the project's own patterns."""
        return DEFAULT_REDACTOR.with_patterns(self.redact)

    @model_validator(mode="after")
    def _consistent(self) -> Settings:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("--tls-cert and --tls-key go together")
        if self.no_token and (self.token is not None or self.token_file is not None):
            raise ValueError("--no-token and token settings (RAYDAP_TOKEN, --token-file) conflict")
        if self.no_token and not is_loopback(self.host) and not self.insecure:
            raise ValueError(
                f"refusing to listen on {self.host} without a token: anyone who reaches the "
                "bridge could run code in every paused worker. Drop --no-token (a token is "
                "made for you), keep the default loopback and use an SSH tunnel, or add "
                "--insecure if this network is trusted."
            )
        return self

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None


def cli_fields() -> dict[str, Any]:
    """The fields the command line offers (all but secrets, which come from the environment)."""
    return {name: field for name, field in Settings.model_fields.items() if not field.exclude}
