import pytest

from raydap.adapter.upstream.quirks import exception_line
from raydap.bridge.client.api_client import ApiClient
from raydap.bridge.client.cli import build_parser, main
from raydap.bridge.client.render import breakpoints_table, duration
from raydap.bridge.client.terminal import shown
from raydap.bridge.server.settings import Settings, cli_fields


def test_arguments_out_of_range_are_refused_with_a_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["frobnicate"])
    assert exit_.value.code == 2
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port: Input should be less than or equal to 65535" in capsys.readouterr().err
    assert main(["serve", "--poll-interval", "0"]) == 2
    assert "--poll-interval: Input should be greater than 0" in capsys.readouterr().err
    assert main(["serve", "--tls-cert", "/x.pem"]) == 2
    assert "--tls-cert and --tls-key go together" in capsys.readouterr().err


def test_serve_settings_come_from_flags_then_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAYDAP_DAP_PORT", "9001")
    monkeypatch.setenv("RAYDAP_ALLOWED_ORIGINS", "https://a.example, https://b.example")
    monkeypatch.setenv("RAYDAP_HOLD_TIMEOUT", "60")
    args = build_parser().parse_args(["serve", "--hold-timeout", "5", "--no-token"])
    settings = Settings(**{k: v for k, v in vars(args).items() if k in cli_fields()})
    assert settings.dap_port == 9001 and settings.hold_timeout == 5.0 and settings.no_token
    assert settings.allowed_origins == ["https://a.example", "https://b.example"]
    assert "token" not in cli_fields()  # secrets never on a command line


def test_no_token_is_for_loopback_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--no-token", "--host", "0.0.0.0"]) == 2
    assert "refusing to listen on 0.0.0.0 without a token" in capsys.readouterr().err
    assert Settings(no_token=True, host="0.0.0.0", insecure=True).no_token


def test_client_commands_explain_a_missing_bridge(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAYDAP_URL", "http://127.0.0.1:9")
    assert main(["list"]) == 1
    assert "no raydap bridge at http://127.0.0.1:9" in capsys.readouterr().err


def test_eval_errors_show_the_exception_line() -> None:
    traceback = 'Traceback (most recent call last):\n  File "<string>", line 1\nNameError: x\n'
    assert exception_line(traceback) == "NameError: x"


def test_the_table_shows_what_a_person_looks_for() -> None:
    record = {
        "id": "4151dd20b058", "kind": "exception", "exception": {"type": "ValueError"},
        "job_id": "02000000", "task_name": "Trainer.step", "node_ip": "10.0.0.7", "pid": 42,
        "location": {"path": "/a/very/long/path/to/some/deep/module/of/the/project/train.py",
                     "line": 12, "function": "step"},
        "paused_since": 0, "clients": 2,
    }  # fmt: skip
    header, row = breakpoints_table([record]).splitlines()
    assert header.split()[:4] == ["ID", "KIND", "JOB", "TASK"]
    assert "exception: ValueError" in row and "Trainer.step" in row and "…" in row
    assert "train.py:12" in row and row.rstrip().endswith("2")
    assert breakpoints_table([]) == "no paused workers"
    assert (duration(5), duration(125), duration(7300)) == ("5s", "2m05s", "2h01m")


def test_a_running_live_worker_is_listed_as_such_with_no_pause_time() -> None:
    record = {"id": "ab12", "kind": "breakpoint", "state": "running", "live": True, "pid": 9,
              "paused_since": 1.0, "location": None}  # fmt: skip
    _, row = breakpoints_table([record], "held workers").splitlines()
    assert "running (live)" in row and row.split()[-2:] == ["-", "0"]
    assert breakpoints_table([], "held workers") == "no held workers"


def test_a_port_that_cannot_be_bound_is_said_in_one_plain_line() -> None:
    import socket

    from raydap.bridge.server.bridge import ListenError, listen
    from raydap.bridge.server.process import start_failure

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ListenError) as caught:
            listen("127.0.0.1", port, "--dap-port")
    assert start_failure(caught.value) == (
        f"cannot listen on 127.0.0.1:{port}: Address already in use "
        "(pick another with --dap-port, or --host)"
    )


def test_text_from_a_job_reaches_the_terminal_with_its_control_characters_escaped(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found on main: an OSC 52 clipboard write in an exception's text got through."""
    osc52 = "\x1b]52;c;Y3VybCBldmlsIHwgc2g=\x07"
    capture = {"id": "cap-000000000001", "kind": "exception", "job": "02000000",
               "worker": "w1", "rank": 0, "node": "10.0.0.3", "pid": 81, "time": 0.0,
               "path": f"/job/{osc52}.py", "line": 3, "function": "f\u202eroot",
               "point": None, "exception": f"ValueError: {osc52}", "truncated": False}  # fmt: skip
    monkeypatch.setattr(ApiClient, "get", lambda self, path: {"captures": [capture]})
    assert main(["captures"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b]52;c;" in out and "\\u202e" in out  # shown, escaped, not acted on
    assert shown("line one\n\tline two\r\n") == "line one\n\tline two\r\n"
    assert shown("ok\rOWNED") == "ok\\x0dOWNED"  # a lone carriage return would write over
