"""The one redactor: the names and value shapes it hides, a project's own patterns through
``raydap serve --redact``, and each form of value it is given (DAP variables, py-spy's locals,
captured values)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from raydap.bridge.server.settings import Settings
from raydap.live.redact import DEFAULT, REDACTED, SECRET_VALUES, Redactor

SHAPES = {
    "a bearer token": "Authorization: Bearer abc.DEF-123_xyz",
    "a URL with a password": "redis://default:s3cret@cache:6379/0",
    "a private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn",
    "an AWS access key": "id=AKIAIOSFODNN7EXAMPLE",
    "a Hugging Face token": "hf_abcdefghijklmnopqrstuvwxyz0123",
    "an API key": "key: sk-proj-abcdefghijklmnopqrst",
    "a GitHub token": "ghp_" + "a1" * 18,
}
#: Texts near those shapes that are no secret: each shape needs its length and characters.
ORDINARY = ["the bearer of news", "https://example.com/a@b", "AKIA-short", "hf_small",
            "sk-1", "ghp_short", "-----BEGIN CERTIFICATE-----", "tokens: 128"]  # fmt: skip


def test_every_documented_shape_is_found_and_ordinary_text_is_not() -> None:
    assert set(SHAPES) == {what for what, _ in SECRET_VALUES}
    for what, text in SHAPES.items():
        assert DEFAULT.secret_value(text), what
    for text in ORDINARY:
        assert not DEFAULT.secret_value(text), text


def test_names_are_matched_whole_in_any_case() -> None:
    for name in ("HF_TOKEN", "db_password", "client_secret", "api_key", "AWS_CREDENTIALS",
                 "x" * 1000 + "_token"):  # fmt: skip
        assert DEFAULT.secret_name(name), name
    assert not DEFAULT.secret_name("learning_rate")


def test_each_form_of_value_is_redacted() -> None:
    variables = DEFAULT.variables([
        {"name": "token", "value": "'abc'", "variablesReference": 7},
        {"name": "env", "value": "environ({...})", "type": "_Environ", "variablesReference": 8},
        {"name": "lr", "value": "0.1", "variablesReference": 0},
    ])  # fmt: skip
    assert [(v["value"], v["variablesReference"]) for v in variables] == [
        (REDACTED, 0), (REDACTED, 0), ("0.1", 0)
    ]  # fmt: skip
    assert DEFAULT.mapping({"url": "'http://u:p@h/'", "n": "3"}) == {"url": REDACTED, "n": "3"}
    nodes = DEFAULT.nodes([
        {"name": "cfg", "type": "dict", "value": "dict of 1", "children": [
            {"name": "auth", "type": "str", "value": "'Bearer abcdefghij'"}]},
    ])  # fmt: skip
    assert nodes[0]["children"][0]["value"] == REDACTED


def test_a_projects_own_patterns_come_from_serve_and_bad_ones_are_refused() -> None:
    settings = Settings(redact=r"name:*ssn* value:\bEMP-[0-9]{6}\b")
    assert settings.redactor.secret_name("user_ssn")
    assert settings.redactor.secret_value("badge EMP-123456")
    assert Redactor.from_settings(settings.redactor.settings()) == settings.redactor
    with pytest.raises(ValidationError, match="name:GLOB or value:REGEX"):
        Settings(redact="ssn")
    with pytest.raises(ValidationError, match="not a regular expression"):
        Settings(redact="value:(")
