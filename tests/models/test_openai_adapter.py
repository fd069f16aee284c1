"""OpenAIChatModel against a real HTTP server on 127.0.0.1: request shape, parsing, failures."""

from __future__ import annotations

import asyncio
import gc
import json
import socket
import warnings
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest
from _openai_server import FakeOpenAIServer, Reply, tool_call

import toolproof.models
from toolproof import Agent, Message, ModelSettings, ToolCall, ToolResult, tool
from toolproof._pricing import DEFAULT_PRICES
from toolproof.errors import (
    MissingAPIKey,
    ModelConnectionError,
    ModelFailed,
    ModelHTTPError,
    ModelRequestsDisabled,
    UnexpectedModelOutput,
    UserError,
)
from toolproof.models import OpenAIChatModel, RetryPolicy, Timeout
from toolproof.models._base import Model


class Sleeps:
    """An injected sleep that records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def make_model(server: FakeOpenAIServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", RetryPolicy(max_retries=2, sleep=Sleeps()))
    options.setdefault("api_key", "sk-test")
    return OpenAIChatModel("test-model", base_url=server.url + "/v1", **options)


@tool
def multiply_numbers(a: float, b: float) -> float:
    """Multiply two numbers.

    Args:
        a: The first factor.
        b: The second factor.
    """
    return a * b


MULTIPLY = multiply_numbers.definition
SETTINGS = ModelSettings()


def ask(
    model: Model, messages: list[Message], tools: list[Any] = (), settings: ModelSettings = SETTINGS
):  # type: ignore[assignment]
    return asyncio.run(model.request(messages, list(tools), settings))


# -- request shape -----------------------------------------------------------------------------


def test_text_request_body_headers_and_settings(server: FakeOpenAIServer) -> None:
    server.queue(Reply.completion("Hello!"))
    model = make_model(server)
    settings = ModelSettings(temperature=0.2, max_tokens=50, seed=7, stop=["\nObservation:"])
    response = ask(model, [Message.system("Be brief."), Message.user("Hi")], settings=settings)

    assert response.message.content == "Hello!"
    request = server.last
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["Authorization"] == "Bearer sk-test"
    assert request.headers["Content-Type"] == "application/json"
    assert request.body == {
        "model": "test-model",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 7,
        "stop": ["\nObservation:"],
    }


def test_tools_tool_choice_and_parallel_flag(server: FakeOpenAIServer) -> None:
    model = make_model(server)
    for choice, wire in [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("multiply_numbers", {"type": "function", "function": {"name": "multiply_numbers"}}),
    ]:
        server.queue(Reply.completion("ok"))
        settings = ModelSettings(tool_choice=choice, parallel_tool_calls=False)
        ask(model, [Message.user("12 x 8?")], [MULTIPLY], settings)
        assert server.last.body["tools"] == [MULTIPLY.to_openai()]
        assert server.last.body["tool_choice"] == wire
        assert server.last.body["parallel_tool_calls"] is False
    # Without tools, tool_choice and parallel_tool_calls are not sent (OpenAI rejects them).
    server.queue(Reply.completion("ok"))
    ask(
        model, [Message.user("hi")], [], ModelSettings(tool_choice="auto", parallel_tool_calls=True)
    )
    assert "tools" not in server.last.body
    assert "tool_choice" not in server.last.body
    assert "parallel_tool_calls" not in server.last.body


def test_tool_calls_and_results_are_sent_in_wire_format(server: FakeOpenAIServer) -> None:
    server.queue(Reply.completion("96 and 6"))
    calls = [
        ToolCall.from_json_arguments("multiply_numbers", '{"a": 12,  "b":8}', "call_a"),
        ToolCall("multiply_numbers", {"a": 2, "b": 3}, "call_b"),
    ]
    messages = [
        Message.user("12 x 8 and 2 x 3?"),
        Message.assistant(None, calls),
        Message.tool(ToolResult("call_a", "multiply_numbers", "ok", "96.0")),
        Message.tool(ToolResult("call_b", "multiply_numbers", "error", "boom")),
    ]
    ask(make_model(server), messages, [MULTIPLY])
    assert server.last.body["messages"] == [
        {"role": "user", "content": "12 x 8 and 2 x 3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    # the model's own text, byte for byte
                    "function": {"name": "multiply_numbers", "arguments": '{"a": 12,  "b":8}'},
                },
                {
                    "id": "call_b",
                    "type": "function",
                    "function": {"name": "multiply_numbers", "arguments": '{"a": 2, "b": 3}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_a", "content": "96.0"},
        {"role": "tool", "tool_call_id": "call_b", "content": "boom"},
    ]


def test_reasoning_is_sent_back_for_the_current_turn_only(server: FakeOpenAIServer) -> None:
    call = ToolCall("multiply_numbers", {"a": 1, "b": 2}, "call_1")
    messages = [
        Message.user("first question"),
        Message.assistant("first answer", reasoning="old thoughts"),
        Message.user("second question"),
        Message.assistant(None, [call], reasoning="new thoughts"),
        Message.tool(ToolResult("call_1", "multiply_numbers", "ok", "2.0")),
        Message.assistant(None, [call.with_id("call_2")], reasoning=""),
        Message.tool(ToolResult("call_2", "multiply_numbers", "ok", "2.0")),
    ]
    server.queue(Reply.completion("done"), Reply.completion("done"))
    ask(make_model(server, send_reasoning=True), messages, [MULTIPLY])
    sent = server.last.body["messages"]
    assert [m.get("reasoning_content") for m in sent] == [
        None,
        None,  # an earlier turn: not sent
        None,
        "new thoughts",
        None,
        "",  # an empty reasoning of this turn is sent as it was received
        None,
    ]
    assert "reasoning_content" not in sent[1]
    ask(make_model(server), messages, [MULTIPLY])  # send_reasoning off (not DeepSeek)
    assert all("reasoning_content" not in m for m in server.last.body["messages"])


def test_provider_options_extra_fields_and_roles(server: FakeOpenAIServer) -> None:
    server.queue(Reply.completion("ok"))
    model = make_model(server, max_tokens_field="max_completion_tokens", system_role="developer")
    settings = ModelSettings(max_tokens=100, extra={"response_format": {"type": "json_object"}})
    ask(model, [Message.system("sys"), Message.user("hi")], settings=settings)
    body = server.last.body
    assert body["max_completion_tokens"] == 100
    assert "max_tokens" not in body
    assert body["messages"][0] == {"role": "developer", "content": "sys"}
    assert body["response_format"] == {"type": "json_object"}


def test_custom_headers_and_keyless_requests(server: FakeOpenAIServer) -> None:
    server.queue(Reply.completion("ok"))
    ask(make_model(server, api_key=None, headers={"X-Title": "toolproof"}), [Message.user("hi")])
    assert "Authorization" not in server.last.headers
    assert server.last.headers["X-Title"] == "toolproof"


def test_proxy_variables_are_honoured(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The local server plays the proxy: the request for an unreachable host reaches it."""
    monkeypatch.setenv("HTTP_PROXY", server.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server.queue(Reply.completion("via the proxy"))
    model = OpenAIChatModel("m", base_url="http://api.example.invalid/v1", retry=0)
    assert ask(model, [Message.user("hi")]).message.content == "via the proxy"
    assert server.last.headers["Host"] == "api.example.invalid"
    assert server.last.path == "/v1/chat/completions"
    # NO_PROXY exempts a host: the request goes straight there (a closed local port).
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    server.reset()
    direct = OpenAIChatModel("m", base_url=f"http://127.0.0.1:{port}/v1", retry=0)
    with pytest.raises(ModelConnectionError, match=f"could not connect to http://127.0.0.1:{port}"):
        ask(direct, [Message.user("hi")])
    assert server.requests == []


# -- parsing -----------------------------------------------------------------------------------


def test_text_answer_usage_and_finish_reason(server: FakeOpenAIServer) -> None:
    usage = {
        "prompt_tokens": 1144,
        "completion_tokens": 2,
        "total_tokens": 1146,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "accepted_prediction_tokens": 3},
    }
    server.queue(Reply.completion("Hi", usage=usage, finish_reason="length", model="gpt-x-0613"))
    response = ask(make_model(server), [Message.user("hi")])
    assert response.message == Message.assistant("Hi")
    assert response.finish_reason == "length"
    assert response.model_name == "gpt-x-0613"
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.cached_tokens, u.reasoning_tokens) == (
        1144,
        2,
        1024,
        0,
    )
    assert (u.requests, u.estimated) == (1, False)
    assert u.details == {"completion_tokens_details.accepted_prediction_tokens": 3}


def test_parallel_tool_calls_are_parsed_in_order(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply.completion(
            "",
            tool_calls=[
                tool_call("call_1", "multiply_numbers", '{"a": 12, "b": 8}'),
                tool_call("call_2", "get_weather", '{"city":"北京"}'),
            ],
        )
    )
    response = ask(make_model(server), [Message.user("go")], [MULTIPLY])
    message = response.message
    assert message.content is None  # "" next to tool calls means no text
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_1", "multiply_numbers", {"a": 12, "b": 8}),
        ("call_2", "get_weather", {"city": "北京"}),
    ]
    assert [c.raw_arguments for c in message.tool_calls] == ['{"a": 12, "b": 8}', '{"city":"北京"}']
    assert response.finish_reason == "tool_calls"


def test_odd_tool_call_shapes_never_raise(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply.completion(
            None,
            tool_calls=[
                {"type": "function", "function": {"name": "f", "arguments": {"x": 1}}},  # object
                {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{bad"}},
                {"id": "c3", "type": "function", "function": {"name": "h"}},  # no arguments
            ],
        )
    )
    calls = ask(make_model(server), [Message.user("go")]).message.tool_calls
    assert (calls[0].id, calls[0].arguments, calls[0].arguments_error) == ("call_0", {"x": 1}, None)
    assert calls[1].arguments == {}
    assert calls[1].raw_arguments == "{bad"
    assert calls[1].arguments_error is not None
    assert calls[1].arguments_error.startswith("arguments are not valid JSON")
    assert (calls[2].arguments, calls[2].arguments_error) == ({}, None)


def test_malformed_arguments_go_back_to_the_model_and_the_run_finishes(
    server: FakeOpenAIServer,
) -> None:
    server.queue(
        Reply.completion(None, tool_calls=[tool_call("c1", "multiply_numbers", '{"a": 12, "b": ')]),
        Reply.completion(
            None, tool_calls=[tool_call("c2", "multiply_numbers", '{"a": 12, "b": 8}')]
        ),
        Reply.completion("12 x 8 = 96"),
    )
    result = Agent(make_model(server), [multiply_numbers]).run_sync("12 x 8?")
    assert result.output == "12 x 8 = 96"
    first = result.trace.steps[0].tool_results[0]
    assert (first.status, first.error_type) == ("error", "InvalidArguments")
    sent_back = server.requests[1].body["messages"]
    # Servers that parse the history reject invalid JSON there (llama.cpp answers HTTP 500):
    # the model's text goes back wrapped in a JSON object, and the trace keeps it as it was.
    wire_arguments = sent_back[1]["tool_calls"][0]["function"]["arguments"]
    assert json.loads(wire_arguments) == {"unparsed_arguments": '{"a": 12, "b": '}
    assert result.trace.steps[0].response.tool_calls[0].raw_arguments == '{"a": 12, "b": '
    assert sent_back[2]["role"] == "tool"
    assert sent_back[2]["tool_call_id"] == "c1"
    assert sent_back[2]["content"] == first.content
    assert result.trace.steps[1].tool_results[0].content == "96.0"


def test_deepseek_usage_fills_cached_tokens_and_cache_hits_are_priced_apart(
    server: FakeOpenAIServer,
) -> None:
    usage = {
        "prompt_tokens": 976,
        "completion_tokens": 61,
        "total_tokens": 1037,
        "prompt_cache_hit_tokens": 896,
        "prompt_cache_miss_tokens": 80,
        "completion_tokens_details": {"reasoning_tokens": 25},
    }
    server.queue(Reply.completion("Done", reasoning="thinking...", usage=usage))
    model = make_model(server, name="deepseek:deepseek-chat", send_reasoning=True)
    result = Agent(model).run_sync("hi")
    u = result.trace.usage
    assert (u.input_tokens, u.cached_tokens, u.output_tokens, u.reasoning_tokens) == (
        976,
        896,
        61,
        25,
    )
    assert u.details == {"prompt_cache_miss_tokens": 80}
    assert result.trace.steps[0].response.reasoning == "thinking..."
    price = DEFAULT_PRICES["deepseek-chat"]
    expected = (80 * price.input + 896 * price.cached_input + 61 * price.output) / 1_000_000
    assert price.cached_input is not None and price.cached_input < price.input
    assert result.trace.cost == pytest.approx(expected)
    assert result.trace.cost < (976 * price.input + 61 * price.output) / 1_000_000


def test_reasoning_field_of_other_providers(server: FakeOpenAIServer) -> None:
    body = Reply.completion("Paris.").json
    body["choices"][0]["message"]["reasoning"] = "The capital is Paris."
    server.queue(Reply(json=body))
    assert ask(make_model(server), [Message.user("?")]).message.reasoning == "The capital is Paris."


def test_missing_usage_is_estimated(server: FakeOpenAIServer) -> None:
    reply = Reply.completion("Hello there, how are you today?")
    del reply.json["usage"]
    server.queue(reply)
    usage = ask(make_model(server), [Message.user("Hello, please greet me.")]).usage
    assert usage.estimated is True
    assert usage.requests == 1
    assert usage.input_tokens > 0
    assert usage.output_tokens > 0


# -- streaming ---------------------------------------------------------------------------------


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return json.dumps({"id": "c", "model": "test-model", "choices": choices, **extra})


def test_streamed_text_with_usage_chunk(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(
            sse=[
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}),
                chunk({"content": "lo"}),
                chunk({}, "stop"),
                chunk(None, usage={"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}),
                "[DONE]",
            ]
        )
    )
    response = ask(make_model(server, stream=True), [Message.user("hi")])
    assert server.last.body["stream"] is True
    assert server.last.body["stream_options"] == {"include_usage": True}
    assert response.message.content == "Hello"
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 2)


def test_streamed_parallel_tool_calls_and_reasoning(server: FakeOpenAIServer) -> None:
    def call_delta(index: int, **fields: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fields}]}

    server.queue(
        Reply(
            sse=[
                chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
                chunk({"reasoning_content": "Two "}),
                chunk({"reasoning_content": "calls."}),
                chunk(
                    call_delta(
                        0,
                        id="call_a",
                        type="function",
                        function={"name": "multiply_numbers", "arguments": ""},
                    )
                ),
                chunk(call_delta(0, function={"arguments": '{"a": 1, '})),
                chunk(
                    call_delta(
                        1,
                        id="call_b",
                        type="function",
                        function={"name": "multiply_numbers", "arguments": '{"a"'},
                    )
                ),
                chunk(call_delta(0, function={"arguments": '"b": 2}'})),
                chunk(call_delta(1, function={"arguments": ': 3, "b": 4}'})),
                chunk({}, "tool_calls"),
                "[DONE]",
            ]
        )
    )
    response = ask(make_model(server, stream=True, stream_usage=False), [Message.user("go")])
    assert "stream_options" not in server.last.body
    message = response.message
    assert message.reasoning == "Two calls."
    assert message.content is None
    assert [(c.id, c.raw_arguments, c.arguments) for c in message.tool_calls] == [
        ("call_a", '{"a": 1, "b": 2}', {"a": 1, "b": 2}),
        ("call_b", '{"a": 3, "b": 4}', {"a": 3, "b": 4}),
    ]
    assert response.usage.estimated is True  # the stream carried no usage


def test_a_stream_cut_short_is_retried(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(sse=[chunk({"content": "Hel"})]),  # no finish_reason, no [DONE]
        Reply(sse=[chunk({"content": "Hello"}, "stop"), "[DONE]"]),
    )
    sleeps = Sleeps()
    model = make_model(server, stream=True, retry=RetryPolicy(max_retries=1, sleep=sleeps))
    assert ask(model, [Message.user("hi")]).message.content == "Hello"
    assert len(server.requests) == 2
    assert len(sleeps.calls) == 1


def test_an_error_event_in_a_stream_is_reported(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(
            sse=[
                chunk({"content": "Hel"}),
                json.dumps({"error": {"message": "Upstream overloaded", "code": 502}}),
            ]
        )
    )
    with pytest.raises(
        UnexpectedModelOutput, match="the stream reported an error: Upstream overloaded"
    ):
        ask(make_model(server, stream=True), [Message.user("hi")])


@pytest.mark.parametrize("stream", [False, True])
def test_connections_are_reused(server: FakeOpenAIServer, stream: bool) -> None:
    if stream:
        # the end of the chunked body comes a little after [DONE]
        server.handler = lambda request: Reply(
            sse=[chunk({"content": "ok"}, "stop"), "[DONE]"], end_delay=0.05
        )
    else:
        server.handler = lambda request: Reply.completion("ok")
    model = make_model(server, stream=stream)

    async def three_in_a_row() -> None:
        for _ in range(3):
            response = await model.request([Message.user("hi")], [], SETTINGS)
            assert response.message.content == "ok"

    asyncio.run(three_in_a_row())
    assert len({r.peer for r in server.requests}) == 1


def test_a_json_answer_to_a_stream_request_is_accepted(server: FakeOpenAIServer) -> None:
    server.queue(Reply.completion("plain"))
    assert ask(make_model(server, stream=True), [Message.user("hi")]).message.content == "plain"


# -- failures ----------------------------------------------------------------------------------


def test_429_with_retry_after_is_honoured(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(
            status=429,
            json={"error": {"message": "Rate limit reached"}},
            headers={"Retry-After": "2"},
        ),
        Reply.completion("finally"),
    )
    sleeps = Sleeps()
    model = make_model(server, retry=RetryPolicy(max_retries=3, sleep=sleeps))
    assert ask(model, [Message.user("hi")]).message.content == "finally"
    assert sleeps.calls == [2.0]
    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body


def test_retry_after_as_an_http_date_and_in_milliseconds(server: FakeOpenAIServer) -> None:
    when = datetime.now(timezone.utc) + timedelta(seconds=30)
    server.queue(
        Reply(status=503, text="busy", headers={"Retry-After": format_datetime(when, usegmt=True)}),
        Reply(
            status=429, json={"error": {"message": "slow down"}}, headers={"retry-after-ms": "250"}
        ),
        Reply.completion("ok"),
    )
    sleeps = Sleeps()
    model = make_model(server, retry=RetryPolicy(max_retries=3, sleep=sleeps))
    assert ask(model, [Message.user("hi")]).message.content == "ok"
    assert 27 <= sleeps.calls[0] <= 30
    assert sleeps.calls[1] == 0.25


def test_429_without_retry_after_backs_off_then_gives_up(server: FakeOpenAIServer) -> None:
    error = {
        "error": {
            "message": "Rate limit reached for requests",
            "type": "requests",
            "code": "rate_limit_exceeded",
        }
    }
    server.queue(*[Reply(status=429, json=error) for _ in range(3)])
    sleeps = Sleeps()
    policy = RetryPolicy(max_retries=2, initial_delay=1.0, max_delay=1.5, jitter=0.5, sleep=sleeps)
    with pytest.raises(ModelHTTPError) as caught:
        ask(make_model(server, retry=policy), [Message.user("hi")])
    exc = caught.value
    assert (exc.status, exc.code, exc.error_type, exc.retryable) == (
        429,
        "rate_limit_exceeded",
        "requests",
        True,
    )
    assert exc.provider_message == "Rate limit reached for requests"
    assert len(server.requests) == 3
    assert 0.5 <= sleeps.calls[0] <= 1.0  # 1.0 shortened by up to 50 % jitter
    assert 0.75 <= sleeps.calls[1] <= 1.5  # doubled, capped at max_delay
    assert "gave up after 3 attempts" in str(exc)
    assert "Rate limited: lower the concurrency" in str(exc)


def test_retries_are_bounded_by_total_time(server: FakeOpenAIServer) -> None:
    server.queue(Reply(status=429, text="Too many requests.", headers={"Retry-After": "37"}))
    sleeps = Sleeps()
    model = make_model(server, retry=RetryPolicy(max_retries=5, max_elapsed=10, sleep=sleeps))
    with pytest.raises(ModelHTTPError) as caught:
        ask(model, [Message.user("hi")])
    assert sleeps.calls == []
    assert len(server.requests) == 1
    assert caught.value.retry_after == 37.0
    assert str(caught.value).endswith(
        "(gave up after 1 attempt: waiting the provider's Retry-After 37.0 s would exceed the "
        "retry budget (RetryPolicy.max_elapsed=10 s))."
    )


def test_server_errors_are_retried(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(status=500, json={"error": {"message": "internal"}}),
        Reply(status=503, text="upstream connect error or disconnect/reset before headers"),
        Reply.completion("ok"),
    )
    sleeps = Sleeps()
    model = make_model(server, retry=RetryPolicy(max_retries=2, sleep=sleeps))
    assert ask(model, [Message.user("hi")]).message.content == "ok"
    assert len(sleeps.calls) == 2


def test_a_server_error_after_the_last_retry_quotes_the_body(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(status=503, text="upstream connect error or disconnect/reset before headers")
    )
    with pytest.raises(ModelHTTPError) as caught:
        ask(make_model(server, retry=0), [Message.user("hi")])
    assert caught.value.status == 503
    assert caught.value.body == "upstream connect error or disconnect/reset before headers"
    assert str(caught.value) == (
        f"test-model: HTTP 503 Service Unavailable from {server.url}/v1/chat/completions: "
        '"upstream connect error or disconnect/reset before headers". '
        "The provider failed; retry later."
    )


def test_401_is_not_retried_and_names_the_key_variable(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_KEY", "sk-wrong")
    server.queue(
        Reply(
            status=401,
            json={
                "error": {
                    "message": "Incorrect API key provided: sk-wrong.",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": "invalid_api_key",
                }
            },
        )
    )
    sleeps = Sleeps()
    model = make_model(
        server,
        api_key=None,
        api_key_env="MY_KEY",
        name="openai:gpt-4o",
        retry=RetryPolicy(sleep=sleeps),
    )
    with pytest.raises(ModelHTTPError) as caught:
        ask(model, [Message.user("hi")])
    assert server.last.headers["Authorization"] == "Bearer sk-wrong"
    assert (len(server.requests), sleeps.calls, caught.value.retryable) == (1, [], False)
    assert str(caught.value) == (
        f"openai:gpt-4o: HTTP 401 Unauthorized from {server.url}/v1/chat/completions: "
        '"Incorrect API key provided: sk-wrong." (code: invalid_api_key). '
        "Check the API key in MY_KEY: the provider did not accept it."
    )


def test_400_explains_message_order(server: FakeOpenAIServer) -> None:
    message = (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
        "message with 'tool_calls'."
    )
    server.queue(
        Reply(
            status=400,
            json={
                "error": {
                    "message": message,
                    "type": "invalid_request_error",
                    "param": "messages.[1].role",
                    "code": None,
                }
            },
        )
    )
    with pytest.raises(ModelHTTPError) as caught:
        ask(make_model(server), [Message.user("hi")])
    exc = caught.value
    assert (exc.status, exc.param, exc.code, exc.retryable) == (
        400,
        "messages.[1].role",
        None,
        False,
    )
    assert len(server.requests) == 1
    assert str(exc) == (
        f"test-model: HTTP 400 Bad Request from {server.url}/v1/chat/completions: "
        f"{json.dumps(message)} (param: messages.[1].role). Check the request: message order "
        "(each role 'tool' message must follow the assistant message whose tool_calls it "
        "answers, with the same tool_call_id), the tool schemas, and settings model "
        "'test-model' may not support."
    )


def test_400_about_reasoning_content_points_to_send_reasoning(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(
            status=400,
            json={
                "error": {
                    "message": "Missing `reasoning_content` field in the assistant message "
                    "at message index 2"
                }
            },
        )
    )
    with pytest.raises(ModelHTTPError, match="use send_reasoning=True"):
        ask(make_model(server), [Message.user("hi")])


def test_403_and_404_say_what_to_check(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(
            status=403, json={"error": {"message": "Country, region, or territory not supported"}}
        ),
        Reply(
            status=404,
            json={
                "error": {
                    "message": "The model `gpt-5.2-proo` does not exist",
                    "code": "model_not_found",
                }
            },
        ),
    )
    model = make_model(server, api_key_env=None)
    with pytest.raises(
        ModelHTTPError, match=r"may use model 'test-model' \(permissions, region, billing\)"
    ):
        ask(model, [Message.user("hi")])
    with pytest.raises(ModelHTTPError) as caught:
        ask(model, [Message.user("hi")])
    assert caught.value.code == "model_not_found"
    assert str(caught.value).endswith(
        f"Check the model name 'test-model' and the base URL {server.url}/v1 (requests go to "
        "<base URL>/chat/completions)."
    )
    assert len(server.requests) == 2


def test_a_read_timeout_is_a_connection_error(server: FakeOpenAIServer) -> None:
    server.queue(Reply.completion("late", delay=2.0))
    model = make_model(server, timeout=Timeout(read=0.2), retry=0)
    with pytest.raises(ModelConnectionError) as caught:
        ask(model, [Message.user("hi")])
    assert str(caught.value) == (
        f"test-model: no response from {server.url}/v1/chat/completions within the read timeout "
        "(0.2 s); raise it with timeout=Timeout(read=...)"
    )


def test_a_timeout_is_retried(server: FakeOpenAIServer) -> None:
    server.queue(Reply.completion("late", delay=2.0), Reply.completion("on time"))
    sleeps = Sleeps()
    model = make_model(server, timeout=0.2, retry=RetryPolicy(max_retries=1, sleep=sleeps))
    assert ask(model, [Message.user("hi")]).message.content == "on time"
    assert len(sleeps.calls) == 1


def test_a_dropped_connection_is_retried(server: FakeOpenAIServer) -> None:
    server.queue(Reply(drop=True), Reply.completion("ok"))
    assert ask(make_model(server), [Message.user("hi")]).message.content == "ok"
    assert len(server.requests) == 2


def test_connection_refused_names_the_base_url_variable() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = Sleeps()
    model = OpenAIChatModel(
        "m",
        base_url=f"http://127.0.0.1:{port}/v1",
        base_url_env="OLLAMA_BASE_URL",
        retry=RetryPolicy(max_retries=2, sleep=sleeps),
    )
    with (
        toolproof.models.override_allow_model_requests(True),
        pytest.raises(ModelConnectionError) as caught,
    ):
        ask(model, [Message.user("hi")])
    assert len(sleeps.calls) == 2
    text = str(caught.value)
    assert text.startswith(f"m: could not connect to http://127.0.0.1:{port}/v1/chat/completions: ")
    assert "Check the base URL (from OLLAMA_BASE_URL) and that the server is running" in text
    assert "gave up after 3 attempts" in text


def test_a_body_that_is_not_json_fails_the_run_cleanly(server: FakeOpenAIServer) -> None:
    server.queue(
        Reply(status=200, text="<html>Bad gateway</html>", headers={"Content-Type": "text/html"})
    )
    agent = Agent(make_model(server), [multiply_numbers])
    with pytest.raises(ModelFailed) as caught:
        agent.run_sync("hi")
    cause = caught.value.__cause__
    assert isinstance(cause, UnexpectedModelOutput)
    assert cause.body == "<html>Bad gateway</html>"
    assert "is not valid JSON: '<html>Bad gateway</html>'" in str(cause)
    trace = caught.value.trace
    assert trace is not None and trace.stop_reason == "error"
    assert trace.error is not None and trace.error.type == "UnexpectedModelOutput"
    assert len(server.requests) == 1  # not retried: the request may have been processed


def test_an_answer_without_choices_is_unexpected(server: FakeOpenAIServer) -> None:
    server.queue(Reply(json={"error": {"message": "content filtered"}}), Reply(json=[1, 2]))
    model = make_model(server)
    with pytest.raises(UnexpectedModelOutput, match="it reports an error: content filtered"):
        ask(model, [Message.user("hi")])
    with pytest.raises(UnexpectedModelOutput, match="is not a JSON object"):
        ask(model, [Message.user("hi")])


# -- the request switch, keys, options ----------------------------------------------------------


def test_requests_are_blocked_when_the_flag_is_off(server: FakeOpenAIServer) -> None:
    model = make_model(server)
    with (
        toolproof.models.override_allow_model_requests(False),
        pytest.raises(ModelRequestsDisabled) as caught,
    ):
        ask(model, [Message.user("hi")])
    assert "toolproof.models.ALLOW_MODEL_REQUESTS is False" in str(caught.value)
    assert server.requests == []


def test_a_missing_key_fails_when_the_model_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SOME_PROVIDER_KEY", raising=False)
    with pytest.raises(MissingAPIKey) as caught:
        OpenAIChatModel("m", api_key_env="SOME_PROVIDER_KEY", name="some:m")
    assert caught.value.variable == "SOME_PROVIDER_KEY"
    assert str(caught.value) == (
        "some:m needs an API key: set the environment variable SOME_PROVIDER_KEY "
        "(or pass api_key=...)"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"base_url": "localhost:8000/v1"}, "must start with http:// or https://"),
        ({"timeout": -1}, "timeout must be a positive number"),
        ({"retry": "3"}, "retry must be a RetryPolicy"),
        ({"max_connections": 0}, "max_connections must be at least 1"),
        ({"system_role": "boss"}, "system_role must be"),
    ],
)
def test_invalid_options_are_user_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        OpenAIChatModel("m", **options)


def test_invalid_retry_policy() -> None:
    with pytest.raises(
        UserError, match=r"max_retries must be >= 0, got -1; jitter must be between 0 and 1"
    ):
        RetryPolicy(max_retries=-1, jitter=2)


# -- sessions and event loops --------------------------------------------------------------------


def test_run_sync_twice_uses_a_session_per_loop_and_closes_it(server: FakeOpenAIServer) -> None:
    server.handler = lambda request: Reply.completion("ok")
    model = make_model(server)
    agent = Agent(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert agent.run_sync("one").output == "ok"
        assert model._pool._states == {}  # closed when asyncio.run finished its loop
        assert agent.run_sync("two").output == "ok"
        assert model._pool._states == {}
        gc.collect()
    assert len(server.requests) == 2


def test_a_loop_closed_without_finalizing_does_not_break_the_next_one(
    server: FakeOpenAIServer,
) -> None:
    server.handler = lambda request: Reply.completion("ok")
    model = make_model(server)
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(model.request([Message.user("a")], [], SETTINGS))
    finally:
        loop.close()  # no shutdown_asyncgens: the session is left behind
    assert len(model._pool._states) == 1
    with warnings.catch_warnings():
        # The dead loop's sockets can only be dropped, not closed: asyncio warns about them
        # (a misuse of the loop, not of the model), and the model carries on.
        warnings.simplefilter("ignore", ResourceWarning)
        assert ask(model, [Message.user("b")]).message.content == "ok"
        gc.collect()
    assert model._pool._states == {}


async def test_concurrent_requests_share_one_session_and_aclose_releases_it(
    server: FakeOpenAIServer,
) -> None:
    server.handler = lambda request: Reply.completion(
        request.body["messages"][0]["content"], delay=0.05
    )
    model = make_model(server)
    answers = await asyncio.gather(
        *(model.request([Message.user(f"q{i}")], [], SETTINGS) for i in range(20))
    )
    assert [a.message.content for a in answers] == [f"q{i}" for i in range(20)]
    assert len(model._pool._states) == 1
    session = next(iter(model._pool._states.values()))[1].session
    await model.aclose()
    assert session.closed
    assert model._pool._states == {}
    again = await model.request([Message.user("again")], [], SETTINGS)  # a new session
    assert again.message.content == "again"
    await model.aclose()
