"""The worker-side hook never breaks a worker's start: it says once why it cannot help."""

from __future__ import annotations

import logging
import sys

import pytest

import raydap.live as live


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(live, "_warned", False)


def test_without_debugpy_it_says_so_once_and_the_worker_starts(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "debugpy", None)  # what a missing package looks like
    with caplog.at_level(logging.WARNING, logger="raydap.live"):
        live.setup()
        live.setup()
    [warning] = caplog.records
    assert "debugpy is not importable" in warning.message
    assert "runtime_env" in warning.message  # says how to get it there


def test_outside_a_ray_worker_it_says_why_and_does_not_raise(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="raydap.live"):
        live.setup()  # no Ray worker in this process: Ray's calls fail
        live.setup()
    [warning] = caplog.records
    assert "runs in Ray workers only" in warning.message


def test_the_mark_key_names_the_worker() -> None:
    assert live.mark_key("ab12") == "live:ab12"
