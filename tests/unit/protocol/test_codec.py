import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from raydap.protocol import Decoder, Event, Limits, ProtocolError, Request, Response, encode


def frame(payload: bytes, headers: bytes | None = None) -> bytes:
    head = headers if headers is not None else b"Content-Length: %d" % len(payload)
    return head + b"\r\n\r\n" + payload


def test_round_trip_keeps_unknown_fields() -> None:
    request = Request(seq=4, command="evaluate", arguments={"expression": "x"}, vendorField=[1])
    [decoded] = Decoder().feed(encode(request))
    assert isinstance(decoded, Request)
    assert decoded.command == "evaluate"
    assert decoded.arguments == {"expression": "x"}
    assert decoded.to_dict()["vendorField"] == [1]


def test_encode_numbers_with_the_given_seq_and_one_buffer() -> None:
    wire = encode(Event(event="stopped", body={"threadId": 1}), seq=17)
    header, body = wire.split(b"\r\n\r\n", 1)
    assert header == b"Content-Length: %d" % len(body)
    assert json.loads(body) == {
        "seq": 17,
        "type": "event",
        "event": "stopped",
        "body": {"threadId": 1},
    }


def test_non_ascii_is_counted_in_bytes() -> None:
    wire = encode(Event(event="output", body={"output": "héllo ✓"}), seq=1)
    [decoded] = Decoder().feed(wire)
    assert decoded.body == {"output": "héllo ✓"}  # type: ignore[union-attr]


def test_header_names_are_case_insensitive_and_other_headers_ignored() -> None:
    payload = json.dumps({"seq": 1, "type": "request", "command": "threads"}).encode()
    data = frame(payload, b"content-type: x\r\ncontent-length: %d" % len(payload))
    [decoded] = Decoder().feed(data)
    assert decoded.command == "threads"  # type: ignore[union-attr]


messages = st.lists(
    st.one_of(
        st.builds(
            Request,
            seq=st.integers(1, 2**31),
            command=st.text(min_size=1, max_size=20),
            arguments=st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
        ),
        st.builds(
            Response,
            seq=st.integers(1, 2**31),
            request_seq=st.integers(1, 2**31),
            success=st.booleans(),
            command=st.text(min_size=1, max_size=10),
            body=st.dictionaries(st.text(max_size=5), st.text(max_size=30), max_size=3),
        ),
        st.builds(Event, seq=st.integers(1, 2**31), event=st.text(min_size=1, max_size=10)),
    ),
    min_size=1,
    max_size=8,
)


@given(messages, st.lists(st.integers(1, 64), min_size=1, max_size=50))
@settings(max_examples=200, deadline=None)
def test_any_chunking_yields_the_same_messages(sent: list, cuts: list[int]) -> None:
    stream = b"".join(encode(m) for m in sent)
    decoder = Decoder()
    received = []
    position = 0
    for cut in cuts * (len(stream) // max(1, sum(cuts)) + 1):
        received += decoder.feed(stream[position : position + cut])
        position += cut
        if position >= len(stream):
            break
    received += decoder.feed(stream[position:])
    assert [m.to_dict() for m in received] == [m.to_dict() for m in sent]
    assert decoder.buffered == 0


@given(st.binary(max_size=4096))
@settings(max_examples=500, deadline=None)
def test_garbage_raises_only_protocol_error_and_never_grows(data: bytes) -> None:
    decoder = Decoder(Limits(max_header_bytes=256, max_body_bytes=1024))
    try:
        decoder.feed(data)
    except ProtocolError:
        return
    # Whatever was accepted is bounded by the limits: an unfinished header or body.
    assert decoder.buffered <= 256 + 4 + 1024


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (frame(b"{}", b"Content-Type: json"), "without Content-Length"),
        (frame(b"{}", b"Content-Length: two"), "not a number"),
        (frame(b"{}", b"Content-Length: -2"), "not a number"),
        (frame(b"{}", b"garbage"), "malformed header"),
        (frame(b"not json"), "not JSON"),
        (frame(b"\xff\xfe"), "not JSON"),
        (frame(b"[1, 2]"), "not a DAP message"),
        (frame(b'{"seq": 1, "type": "request"}'), "command"),
        (frame(b'{"seq": "x", "type": "event", "event": "e"}'), "seq"),
        (frame(b'{"seq": 1, "type": "reply"}'), "not a DAP message"),
        (frame(b'{"seq": -1, "type": "request", "command": "threads"}'), "seq"),
        (b"Content-Length: 9999999999\r\n\r\n", "over the limit"),
    ],
)
def test_malformed_input_says_what_is_wrong(data: bytes, expected: str) -> None:
    with pytest.raises(ProtocolError, match=expected):
        Decoder().feed(data)


def test_header_without_end_is_refused_once_over_the_limit() -> None:
    decoder = Decoder(Limits(max_header_bytes=100))
    assert decoder.feed(b"X" * 100) == []
    with pytest.raises(ProtocolError, match="header block longer than 100"):
        decoder.feed(b"X")


def test_body_over_limit_is_refused_before_it_arrives() -> None:
    decoder = Decoder(Limits(max_body_bytes=10))
    with pytest.raises(ProtocolError, match="11 bytes is over the limit of 10"):
        decoder.feed(b"Content-Length: 11\r\n\r\n")


def test_bad_request_error_carries_its_seq_for_an_error_response() -> None:
    payload = b'{"seq": 7, "type": "request", "command": "evaluate", "arguments": 5, "x": }'
    with pytest.raises(ProtocolError) as bad_json:
        Decoder().feed(frame(payload))
    assert bad_json.value.request_seq is None  # unparseable: nothing to answer to
    payload = b'{"seq": 7, "type": "request", "command": 42}'
    with pytest.raises(ProtocolError) as bad_field:
        Decoder().feed(frame(payload))
    assert bad_field.value.request_seq == 7


@given(st.integers(min_value=0, max_value=200), st.integers(min_value=1, max_value=3))
def test_what_a_decoder_has_not_delivered_goes_on_in_another_decoder(cut: int, count: int) -> None:
    """A connection handed to another process mid-message: the bytes read so far, written
    back by ``unread``, and the rest make the same messages in a new decoder."""
    events = [Event(event="output", body={"output": "x" * n}) for n in range(count)]
    wire = b"".join(encode(message, seq) for seq, message in enumerate(events))
    cut = min(cut, len(wire))
    first = Decoder()
    delivered = first.feed(wire[:cut])
    second = Decoder()
    rest = second.feed(first.unread() + wire[cut:])
    assert [m.to_dict() for m in delivered + rest] == [m.to_dict() for m in Decoder().feed(wire)]
