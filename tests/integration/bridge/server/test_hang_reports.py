"""A hang report reaches a person on another machine through the bridge's HTTP API: its
verdict and files as JSON, or the whole of it as one archive; a view token may read it."""

from __future__ import annotations

import io
import json
import tarfile
import urllib.error
import urllib.request

from raydap.bridge.hangs.desync import judge
from raydap.bridge.hangs.reports import HangReports
from tests.e2e.conftest import BridgeProcess
from tests.integration.bridge.server.conftest import BOB, hang_reports
from tests.unit.bridge.hangs.test_desync import recorded


def get(bridge: BridgeProcess, path: str, token: str = BOB) -> tuple[int, bytes]:
    request = urllib.request.Request(bridge.url + path,
                                     headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_latest_report_of_a_job_as_json_and_as_an_archive(secured: BridgeProcess) -> None:
    dumps = recorded("skip")
    verdict = {"job": "0a000000", "since": 1.0, "summary": "no progress",
               "collective": judge(dumps)[0].model_dump(mode="json")}  # fmt: skip
    reports = HangReports(hang_reports(secured.log.parent))
    folder = reports.write("0a000000", verdict, {"tree": {}}, dumps, dumps[0].identity.world)

    status, body = get(secured, "/api/v1/hangs/0a000000/report")
    assert status == 200, body
    answer = json.loads(body)
    assert answer["report"] == str(folder)
    assert answer["files"] == ["rank_0", "rank_1", "rank_2", "rank_3", "stacks.json",
                               "verdict.json"]  # fmt: skip
    assert answer["verdict"]["collective"]["missing"] == [2]

    status, body = get(secured, "/api/v1/hangs/0a000000/report.tar.gz")
    assert status == 200
    with tarfile.open(fileobj=io.BytesIO(body)) as tar:
        assert f"{folder.name}/rank_2" in tar.getnames()

    assert get(secured, "/api/v1/hangs/0b000000/report")[0] == 404
    status, body = get(secured, "/api/v1/hangs/0a00zz/report")
    assert status == 400 and b"hexadecimal" in body
    assert get(secured, "/api/v1/hangs/0a000000/report", token="wrong")[0] == 401
