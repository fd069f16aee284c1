"""The adapter's request bytes are ``build_body`` encoded as compact JSON, byte for byte.

The adapter encodes a run's tools array once and splices it into each body, and decodes
response bodies that open like UTF-8 JSON without sniffing their encoding. These tests try
to make either shortcut differ from the plain ``json.dumps`` / ``json.loads`` it replaces:
generated conversations, tools and settings, a definition changed in place between
requests, and response bodies in other encodings or not JSON at all.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _openai_server import FakeOpenAIServer, Reply, tool_call
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof import Agent, tool
from toolproof._messages import Message, ModelSettings, ToolCall, ToolDefinition
from toolproof.errors import AgentRunError, UnexpectedModelOutput
from toolproof.models import OpenAIChatModel, RetryPolicy


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


def _plain(model: OpenAIChatModel, messages: Any, tools: Any, options: ModelSettings) -> bytes:
    body = model.build_body(messages, tools, options)
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_definitions = st.lists(
    st.builds(
        ToolDefinition,
        name=_text,
        description=_text,
        parameters=st.dictionaries(_text, _json, max_size=4),
    ),
    max_size=3,
)
_settings = st.builds(
    ModelSettings,
    temperature=st.none() | st.floats(0, 2),
    max_tokens=st.none() | st.integers(1, 10_000),
    seed=st.none() | st.integers(0, 2**31),
    stop=st.none() | st.lists(_text, max_size=2),
    tool_choice=st.none() | st.sampled_from(["auto", "none", "required"]) | _text,
    parallel_tool_calls=st.none() | st.booleans(),
    extra=st.dictionaries(
        st.sampled_from(["tools", "model", "messages", "top_p", "stream", "tool_choice"]),
        _json,
        max_size=2,
    ),
)


def _messages(contents: list[str], arguments: str) -> list[Message]:
    call = ToolCall.from_json_arguments("multiply_numbers", arguments, "call_1")
    messages = [Message(role="system", content="Be brief.")]
    for content in contents:
        messages.append(Message(role="user", content=content))
    messages.append(Message(role="assistant", content=None, tool_calls=[call]))
    messages.append(Message(role="tool", content="96", tool_call_id="call_1"))
    return messages


@pytest.mark.timeout(300)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    contents=st.lists(_text, min_size=1, max_size=3),
    arguments=st.sampled_from(['{"a": 12, "b": 8}', "not json", "", '{"a": NaN}']),
    tools=_definitions,
    options=_settings,
    stream=st.booleans(),
    repeat=st.integers(1, 3),
)
def test_the_encoded_body_is_build_body_as_compact_json(
    contents: list[str],
    arguments: str,
    tools: list[ToolDefinition],
    options: ModelSettings,
    stream: bool,
    repeat: int,
) -> None:
    model = OpenAIChatModel("m\u00e9", base_url="http://127.0.0.1:9/v1", stream=stream)
    messages = _messages(contents, arguments)
    for _ in range(repeat):  # the second time, the tools array comes from the adapter's cache
        assert model._payload(messages, tools, options) == _plain(model, messages, tools, options)


def test_the_bytes_a_server_receives_are_build_body_encoded(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply.completion(None, tool_calls=[tool_call("c1", "multiply_numbers", {"a": 12, "b": 8})]),
        Reply.completion("96"),
    )
    options = ModelSettings(temperature=0.25, tool_choice="auto", stop=["\u00a7"])
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1")
    result = Agent(model, [multiply_numbers], settings=options).run_sync("12 x 8? \u00e9\u4e2d")
    assert result.output == "96"
    assert len(server.requests) == 2
    conversation = result.trace.messages  # user, assistant (the call), tool, assistant
    definitions = [multiply_numbers.definition]
    for received, sent in zip(server.requests, [conversation[:1], conversation[:3]], strict=True):
        assert received.raw == _plain(model, sent, definitions, options)


def test_a_definition_changed_in_place_is_sent_changed(server: FakeOpenAIServer) -> None:
    definition = ToolDefinition(
        "lookup",
        "Look a word up.",
        {"type": "object", "properties": {"word": {"type": "string"}}},
    )
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1")
    messages = [Message(role="user", content="hi")]

    async def ask() -> Any:
        server.queue(Reply.completion("ok"))
        await model.request(messages, [definition], ModelSettings())
        await model.aclose()
        return server.last.body["tools"][0]["function"]

    import asyncio

    assert asyncio.run(ask())["parameters"]["properties"]["word"] == {"type": "string"}
    definition.parameters["properties"]["word"]["maxLength"] = 20
    definition.description = "Look a word up in the dictionary."
    sent = asyncio.run(ask())
    assert sent["parameters"]["properties"]["word"] == {"type": "string", "maxLength": 20}
    assert sent["description"] == "Look a word up in the dictionary."
    definition.parameters["properties"]["word"]["maxLength"] = 30  # nested change again
    assert asyncio.run(ask())["parameters"]["properties"]["word"]["maxLength"] == 30


_ANSWER = {
    "model": "test-model",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "caf\u00e9 96"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


@pytest.mark.parametrize(
    "data",
    [
        json.dumps(_ANSWER).encode("utf-16-le"),
        json.dumps(_ANSWER).encode("utf-16"),  # with a byte-order mark
        json.dumps(_ANSWER).encode("utf-32"),
        b"\xef\xbb\xbf" + json.dumps(_ANSWER).encode(),  # UTF-8 with a byte-order mark
        b"\n  " + json.dumps(_ANSWER, ensure_ascii=False).encode(),  # keep-alive blank lines
        json.dumps(_ANSWER, ensure_ascii=False).encode(),
    ],
    ids=["utf-16-le", "utf-16", "utf-32", "utf-8-bom", "leading-blanks", "utf-8"],
)
def test_a_json_body_in_any_encoding_json_reads_is_read(
    server: FakeOpenAIServer, data: bytes
) -> None:
    server.queue(Reply(data=data))
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1")
    result = Agent(model, []).run_sync("hello")
    assert result.output == "caf\u00e9 96"
    assert result.trace.usage.input_tokens == 3 and result.trace.usage.output_tokens == 2
    assert result.trace.usage.details == {}


@pytest.mark.parametrize(
    "data",
    [b'{"choices": [', b"{\xff\xfe}", b'{"choices": "\xed\xa0\x80"}', b"{}", b"[1]", b"{\x00"],
    ids=["cut-off", "invalid-utf-8", "surrogate", "no-choices", "not-an-object", "nul"],
)
def test_a_malformed_body_is_unexpected_output_never_a_crash(
    server: FakeOpenAIServer, data: bytes
) -> None:
    server.queue(Reply(data=data))
    retry = RetryPolicy(max_retries=0)
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1", retry=retry)
    with pytest.raises(AgentRunError) as caught:
        Agent(model, []).run_sync("hello")
    assert isinstance(caught.value.__cause__, UnexpectedModelOutput)
    assert server.url in str(caught.value.__cause__)


def test_usage_with_more_than_the_three_counters_keeps_its_details(
    server: FakeOpenAIServer,
) -> None:
    answer = {
        **_ANSWER,
        "usage": {
            "prompt_tokens": 30,
            "completion_tokens": 20,
            "total_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 10, "audio_tokens": 4},
            "completion_tokens_details": {"reasoning_tokens": 7},
            "queue_time": 0.5,
            "cost_units": 3,
        },
    }
    server.queue(Reply(json=answer))
    model = OpenAIChatModel("test-model", base_url=server.url + "/v1")
    usage = Agent(model, []).run_sync("hello").trace.usage
    assert (usage.input_tokens, usage.output_tokens) == (30, 20)
    assert (usage.cached_tokens, usage.reasoning_tokens) == (10, 7)
    assert usage.details == {"prompt_tokens_details.audio_tokens": 4, "cost_units": 3}
