"""A small synchronous client of the bridge's HTTP API, for the command line."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from raydap.bridge.client.connection import BridgeTarget, find_bridge


class BridgeUnavailable(Exception):
    """The bridge could not be reached or refused the request; the message says why."""


class ApiClient:
    def __init__(self, target: BridgeTarget | None = None, timeout: float = 30.0):
        self.target = target or find_bridge()
        self.timeout = timeout

    @property
    def url(self) -> str:
        return self.target.url

    def get(self, path: str) -> Any:
        return self._call("GET", path)

    def get_bytes(self, path: str) -> bytes:
        """A GET whose answer is not JSON (an archive)."""
        return self._call("GET", path, raw=True)  # type: ignore[no-any-return]

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call("POST", path, body or {})

    def delete(self, path: str) -> Any:
        return self._call("DELETE", path)

    def _call(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, raw: bool = False
    ) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        if self.target.token:
            request.add_header("Authorization", f"Bearer {self.target.token}")
        context = self.target.ssl_context()
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=context) as response:
                data = response.read()
                return data if raw else json.loads(data)
        except urllib.error.HTTPError as exc:
            try:
                detail = json.loads(exc.read()).get("error", exc.reason)
            except (ValueError, AttributeError):
                detail = exc.reason
            hint = ""
            if exc.code == 401 and not self.target.token:
                hint = (" (this bridge wants a token of you: ask its operator for one and run "
                        "`raydap login`, or set RAYDAP_TOKEN)")  # fmt: skip
            raise BridgeUnavailable(f"{method} {path}: HTTP {exc.code}: {detail}{hint}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise BridgeUnavailable(
                f"no raydap bridge at {self.url} ({reason}); start one with `raydap serve` "
                "on the Ray head, or set RAYDAP_URL"
            ) from None
