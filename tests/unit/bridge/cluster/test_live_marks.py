"""Marks read from GCS are outside input: too large, malformed or mistyped ones are ignored."""

from __future__ import annotations

import json

from raydap.bridge.cluster.live_marks import MAX_MARK_BYTES, LiveMark, _parse


def test_a_good_mark_is_read() -> None:
    assert _parse(b'{"pid": 12, "cwd": "/srv", "more": 1}', "w") == LiveMark(pid=12, cwd="/srv")


def test_bad_marks_are_ignored() -> None:
    too_large = json.dumps({"cwd": "x" * MAX_MARK_BYTES}).encode()
    for value in (None, b"", b"not json", b'{"pid": "twelve"}', too_large):
        assert _parse(value, "w") is None


def test_a_mark_says_whether_its_breakpoints_stop_in_rays_hook() -> None:
    raw = b'{"pid": 12, "cwd": "/srv", "python": [3, 12], "stops_in_ray_hook": false}'
    mark = _parse(raw, "w")
    assert mark is not None and mark.python == (3, 12) and mark.stops_in_ray_hook is False
    assert LiveMark(pid=12).stops_in_ray_hook is None  # a mark of an older raydap.live
    assert _parse(b'{"pid": 12, "python": "3.12"}', "w") is None


def test_a_marks_job_and_the_requests_it_answers_are_bounded() -> None:
    """The job picks which kept breakpoints the worker is given, and ``answers`` which of
    raydap's requests it is sent: a worker writes its own mark, so both are checked."""
    mark = _parse(b'{"pid": 12, "job": "01000000", "answers": ["raydapStacks"]}', "w")
    assert mark is not None and (mark.job, mark.answers) == ("01000000", ("raydapStacks",))
    for bad in (
        '{"job": "../01"}',
        '{"job": "' + "0" * 65 + '"}',
        '{"answers": ["' + "x" * 65 + '"]}',
        '{"answers": ' + json.dumps(["a"] * 17) + "}",
    ):
        assert _parse(bad.encode(), "w") is None, bad
