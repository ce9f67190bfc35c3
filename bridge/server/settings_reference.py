"""docs/settings.md, made from the settings model: every ``raydap serve`` setting with its flag,
its variable and its default, in one table (``python -m raydap.bridge.server.settings_reference
> docs/settings.md``; a test checks that the page is what this makes)."""

from __future__ import annotations

from typing import Any

from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from raydap.bridge.server.settings import Settings

#: Defaults made when the bridge starts, from the environment, in words.
MADE_AT_START = {
    "runtime_dir": "`$XDG_RUNTIME_DIR/raydap`, else `~/.local/share/raydap/runtime`",
    "hang_reports": "`$XDG_STATE_HOME/raydap/hangs`, else `~/.local/state/raydap/hangs`",
    "captures": "`$XDG_STATE_HOME/raydap/captures`, else `~/.local/state/raydap/captures`",
    "allowed_hosts": "none",
    "allowed_origins": "none",
    "redact": "none",
}

HEADER = """# `raydap serve` settings

Every setting of the bridge, from its settings model (`bridge/server/settings.py`): a flag, and
a variable that the flag overrides. A variable that a platform sets for a Service named like
raydap (Kubernetes' `RAYDAP_PORT=tcp://10.96.0.7:7800`) is ignored, with a note in the log.
Made by `python -m raydap.bridge.server.settings_reference > docs/settings.md`; a test checks
that this page is what the model says.

| flag | variable | default | what |
|---|---|---|---|
"""


def default_text(name: str, field: FieldInfo) -> str:
    if name in MADE_AT_START:
        return MADE_AT_START[name]
    value: Any = field.default
    if value is None or value is PydanticUndefined:
        return "none"
    if value is False:
        return "off"
    return f"`{value:g}`" if isinstance(value, float) else f"`{value}`"


def render() -> str:
    rows = []
    for name, field in Settings.model_fields.items():
        variable = f"`RAYDAP_{name.upper()}`"
        flag = "(variable only)" if field.exclude else f"`--{name.replace('_', '-')}`"
        what = (field.description or "").replace("|", "\\|")
        rows.append(f"| {flag} | {variable} | {default_text(name, field)} | {what} |")
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(render(), end="")
