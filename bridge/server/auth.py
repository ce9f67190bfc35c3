"""Who may use the bridge: named tokens with roles.

A debugpy socket runs any code it is sent, so the bridge is a door into the cluster. Tokens
have a role: ``debug`` may do everything; ``view`` may look (lists, threads, stacks, scopes,
variables, source) but not run code, change state, or move a worker. Secrets are compared in
constant time and never logged.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from raydap.bridge.server.settings import Settings
from raydap.protocol import command as command_info

Role = Literal["debug", "view"]
MIN_SECRET = 16


class TokenError(ValueError):
    """A token file that cannot be used; the message names the line, never the secret."""


@dataclass(frozen=True)
class Token:
    name: str
    role: Role
    secret: str = field(repr=False)

    @property
    def debugs(self) -> bool:
        return self.role == "debug"

    def allows(self, command: str) -> bool:
        """``view`` tokens send only what reads (:mod:`raydap.protocol.commands` says which)."""
        return self.role == "debug" or command_info(command).read_only


#: What a bridge without tokens grants (``--no-token``: loopback only, or --insecure).
ANONYMOUS = Token("anonymous", "debug", "")


def load_tokens(path: Path | None, env_secret: str | None) -> list[Token]:
    """Tokens from a file (``NAME ROLE SECRET`` a line, ``#`` comments) and ``RAYDAP_TOKEN``
    (one ``debug`` token named ``env``)."""
    tokens: list[Token] = []
    if path is not None:
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise TokenError(f"cannot read token file {path}: {exc.strerror}") from None
        for number, line in enumerate(lines, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            fields = text.split()
            if len(fields) != 3:
                raise TokenError(f"{path}:{number}: expected NAME ROLE SECRET")
            name, role, secret = fields
            tokens.append(_token(name, role, secret, f"{path}:{number}"))
    if env_secret:
        tokens.append(_token("env", "debug", env_secret, "RAYDAP_TOKEN"))
    names = [t.name for t in tokens]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise TokenError(f"token names must be unique: {', '.join(duplicates)}")
    return tokens


def tokens_for(settings: Settings) -> list[Token]:
    """The bridge's tokens: those it is given, else one made now (``generated``, debug role);
    none only with ``--no-token``."""
    if settings.no_token:
        return []
    secret = settings.token.get_secret_value() if settings.token is not None else None
    tokens = load_tokens(settings.token_file, secret)
    return tokens or [Token("generated", "debug", secrets.token_urlsafe(32))]


def _token(name: str, role: str, secret: str, where: str) -> Token:
    if role not in ("debug", "view"):
        raise TokenError(f"{where}: role must be debug or view, not {role!r}")
    if len(secret) < MIN_SECRET:
        raise TokenError(f"{where}: the secret of {name!r} is shorter than {MIN_SECRET} characters")
    return Token(name, role, secret)  # type: ignore[arg-type]


class Authenticator:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens

    @property
    def required(self) -> bool:
        return bool(self.tokens)

    def check(self, secret: object) -> Token | None:
        """The token whose secret this is; every secret is compared, in constant time."""
        if not self.required:
            return ANONYMOUS
        offered = (secret if isinstance(secret, str) else "").encode()
        found = None
        for token in self.tokens:
            if hmac.compare_digest(token.secret.encode(), offered):
                found = token
        return found

    def from_header(self, authorization: str | None) -> Token | None:
        scheme, _, secret = (authorization or "").partition(" ")
        return self.check(secret.strip() if scheme.lower() == "bearer" else None)
