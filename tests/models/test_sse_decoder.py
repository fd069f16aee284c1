"""The incremental server-sent-events decoder."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.models._sse import ServerSentEvent, SSEDecoder


def decode(*chunks: bytes) -> list[ServerSentEvent]:
    decoder = SSEDecoder()
    events = [e for c in chunks for e in decoder.feed(c)]
    return events + decoder.close()


def test_events_comments_fields_and_line_endings() -> None:
    body = (
        b": OPENROUTER PROCESSING\n\n"
        b'data: {"a": 1}\n\n'
        b"event: error\r\nid: 7\r\ndata:first\r\ndata: second\r\n\r\n"
        b"data: [DONE]\r\r"
    )
    assert decode(body) == [
        ServerSentEvent('{"a": 1}'),
        ServerSentEvent("first\nsecond", event="error", id="7"),
        ServerSentEvent("[DONE]", id="7"),
    ]


def test_a_last_event_without_its_blank_line_is_delivered() -> None:
    assert decode(b"data: a\n\ndata: [DONE]\n") == [ServerSentEvent("a"), ServerSentEvent("[DONE]")]
    assert decode(b"data: [DONE]") == [ServerSentEvent("[DONE]")]


def test_utf8_split_across_chunks() -> None:
    data = "data: 北京今天晴\n\n".encode()
    assert decode(data[:8], data[8:9], data[9:]) == [ServerSentEvent("北京今天晴")]


def test_crlf_split_across_chunks() -> None:
    assert decode(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [
        ServerSentEvent("a"),
        ServerSentEvent("b"),
    ]


EVENTS = st.lists(
    st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(EVENTS, st.sampled_from(["\n", "\r\n", "\r"]), st.data())
def test_any_chunking_gives_the_same_events(
    payloads: list[str], newline: str, data: st.DataObject
) -> None:
    body = "".join(f"data: {p}{newline}{newline}" for p in payloads).encode()
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=10)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert decode(*chunks) == [ServerSentEvent(p) for p in payloads]
