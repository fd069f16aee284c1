"""The OpenAI chat-completions wire, server side: requests in, completions and streams out."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolCall, ToolDefinition

__all__ = ["BadRequest", "ChatRequest", "completion_body", "parse_request", "stream_chunks"]


class BadRequest(Exception):
    """A request body the server cannot read (answered with HTTP 400)."""


@dataclass(slots=True)
class ChatRequest:
    """One ``POST /v1/chat/completions`` body, read into toolproof's types."""

    model: str
    messages: list[Message]
    tools: list[ToolDefinition] = field(default_factory=list)
    settings: ModelSettings = field(default_factory=ModelSettings)
    stream: bool = False
    include_usage: bool = False


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
    return str(content)


def _message(item: Any, position: int) -> Message:
    if not isinstance(item, dict):
        raise BadRequest(f"messages[{position}] must be an object")
    role = item.get("role")
    content = _text(item.get("content"))
    if role in ("system", "developer"):
        return Message("system", content or "")
    if role == "user":
        return Message("user", content or "")
    if role == "tool":
        call_id = item.get("tool_call_id")
        return Message("tool", content or "", tool_call_id=str(call_id or ""))
    if role == "assistant":
        calls: list[ToolCall] = []
        raw_calls = item.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise BadRequest(f"messages[{position}].tool_calls must be a list")
        for index, raw in enumerate(raw_calls):
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict):
                raise BadRequest(f"messages[{position}].tool_calls[{index}] has no function")
            arguments = function.get("arguments")
            if isinstance(arguments, (dict, list)):
                arguments = json.dumps(arguments, ensure_ascii=False)
            calls.append(
                ToolCall.from_json_arguments(
                    str(function.get("name") or ""),
                    arguments if isinstance(arguments, str) else None,
                    str(raw.get("id") or ""),
                )
            )
        return Message("assistant", content, tool_calls=calls)
    raise BadRequest(f"messages[{position}].role must be system, user, assistant or tool")


def parse_request(raw: bytes) -> ChatRequest:
    """Read a chat-completions request body.

    Raises:
        BadRequest: The body is not JSON, or not a chat-completions request.
    """
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadRequest("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list")
    tools: list[ToolDefinition] = []
    raw_tools = body.get("tools") or []
    if not isinstance(raw_tools, list):
        raise BadRequest("'tools' must be a list")
    for index, item in enumerate(raw_tools):
        function = item.get("function") if isinstance(item, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest(f"tools[{index}] must be {{type: function, function: {{name, ...}}}}")
        parameters = function.get("parameters")
        tools.append(
            ToolDefinition(
                function["name"],
                str(function.get("description") or ""),
                parameters if isinstance(parameters, dict) else {"type": "object"},
            )
        )
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        choice = (choice.get("function") or {}).get("name")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    stop = body.get("stop")
    settings = ModelSettings(
        temperature=body["temperature"] if isinstance(body.get("temperature"), float) else None,
        max_tokens=max_tokens if isinstance(max_tokens, int) else None,
        seed=body["seed"] if isinstance(body.get("seed"), int) else None,
        stop=[stop] if isinstance(stop, str) else stop if isinstance(stop, list) else None,
        tool_choice=choice if isinstance(choice, str) else None,
        parallel_tool_calls=body.get("parallel_tool_calls")
        if isinstance(body.get("parallel_tool_calls"), bool)
        else None,
    )
    options = body.get("stream_options")
    return ChatRequest(
        model=str(body.get("model") or "toolproof"),
        messages=[_message(m, i) for i, m in enumerate(messages)],
        tools=tools,
        settings=settings,
        stream=body.get("stream") is True,
        include_usage=isinstance(options, dict) and options.get("include_usage") is True,
    )


def _wire_calls(message: Message) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.raw_arguments or c.arguments_json()},
        }
        for c in message.tool_calls
    ]


def _usage(response: ModelResponse) -> dict[str, Any]:
    usage = response.usage
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def finish_reason(response: ModelResponse) -> str:
    """The OpenAI finish reason of a response."""
    if response.message.tool_calls:
        return "tool_calls"
    return response.finish_reason if response.finish_reason in ("length", "stop") else "stop"


def completion_body(response: ModelResponse, model: str) -> dict[str, Any]:
    """A ``chat.completion`` object for ``response``."""
    message: dict[str, Any] = {"role": "assistant", "content": response.message.content}
    if response.message.tool_calls:
        message["tool_calls"] = _wire_calls(response.message)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": response.model_name or model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(response)}],
        "usage": _usage(response),
    }


def stream_chunks(response: ModelResponse, model: str, include_usage: bool) -> list[bytes]:
    """The server-sent events of a streamed ``response`` (ending with ``[DONE]``)."""
    base = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": response.model_name or model,
    }

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        item = dict(base)
        item["choices"] = [{"index": 0, "delta": delta, "finish_reason": reason}]
        if include_usage:
            item["usage"] = None
        return item

    events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
    content = response.message.content or ""
    for start in range(0, len(content), 16):
        events.append(chunk({"content": content[start : start + 16]}))
    for index, call in enumerate(_wire_calls(response.message)):
        arguments = call["function"]["arguments"]
        head = {"index": index, "id": call["id"], "type": "function"}
        head["function"] = {"name": call["function"]["name"], "arguments": ""}
        events.append(chunk({"tool_calls": [head]}))
        for start in range(0, len(arguments), 32):
            piece = {"index": index, "function": {"arguments": arguments[start : start + 32]}}
            events.append(chunk({"tool_calls": [piece]}))
    events.append(chunk({}, finish_reason(response)))
    if include_usage:
        tail = dict(base)
        tail["choices"] = []
        tail["usage"] = _usage(response)
        events.append(tail)
    out = [b"data: " + json.dumps(e, ensure_ascii=False).encode() + b"\n\n" for e in events]
    out.append(b"data: [DONE]\n\n")
    return out


def error_body(message: str, kind: str, code: str | None = None, **extra: Any) -> dict[str, Any]:
    """An OpenAI-style error object."""
    error: dict[str, Any] = {"message": message, "type": kind, "code": code}
    error.update(extra)
    return {"error": error}
