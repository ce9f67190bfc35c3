"""The one redactor: which names and which values hide a secret, for everything raydap stores or
shows to someone who may only look.

It is used where a value is taken (a capture, inside the worker: :mod:`.capture_values`) and
where one is shown: the bridge's stacks, snapshots and hang reports (py-spy's and debugpy's
locals), the captures it keeps, and a ``view`` token's DAP variables and MCP answers. A ``debug``
token sees live values as they are: it can run code in the worker anyway.

A name is secret when it matches one of :data:`SECRET_NAMES` (globs, any case), checked whole. A
value is secret when its text contains one of :data:`SECRET_VALUES`: bearer tokens, URLs with a
password, private-key blocks and the key shapes below, each with a minimum length and character
set so that ordinary text does not match. A project adds its own with ``raydap serve --redact``
(``name:GLOB`` or ``value:REGEX``); the bridge uses them, and sends them to workers with each
capture point. Captured source lines are never redacted: they are the program's text.

This module runs inside Ray workers: it imports nothing of raydap.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

REDACTED = "<redacted>"
SECRET_NAMES = ("*token*", "*password*", "*passwd*", "*secret*", "*key*", "*credential*")
#: (what it is, the expression that finds it in a text).
SECRET_VALUES = (
    ("a bearer token", r"\b[Bb]earer\s+[A-Za-z0-9._~+/-]{8,}"),
    ("a URL with a password", r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]+:[^\s/@]+@"),
    ("a private key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("an AWS access key", r"\bAKIA[0-9A-Z]{16}\b"),
    ("a Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("an API key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("a GitHub token", r"\bghp_[A-Za-z0-9]{36}"),
)
#: A piece of text each of those holds: a text with none of them needs no search (most texts,
#: and a capture reads many: the search is kept off its CPU budget).
_HINTS = ("earer", "://", "PRIVATE KEY", "AKIA", "hf_", "sk-", "ghp_")
#: A glob that only asks for a word anywhere in a name.
_CONTAINS = re.compile(r"\*[^*?\[\]]+\*")
#: No text shorter than this holds one of them (``a://b:c@``: a URL with a password).
_SHORTEST = 8
#: How much of a text is searched for a secret value (a capture cuts values shorter still).
SEARCHED = 64 * 1024


class BadPattern(ValueError):
    """A ``--redact`` item that is neither ``name:GLOB`` nor ``value:REGEX`` that compiles."""


@dataclass(frozen=True)
class Redactor:
    names: tuple[str, ...] = SECRET_NAMES
    values: tuple[str, ...] = tuple(pattern for _, pattern in SECRET_VALUES)

    def __post_init__(self) -> None:
        # Compiled once: a capture asks for every name and text it reads. ``*word*`` globs (all
        # the defaults) are looked for as words in the lower-cased name: 3x a regex's speed.
        words = tuple(p[1:-1].lower() for p in self.names if _CONTAINS.fullmatch(p))
        globs = tuple(p for p in self.names if not _CONTAINS.fullmatch(p))
        object.__setattr__(self, "_words", words)
        object.__setattr__(self, "_glob", _names(globs).match if globs else None)
        object.__setattr__(self, "_value", _values(self.values).search)
        extra = tuple(v for v in self.values if v not in _DEFAULT_VALUES)
        object.__setattr__(self, "_extra", _values(extra).search if extra else None)

    def with_patterns(self, patterns: Iterable[str]) -> Redactor:
        """This redactor and a project's own (``name:GLOB`` or ``value:REGEX`` items)."""
        names, values = list(self.names), list(self.values)
        for item in patterns:
            kind, _, pattern = item.partition(":")
            if kind == "name" and pattern:
                names.append(pattern)
            elif kind == "value" and pattern:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    why = f"--redact {item!r}: not a regular expression: {exc}"
                    raise BadPattern(why) from None
                values.append(pattern)
            else:
                raise BadPattern(f"--redact {item!r}: give name:GLOB or value:REGEX")
        return Redactor(tuple(dict.fromkeys(names)), tuple(dict.fromkeys(values)))

    def secret_name(self, name: str) -> bool:
        lowered = name.lower()
        for word in self._words:  # type: ignore[attr-defined]
            if word in lowered:
                return True
        return self._glob is not None and self._glob(name) is not None  # type: ignore[attr-defined]

    def secret_value(self, text: str) -> bool:
        text = text[:SEARCHED]
        if self._extra is not None and self._extra(text) is not None:  # type: ignore[attr-defined]
            return True
        if len(text) < _SHORTEST:
            return False
        for hint in _HINTS:
            if hint in text:
                return self._value(text) is not None  # type: ignore[attr-defined]
        return False

    def hides(self, name: str, text: str) -> bool:
        return self.secret_name(name) or self.secret_value(text)

    def settings(self) -> dict[str, list[str]]:
        """What a capture point carries to workers: the patterns beyond the defaults."""
        extra_names = [n for n in self.names if n not in SECRET_NAMES]
        defaults = {pattern for _, pattern in SECRET_VALUES}
        extra_values = [v for v in self.values if v not in defaults]
        return {
            **({"secret_names": extra_names} if extra_names else {}),
            **({"secret_values": extra_values} if extra_values else {}),
        }

    @classmethod
    def from_settings(cls, given: dict[str, Any]) -> Redactor:
        """The redactor a capture point's settings ask for (bad items are left out: the
        bridge checked them, and a worker must capture all the same)."""
        names, values = given.get("secret_names"), given.get("secret_values")
        extra = [f"name:{n}" for n in names or () if isinstance(n, str) and n]
        extra += [f"value:{v}" for v in values or () if isinstance(v, str) and _compiles(v)]
        return DEFAULT.with_patterns(extra) if extra else DEFAULT

    def variables(self, listed: list[Any]) -> list[Any]:
        """DAP ``variables`` with each secret one's value hidden and not expandable (new
        objects: an answer may be shared)."""
        shown = []
        for variable in listed:
            if isinstance(variable, dict) and self._hides_variable(variable):
                variable = {**variable, "value": REDACTED, "variablesReference": 0}
                variable.pop("namedVariables", None)
                variable.pop("indexedVariables", None)
            shown.append(variable)
        return shown

    def _hides_variable(self, variable: dict[str, Any]) -> bool:
        name, value = str(variable.get("name", "")), str(variable.get("value", ""))
        return self.hides(name, value) or is_environment(str(variable.get("type", "")))

    def mapping(self, values: dict[str, Any]) -> dict[str, Any]:
        """``{name: repr}`` (py-spy's locals) with each secret one's repr hidden."""
        return {
            name: REDACTED if self.hides(str(name), str(shown)) else shown
            for name, shown in values.items()
        }

    def nodes(self, nodes: list[Any]) -> list[Any]:
        """Captured values (:mod:`.capture_values`' nodes) with each secret one hidden, at any
        depth (new objects)."""
        shown = []
        for node in nodes:
            if not isinstance(node, dict):
                shown.append(node)
                continue
            text = " ".join(str(node.get(k, "")) for k in ("value", "values"))
            if self.hides(str(node.get("name", "")), text) or is_environment(
                str(node.get("type", ""))
            ):
                node = {k: v for k, v in node.items() if k in ("name", "type")}
                node.update(value=REDACTED, cut="redacted")
            elif isinstance(node.get("children"), list):
                node = {**node, "children": self.nodes(node["children"])}
            shown.append(node)
        return shown


_DEFAULT_VALUES = frozenset(pattern for _, pattern in SECRET_VALUES)
#: The environment's mappings are shown whole as redacted, whatever their names (``os.environ``
#: holds every secret a job was given, under its own variables' names).
ENVIRONMENT_TYPES = ("os._Environ", "_Environ")


def is_environment(type_name: str) -> bool:
    return type_name in ENVIRONMENT_TYPES


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


@functools.lru_cache(maxsize=16)
def _names(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One expression for every glob (asked for each name read: it must be cheap)."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns), re.IGNORECASE)


@functools.lru_cache(maxsize=16)
def _values(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns))


DEFAULT = Redactor()
