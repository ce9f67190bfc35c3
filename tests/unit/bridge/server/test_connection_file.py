"""Which connection files name a running bridge."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from raydap.bridge.server import connection_file
from raydap.bridge.server.connection_file import Connection


def test_a_file_whose_pid_was_reused_by_a_later_process_is_not_live(tmp_path: Path) -> None:
    mine = Connection(url="http://127.0.0.1:7800", dap_port=7801, token="t", pid=os.getpid())
    connection_file.write(tmp_path, mine)
    assert connection_file.live_connections(tmp_path) == [mine]

    later = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        # A bridge killed an hour ago left its file; its pid now belongs to `later`.
        gone = Connection(url="http://127.0.0.1:7900", dap_port=7901, token="u", pid=later.pid)
        path = connection_file.write(tmp_path, gone)
        an_hour_ago = time.time() - 3600
        os.utime(path, (an_hour_ago, an_hour_ago))
        assert connection_file.live_connections(tmp_path) == [mine]
        assert connection_file.find(tmp_path, None) == mine  # the only live one
    finally:
        later.kill()
        later.wait()
