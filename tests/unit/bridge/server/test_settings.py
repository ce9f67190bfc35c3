import pytest

from raydap.bridge.client.cli import main
from raydap.bridge.server.settings import Settings, platform_variables


def test_a_kubernetes_service_variable_is_never_read_as_a_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # What Kubernetes puts in every pod of a namespace with Services named raydap and raydap-dap
    monkeypatch.setenv("RAYDAP_PORT", "tcp://10.96.14.3:7800")
    monkeypatch.setenv("RAYDAP_DAP_PORT", "TCP://10.96.14.4:7801")
    monkeypatch.setenv("RAYDAP_PORT_7800_TCP", "tcp://10.96.14.3:7800")
    monkeypatch.setenv("RAYDAP_SERVICE_PORT", "7800")
    monkeypatch.setenv("RAYDAP_HOLD_TIMEOUT", "60")  # a real setting beside them
    settings = Settings()
    assert (settings.port, settings.dap_port, settings.hold_timeout) == (7800, 7801, 60.0)
    assert Settings(port=7900).port == 7900
    assert platform_variables() == ["RAYDAP_DAP_PORT", "RAYDAP_PORT", "RAYDAP_PORT_7800_TCP"]


def test_serve_says_which_platform_variables_it_ignores(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAYDAP_PORT", "tcp://10.96.14.3:7800")
    # Stops at the TLS check, after the note and before anything is started
    assert main(["serve", "--tls-cert", "/x.pem"]) == 2
    assert "--tls-cert and --tls-key go together" in capsys.readouterr().err
    assert main(["serve", "--address", "127.0.0.1:9", "--runtime-dir", "/proc/raydap-none"]) == 2
    assert "ignoring RAYDAP_PORT=tcp://10.96.14.3:7800" in capsys.readouterr().err


def test_a_setting_that_looks_like_an_address_is_still_checked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAYDAP_PORT", "http://10.96.14.3:7800")  # not what a platform sets
    assert main(["serve"]) == 2
    assert "--port: Input should be a valid integer" in capsys.readouterr().err
