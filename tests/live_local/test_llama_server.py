"""The OpenAI-compatible adapter against a real llama.cpp server and a tiny real model.

What is checked is the plumbing, on answers that greedy sampling makes repeatable: the
server accepts the requests toolproof builds (tools, tool results, histories with
malformed arguments), and toolproof reads back tool calls, usage and finish reasons the
same way whether the answer is streamed or not, natively or through the text protocol.
A few-shot history makes the model call the tool; nothing grades what it says.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conftest import LlamaServer
from toolproof import Agent, tool
from toolproof._messages import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolDefinition,
    ToolResult,
)
from toolproof.models import Model, OpenAIChatModel, model_from_string

pytestmark = pytest.mark.usefixtures("allow_requests")

SETTINGS = ModelSettings(temperature=0.0, max_tokens=32, seed=1)


@tool
def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: The city.
    """
    return f"{city}: sunny, 25 C"


TOOLS = [get_weather.definition]


def few_shot(city: str) -> list[Message]:
    """Three solved examples, then the question: enough for the model to call the tool."""
    messages = [Message.system("Call get_weather for every question.")]
    for index, example in enumerate(["Paris", "London", "Madrid"]):
        call = ToolCall("get_weather", {"city": example}, f"c{index}")
        messages += [
            Message.user(f"Weather in {example}?"),
            Message.assistant(None, [call]),
            Message.tool(ToolResult(f"c{index}", "get_weather", "ok", f"{example}: sunny")),
            Message.assistant(f"{example} is sunny."),
        ]
    messages.append(Message.user(f"Weather in {city}?"))
    return messages


def ask(model: Model, messages: Sequence[Message], tools: Sequence[ToolDefinition] = TOOLS):
    async def go() -> ModelResponse:
        try:
            return await model.request(list(messages), list(tools), SETTINGS)
        finally:
            await model.aclose()

    return asyncio.run(go())


def adapter(server: LlamaServer, **options: Any) -> OpenAIChatModel:
    options.setdefault("retry", 0)
    return OpenAIChatModel("gemma-3-270m", base_url=server.base_url, **options)


def test_native_tool_calls_usage_and_finish_reason_match_the_server(
    llama_server: LlamaServer,
) -> None:
    messages = few_shot("Rome")
    model = adapter(llama_server)
    plain = ask(model, messages)
    streamed = ask(adapter(llama_server, stream=True), messages)
    status, raw = llama_server.post(model.build_body(messages, TOOLS, SETTINGS))
    assert status == 200, raw

    # the tool call, parsed the same way from the plain and the streamed answer
    for response in (plain, streamed):
        [call] = response.message.tool_calls
        assert (call.name, call.arguments, call.arguments_error) == (
            "get_weather",
            {"city": "Rome"},
            None,
        )
        assert call.id  # the server's id, kept
    # what toolproof read is what the server said
    choice = raw["choices"][0]
    wire_call = choice["message"]["tool_calls"][0]["function"]
    assert plain.message.tool_calls[0].raw_arguments == wire_call["arguments"]
    assert plain.finish_reason == streamed.finish_reason == choice["finish_reason"]
    for response in (plain, streamed):
        usage = response.usage
        assert not usage.estimated
        assert usage.input_tokens == raw["usage"]["prompt_tokens"] > 300
        assert usage.output_tokens == raw["usage"]["completion_tokens"] > 0
    assert streamed.usage.cached_tokens > 0  # the same prompt again: the server's cache


def test_text_answers_streamed_and_plain_agree_and_length_is_reported(
    llama_server: LlamaServer,
) -> None:
    messages = [Message.user("Write a long story about a cat.")]
    short = ModelSettings(temperature=0.0, max_tokens=6, seed=1)

    async def both() -> tuple[ModelResponse, ModelResponse]:
        plain_model, stream_model = adapter(llama_server), adapter(llama_server, stream=True)
        try:
            plain = await plain_model.request(messages, [], short)
            streamed = await stream_model.request(messages, [], short)
        finally:
            await plain_model.aclose()
            await stream_model.aclose()
        return plain, streamed

    plain, streamed = asyncio.run(both())
    assert plain.message.content == streamed.message.content
    assert plain.message.content  # six tokens of text
    assert plain.finish_reason == streamed.finish_reason == "length"
    assert plain.usage.output_tokens == streamed.usage.output_tokens == 6
    assert plain.usage.input_tokens == streamed.usage.input_tokens > 0


@pytest.mark.parametrize("stream", ["false", "true"])
def test_the_text_protocol_reads_a_tool_call_from_the_models_text(
    llama_server: LlamaServer, stream: str
) -> None:
    model = model_from_string(
        f"openai-compatible:gemma-3-270m?base_url={llama_server.base_url}&protocol=text"
        f"&max_retries=0&stream={stream}"
    )
    response = ask(model, few_shot("Rome"))
    [call] = response.message.tool_calls
    assert (call.name, call.arguments, call.arguments_error) == (
        "get_weather",
        {"city": "Rome"},
        None,
    )
    assert "<tool_call>" not in (response.message.content or "")
    assert not response.usage.estimated and response.usage.input_tokens > 300


def test_a_history_with_malformed_arguments_is_accepted(llama_server: LlamaServer) -> None:
    malformed = ToolCall.from_json_arguments("get_weather", '{"city": "Rome"', "bad1")
    assert malformed.arguments_error is not None
    messages = [
        *few_shot("Rome"),
        Message.assistant(None, [malformed]),
        Message.tool(ToolResult("bad1", "get_weather", "error", "arguments are not valid JSON")),
    ]
    model = adapter(llama_server)
    # The server itself rejects invalid JSON in the history...
    body = model.build_body(messages, TOOLS, SETTINGS)
    body["messages"][-2]["tool_calls"][0]["function"]["arguments"] = malformed.raw_arguments
    status, raw = llama_server.post(body)
    assert status == 500
    assert "Failed to parse tool call arguments as JSON" in raw["error"]["message"]
    # ...so toolproof sends JSON, and the model gets its turn to correct itself.
    response = ask(model, messages)
    assert response.usage.output_tokens > 0 and not response.usage.estimated
    assert response.finish_reason in ("stop", "length", "tool_calls")


class _MalformedFirst(Model):
    """The first answer is a call with cut-off arguments; the real model answers after it."""

    def __init__(self, real: Model) -> None:
        self.real = real
        self.name = real.name
        self.calls = 0

    async def request(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolDefinition],
        settings: ModelSettings,
    ) -> ModelResponse:
        self.calls += 1
        if self.calls == 1:
            call = ToolCall.from_json_arguments("get_weather", '{"city": "Ro', "call_x")
            return ModelResponse(Message.assistant(None, [call]))
        return await self.real.request(messages, tools, settings)

    async def aclose(self) -> None:
        await self.real.aclose()


def test_an_agent_run_goes_on_after_malformed_arguments(llama_server: LlamaServer) -> None:
    model = _MalformedFirst(adapter(llama_server))
    agent = Agent(model, [get_weather], max_steps=2, settings=SETTINGS)
    result = agent.run_sync("Weather in Rome? Call get_weather.")
    trace = result.trace
    assert trace.stop_reason in ("final", "max_steps"), trace.stop_detail
    first = trace.steps[0]
    assert first.response.tool_calls[0].raw_arguments == '{"city": "Ro'  # kept exactly
    assert first.tool_results[0].error_type == "InvalidArguments"
    assert len(trace.steps) == 2  # the real model answered the request with that history
    assert not trace.steps[1].usage.estimated


TOOLS_FILE = '''
from toolproof import tool


@tool
def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: The city.
    """
    return f"{city}: sunny, 25 C"
'''


@pytest.mark.timeout(400)
def test_toolproof_chat_end_to_end(llama_server: LlamaServer, tmp_path: Path) -> None:
    (tmp_path / "weather_tools.py").write_text(TOOLS_FILE, encoding="utf-8")
    spec = f"openai-compatible:gemma-3-270m?base_url={llama_server.base_url}&stream=true"
    env = dict(os.environ, TOOLPROOF_ALLOW_MODEL_REQUESTS="1", PYTHONUTF8="1")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolproof",
            "chat",
            "--model",
            spec,
            "--tools",
            "weather_tools.py",
            "--max-steps",
            "2",
        ],
        input="What is the weather in Paris? Use the tool.\nexit\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert "model openai-compatible:gemma-3-270m - tools: get_weather" in out
    assert re.search(r"\[step 1\] model -> .* \(\d+ ms, \d+ in / \d+ out tokens", out), out
    assert "error:" not in out, out  # whatever the model wrote, the server accepted each request
    assert re.search(r"\(\d model calls? - \d tool calls? - [\d.]+ s - \d+ tokens\)", out), out
    assert out.rstrip().endswith("bye")
    assert "Traceback" not in out + done.stderr
