"""deploy/systemd/raydap.service: a unit systemd accepts as written, whose settings are ones
``raydap serve`` takes, and whose folders are those raydap's clients look in."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from raydap.bridge.client.connection import ClientSettings
from raydap.bridge.server.settings import Settings

UNIT = Path(__file__).resolve().parents[3] / "deploy" / "systemd" / "raydap.service"


def lines(key: str) -> list[str]:
    return [
        line.split("=", 1)[1]
        for line in UNIT.read_text().splitlines()
        if line.startswith(f"{key}=")
    ]


def test_systemd_accepts_the_unit_with_exec_start_at_the_raydap_tested(tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed (Debian: systemd)")
    raydap = Path(sys.executable).with_name("raydap")
    [exec_start] = lines("ExecStart")
    unit = tmp_path / "raydap.service"
    unit.write_text(UNIT.read_text().replace(exec_start.split()[0], str(raydap)))
    done = subprocess.run([analyze, "verify", "--man=no", str(unit)], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    # Unknown keys and bad values are only warnings to systemd: none may be printed
    assert done.returncode == 0 and not done.stdout + done.stderr, done.stdout + done.stderr


def test_the_units_settings_are_raydaps_and_its_folders_those_clients_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    environment = dict(line.split("=", 1) for line in lines("Environment"))
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.share_dir == ClientSettings().share_dir == Path("/run/raydap-team")
    assert str(settings.runtime_dir) == "/run/raydap"
    assert str(settings.token_file) == "/etc/raydap/tokens"
    [runtime] = lines("RuntimeDirectory")
    assert {f"/run/{name}" for name in runtime.split()} == {"/run/raydap", "/run/raydap-team"}
    assert lines("Group") == ["raydap"]  # whose members the team folder and tokens serve
