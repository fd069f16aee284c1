"""The adapter against 51 real recorded chat-completions exchanges (conformance/openai-wire).

Each recording is served by the local server exactly as recorded (SSE bodies flushed at
each blank line). The adapter is driven with the inputs the recorded request expresses; the
test checks the request it sends against the recorded one (the fields a client builds) and
the parsed response against values read straight from the recorded body or chunks.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from _openai_server import FakeOpenAIServer, Reply
from _wire import WIRE_DIR, wire_files

from _shared import shared_path
from toolproof import Message, ModelSettings, ToolCall
from toolproof._messages import ModelResponse, ToolDefinition
from toolproof.errors import ModelHTTPError
from toolproof.models import OpenAIChatModel, RetryPolicy

#: Body fields a caller passes through ModelSettings.extra, sent as they are.
EXTRA_FIELDS = ("response_format", "reasoning_format", "web_search_options", "provider", "usage")
#: Body fields the adapter builds; anything else it sends is a bug.
BUILT_FIELDS = {
    "model",
    "messages",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "seed",
    "stop",
    "max_tokens",
    "max_completion_tokens",
    "stream",
    "stream_options",
    *EXTRA_FIELDS,
}


def load(name: str) -> dict[str, Any]:
    return json.loads(shared_path("conformance", "openai-wire", name).read_text(encoding="utf-8"))


def text_of(content: Any) -> str | None:
    if isinstance(content, list):
        return "".join(p["text"] for p in content if p.get("type") == "text")
    return content


# -- recorded request -> the adapter's inputs ------------------------------------------------------


def message_from_wire(m: dict[str, Any]) -> Message:
    role = "system" if m["role"] == "developer" else m["role"]
    content = text_of(m.get("content"))
    if role == "assistant":
        calls = [
            ToolCall.from_json_arguments(
                tc["function"]["name"], tc["function"]["arguments"], tc["id"]
            )
            for tc in m.get("tool_calls") or ()
        ]
        reasoning = m.get("reasoning_content", m.get("reasoning"))
        return Message(role="assistant", content=content, tool_calls=calls, reasoning=reasoning)
    if role == "tool":
        return Message(role="tool", content=content, tool_call_id=m["tool_call_id"])
    return Message(role=role, content=content)


def inputs(record: dict[str, Any]) -> tuple[list[Message], list[ToolDefinition], ModelSettings]:
    body = record["request"]["body"]
    messages = [message_from_wire(m) for m in body["messages"]]
    tools = [
        ToolDefinition(
            t["function"]["name"], t["function"].get("description", ""), t["function"]["parameters"]
        )
        for t in body.get("tools") or ()
    ]
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        choice = choice["function"]["name"]
    stop = body.get("stop")
    settings = ModelSettings(
        temperature=body.get("temperature"),
        max_tokens=body.get("max_tokens") or body.get("max_completion_tokens"),
        seed=body.get("seed"),
        stop=[stop] if isinstance(stop, str) else stop,
        tool_choice=choice,
        parallel_tool_calls=body.get("parallel_tool_calls"),
        extra={k: body[k] for k in EXTRA_FIELDS if body.get(k) is not None},
    )
    return messages, tools, settings


def adapter_options(record: dict[str, Any]) -> dict[str, Any]:
    body = record["request"]["body"]
    return {
        "stream": body.get("stream") is True,
        "stream_usage": "stream_options" in body,
        "send_reasoning": record["provider"] == "deepseek",
        "max_tokens_field": "max_completion_tokens"
        if "max_completion_tokens" in body
        else "max_tokens",
        "system_role": "developer"
        if any(m["role"] == "developer" for m in body["messages"])
        else "system",
    }


def reply_for(record: dict[str, Any]) -> Reply:
    response = record["response"]
    headers = {k.title(): v for k, v in response["headers"].items()}
    if "body" in response:
        return Reply(status=response["status"], json=response["body"], headers=headers)
    text = response["body_text"]
    if response["status"] == 200 and text.lstrip().startswith("data:"):
        return Reply(status=200, sse_text=text, headers=headers)
    return Reply(status=response["status"], text=text, headers=headers)


# -- the request the adapter sent vs. the recorded one ---------------------------------------------


def normalized_messages(
    messages: list[dict[str, Any]], deepseek: bool, *, sent: bool = False
) -> list[dict[str, Any]]:
    """What a client builds for each message; reasoning only where it must be sent back.

    A recorded tool-call turn may hold ``""``, ``null`` or no content; the adapter must send
    exactly ``null`` there (``sent=True`` compares its messages without normalizing that).
    """
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    out = []
    for index, m in enumerate(messages):
        item: dict[str, Any] = {"role": m["role"]}
        content = text_of(m.get("content"))
        if m["role"] == "assistant":
            calls = m.get("tool_calls") or []
            if sent:
                item["content"] = m["content"]
            else:
                item["content"] = (content or None) if calls else (content or "")
            if calls:
                item["tool_calls"] = [
                    {
                        "id": tc["id"],
                        "type": tc.get("type", "function"),
                        "name": tc["function"]["name"],
                        "arguments": tc["function"]["arguments"],
                    }
                    for tc in calls
                ]
            reasoning = m.get("reasoning_content", m.get("reasoning"))
            if deepseek and index > last_user and reasoning is not None:
                item["reasoning_content"] = reasoning
        else:
            item["content"] = content or ""
        if m["role"] == "tool":
            item["tool_call_id"] = m["tool_call_id"]
        out.append(item)
    return out


def check_request(sent: dict[str, Any], path: str, record: dict[str, Any]) -> None:
    recorded = record["request"]
    body = recorded["body"]
    assert path == recorded["path"]
    assert sent["model"] == body["model"]
    deepseek = record["provider"] == "deepseek"
    assert normalized_messages(sent["messages"], deepseek, sent=True) == normalized_messages(
        body["messages"], deepseek
    )
    # Tool-call turns carry content null (never a missing key), arguments as JSON text.
    for m in sent["messages"]:
        if m.get("tool_calls"):
            assert "content" in m
            assert all(isinstance(tc["function"]["arguments"], str) for tc in m["tool_calls"])
    if deepseek:
        assert any("reasoning_content" in m for m in sent["messages"]) == any(
            "reasoning_content" in m for m in body["messages"]
        )
    if body.get("tools"):
        assert [t["type"] for t in sent["tools"]] == ["function"] * len(body["tools"])
        assert [
            (t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
            for t in sent["tools"]
        ] == [
            (
                t["function"]["name"],
                t["function"].get("description", ""),
                t["function"]["parameters"],
            )
            for t in body["tools"]
        ]
    else:
        assert "tools" not in sent
    for key in (
        "tool_choice",
        "parallel_tool_calls",
        "temperature",
        "seed",
        "max_tokens",
        "max_completion_tokens",
        "stream_options",
        *EXTRA_FIELDS,
    ):
        if body.get(key) is not None and (
            key not in ("tool_choice", "parallel_tool_calls") or body.get("tools")
        ):
            assert sent[key] == body[key], key
        else:
            assert key not in sent, key
    stop = body.get("stop")
    assert sent.get("stop") == ([stop] if isinstance(stop, str) else stop)
    assert sent.get("stream", False) == (body.get("stream") is True)
    assert set(sent) <= BUILT_FIELDS


# -- what the recorded response says -------------------------------------------------------------


def expected_from_json(body: dict[str, Any]) -> dict[str, Any]:
    choice = body["choices"][0]
    message = choice["message"]
    calls = [
        (tc["id"], tc["function"]["name"], tc["function"]["arguments"])
        for tc in message.get("tool_calls") or ()
    ]
    content = text_of(message.get("content"))
    return {
        "content": (content or None) if calls else content,
        "reasoning": message.get("reasoning_content", message.get("reasoning")),
        "calls": calls,
        "finish_reason": choice["finish_reason"],
        "model": body["model"],
        "usage": body.get("usage"),
    }


def expected_from_stream(text: str) -> dict[str, Any]:
    """Rebuild the message from the chunks: the straightforward way, one event per block."""
    content: list[str] = []
    reasoning: list[str] | None = None
    calls: dict[int, list[Any]] = {}
    finish = None
    usage = None
    model = None
    for block in text.split("\n\n"):
        payload = block.strip().removeprefix("data:").strip()
        if not payload or payload == "[DONE]":
            continue
        chunk = json.loads(payload)
        usage = chunk.get("usage") or usage
        model = chunk.get("model") or model
        for choice in chunk["choices"]:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            r = delta.get("reasoning_content", delta.get("reasoning"))
            if r is not None:
                reasoning = [*(reasoning or []), r]
            for tc in delta.get("tool_calls") or ():
                index = tc.get("index", len(calls))
                slot = calls.setdefault(index, [None, "", ""])
                slot[0] = slot[0] or tc.get("id")
                slot[1] = slot[1] or tc.get("function", {}).get("name", "")
                slot[2] += tc.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    call_list = [tuple(calls[i]) for i in sorted(calls)]
    joined = "".join(content)
    return {
        "content": (joined or None) if call_list else joined,
        "reasoning": None if reasoning is None else "".join(reasoning),
        "calls": call_list,
        "finish_reason": finish,
        "model": model,
        "usage": usage,
    }


def check_response(response: ModelResponse, expected: dict[str, Any]) -> None:
    message = response.message
    assert message.content == expected["content"]
    assert message.reasoning == expected["reasoning"]
    assert [(c.id, c.name, c.raw_arguments) for c in message.tool_calls] == expected["calls"]
    for call in message.tool_calls:
        assert call.arguments_error is None
        assert call.arguments == json.loads(call.raw_arguments or "{}")
    assert response.finish_reason == expected["finish_reason"]
    assert response.model_name == expected["model"]
    raw = expected["usage"]
    usage = response.usage
    if raw is None:
        assert usage.estimated is True
        return
    prompt_details = raw.get("prompt_tokens_details") or {}
    completion_details = raw.get("completion_tokens_details") or {}
    assert usage.input_tokens == raw["prompt_tokens"]
    assert usage.output_tokens == raw["completion_tokens"]
    assert usage.cached_tokens == max(
        prompt_details.get("cached_tokens") or 0,
        raw.get("prompt_cache_hit_tokens") or 0,
        raw.get("cached_tokens") or 0,
    )
    assert usage.reasoning_tokens == (completion_details.get("reasoning_tokens") or 0)
    assert usage.estimated is False
    extras = {
        k: v
        for k, v in raw.items()
        if isinstance(v, int)
        and v
        and k
        not in {
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
            "prompt_cache_hit_tokens",
            "cached_tokens",
        }
    }
    for parent, mapped in (
        ("prompt_tokens_details", "cached_tokens"),
        ("completion_tokens_details", "reasoning_tokens"),
    ):
        for k, v in (raw.get(parent) or {}).items():
            if isinstance(v, int) and not isinstance(v, bool) and v and k != mapped:
                extras[f"{parent}.{k}"] = v
    assert usage.details == extras


def check_error(error: ModelHTTPError, record: dict[str, Any]) -> None:
    response = record["response"]
    assert error.status == response["status"]
    assert error.retryable == (response["status"] == 429 or response["status"] >= 500)
    if "body" in response:
        wire = response["body"]["error"]
        assert error.provider_message == wire["message"]
        assert error.code == wire.get("code")  # null and integer codes included
        assert error.error_type == wire.get("type")
        assert error.param == wire.get("param")
        assert error.body == response["body"]
    else:
        assert error.provider_message == response["body_text"].strip()
        assert error.body == response["body_text"]
    assert json.dumps(error.provider_message, ensure_ascii=False) in str(error)
    retry_after = response["headers"].get("retry-after")
    assert error.retry_after == (float(retry_after) if retry_after else None)


# -- the tests -----------------------------------------------------------------------------------


def test_the_recordings_are_all_there() -> None:
    shared_path("conformance", "openai-wire")
    names = wire_files()
    assert len(names) == 51
    streams = [n for n in names if load(n)["response"].get("body_text", "").startswith("data:")]
    assert len(streams) == 14


@pytest.mark.parametrize("name", wire_files())
def test_recorded_exchange(name: str, server: FakeOpenAIServer) -> None:
    record = load(name)
    recorded_path = record["request"]["path"]
    prefix = recorded_path.removesuffix("/chat/completions")
    messages, tools, settings = inputs(record)
    model = OpenAIChatModel(
        record["request"]["body"]["model"],
        base_url=server.url + prefix,
        api_key="sk-test",
        retry=RetryPolicy(max_retries=0),
        **adapter_options(record),
    )
    server.queue(reply_for(record))
    status = record["response"]["status"]
    if status >= 400:
        with pytest.raises(ModelHTTPError) as caught:
            asyncio.run(model.request(messages, tools, settings))
        check_error(caught.value, record)
    else:
        response = asyncio.run(model.request(messages, tools, settings))
        body = record["response"]
        expected = (
            expected_from_json(body["body"])
            if "body" in body
            else expected_from_stream(body["body_text"])
        )
        check_response(response, expected)
    assert len(server.requests) == 1
    check_request(server.last.body, server.last.path, record)


#: Values read by eye from the recordings, so that the checks above cannot agree with the
#: adapter by sharing a mistake.
SPOT_CHECKS: dict[str, dict[str, Any]] = {
    "deepseek__reasoner-final-answer-after-tools-cache-hit.json": {
        "cached": 896,
        "input": 976,
        "reasoning_tokens": 25,
    },
    "deepseek__v4-stream-tool-result-followup.json": {
        "cached": 256,
        "input": 353,
        "finish": "stop",
    },
    "openai__usage-cached-tokens.json": {"cached": 1024, "input": 1144},
    "openrouter__finish-length-cached-tokens.json": {"cached": 2161, "finish": "length"},
    "mistral__text-cached-tokens.json": {"cached": 10},
    "together__text-finish-eos.json": {"finish": "eos"},
    "ollama__stream-forced-tool-call.json": {
        "calls": [("call_kve3oltz", "return_bool", {"value": True})],
        "finish": "stop",
    },
    "openai__stream-parallel-tool-calls-required.json": {
        "calls": [
            ("call_8Sp49rZGndlZALo0uq1XvA7A", "plus", {"a": 2, "b": 3}),
            ("call_u5dbdPz1mAis8zZVk4ZBqXgL", "minus", {"a": 3, "b": 2}),
        ]
    },
    "deepseek__reasoner-parallel-tool-calls-after-tool-result.json": {
        "calls": [
            ("call_00_6edlnw3Z1MgeMfey687g8451", "get_player_name", {}),
            ("call_01_km02sac7sHxNDPATKLZy7705", "roll_dice", {}),
        ],
        "content": "Let me get your name and roll the die!",
    },
    "cerebras__qwen3-coder-tool-call.json": {
        "calls": [("b8847f144", "final_result", {"city": "Paris", "country": "France"})]
    },
    "vllm__stream-finish-length.json": {"finish": "length", "estimated": True},
    "github-models__stream-after-retry.json": {"content": "2", "reasoning_tokens": 128},
}


@pytest.mark.parametrize("name", sorted(SPOT_CHECKS))
def test_spot_checks(name: str, server: FakeOpenAIServer) -> None:
    record = load(name)
    messages, tools, settings = inputs(record)
    model = OpenAIChatModel(
        record["request"]["body"]["model"],
        base_url=server.url + record["request"]["path"].removesuffix("/chat/completions"),
        api_key="sk-test",
        **adapter_options(record),
    )
    server.queue(reply_for(record))
    response = asyncio.run(model.request(messages, tools, settings))
    want = SPOT_CHECKS[name]
    if "cached" in want:
        assert response.usage.cached_tokens == want["cached"]
    if "input" in want:
        assert response.usage.input_tokens == want["input"]
    if "reasoning_tokens" in want:
        assert response.usage.reasoning_tokens == want["reasoning_tokens"]
    if "finish" in want:
        assert response.finish_reason == want["finish"]
    if "calls" in want:
        assert [(c.id, c.name, c.arguments) for c in response.message.tool_calls] == want["calls"]
    if "content" in want:
        assert response.message.content == want["content"]
    if "estimated" in want:
        assert response.usage.estimated is want["estimated"]


def test_github_429_with_retry_after_then_the_stream(server: FakeOpenAIServer) -> None:
    """The two GitHub Models recordings make a retry: 429 Retry-After 37, then the stream."""
    first = load("github-models__error-429-retry-after-text-body.json")
    second = load("github-models__stream-after-retry.json")
    server.queue(reply_for(first), reply_for(second))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    messages, tools, settings = inputs(second)
    model = OpenAIChatModel(
        "gpt-5",
        base_url=server.url + "/inference",
        api_key="sk-test",
        retry=RetryPolicy(max_retries=2, sleep=sleep),
        **adapter_options(second),
    )
    response = asyncio.run(model.request(messages, tools, settings))
    assert waits == [37.0]
    assert response.message.content == "2"
    assert [r.body for r in server.requests] == [server.requests[0].body] * 2
    assert server.requests[0].path == "/inference/chat/completions"


def test_deepseek_thinking_turn_round_trip(server: FakeOpenAIServer) -> None:
    """Interaction 0's response, fed back through the adapter, gives interaction 1's request."""
    first = load("deepseek__reasoner-tool-call-with-reasoning.json")
    second = load("deepseek__reasoner-parallel-tool-calls-after-tool-result.json")
    messages, tools, settings = inputs(first)
    model = OpenAIChatModel(
        "deepseek-reasoner", base_url=server.url, api_key="sk-test", send_reasoning=True
    )
    server.queue(reply_for(first))
    reply = asyncio.run(model.request(messages, tools, settings)).message
    recorded_next = second["request"]["body"]["messages"]
    assistant = recorded_next[3]
    assert reply.reasoning == assistant["reasoning_content"]
    assert reply.content == assistant["content"]
    assert [(c.id, c.name, c.raw_arguments) for c in reply.tool_calls] == [
        (tc["id"], tc["function"]["name"], tc["function"]["arguments"])
        for tc in assistant["tool_calls"]
    ]
    # The parsed reply goes into the next request exactly as DeepSeek saw it.
    follow_up = [*messages, reply, *(message_from_wire(m) for m in recorded_next[4:])]
    server.queue(reply_for(second))
    asyncio.run(model.request(follow_up, inputs(second)[1], inputs(second)[2]))
    assert normalized_messages(
        server.last.body["messages"], True, sent=True
    ) == normalized_messages(recorded_next, True)
    assert server.last.body["messages"][3]["reasoning_content"] == assistant["reasoning_content"]


def test_wire_dir_constant_points_at_the_vendored_folder() -> None:
    assert WIRE_DIR.parts[-4:] == ("tests", "data", "conformance", "openai-wire")
