"""The chat-completions wire format: tool calls and usage read from JSON, streamed chunks."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from toolproof._messages import (
    Message,
    ModelResponse,
    ToolCall,
    Usage,
    plain,
)
from toolproof._text import clip
from toolproof.errors import (
    UnexpectedModelOutput,
)

if TYPE_CHECKING:
    import aiohttp


#: The key under which arguments that are not a JSON object are sent back to the provider.
UNPARSED_ARGUMENTS_KEY = "unparsed_arguments"

_USAGE_MAPPED = frozenset(
    {
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "prompt_cache_hit_tokens",
        "cached_tokens",
        "prompt_tokens_details.cached_tokens",
        "completion_tokens_details.reasoning_tokens",
    }
)

_PLAIN_USAGE = frozenset({"prompt_tokens", "completion_tokens", "total_tokens"})


class _Named(Protocol):
    """What the stream reader needs of its model: names for messages and the default model."""

    name: str
    model: str


class StreamState:
    """The assistant message being rebuilt from chat-completion chunks."""

    __slots__ = (
        "calls",
        "content",
        "finish_reason",
        "model",
        "parts",
        "reasoning",
        "saw_choice",
        "usage",
    )

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] | None = None
        self.calls: list[dict[str, Any]] = []
        self.finish_reason: str | None = None
        self.model: str | None = None
        self.usage: Any = None
        self.saw_choice = False
        self.parts = 0  # pieces of the answer received (content, calls, finish, usage)

    def add(self, data: str, event: str, name: str) -> bool:
        """Apply one event; ``True`` when the stream is complete (``[DONE]``)."""
        if data == "[DONE]":
            return True
        if not data:
            return False
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise UnexpectedModelOutput(
                f"{name}: a streamed chunk is not valid JSON: {clip(data, 200, flatten=False)!r}",
                body=data,
            ) from None
        if not isinstance(chunk, dict):
            raise UnexpectedModelOutput(f"{name}: a streamed chunk is not a JSON object", data)
        if event == "error" or chunk.get("error"):
            detail = provider_error_text(chunk.get("error")) or clip(data, 200, flatten=False)
            raise UnexpectedModelOutput(f"{name}: the stream reported an error: {detail}", data)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
            self.parts += 1
        if chunk.get("model"):
            self.model = chunk["model"]
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                continue
            self.saw_choice = True
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta)
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
                self.parts += 1
        return False

    def _delta(self, delta: dict[str, Any]) -> None:
        text = content_text(delta.get("content"))
        if text:
            self.content.append(text)
            self.parts += 1
        reasoning = delta.get("reasoning_content")
        if not isinstance(reasoning, str):
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str):
            if self.reasoning is None:
                self.reasoning = []
            self.reasoning.append(reasoning)
            self.parts += bool(reasoning)
        for item in delta.get("tool_calls") or ():
            if not isinstance(item, dict):
                continue
            slot = self._slot(item)
            if item.get("id") and not slot["id"]:
                slot["id"] = item["id"]
            function = item.get("function")
            if isinstance(function, dict):
                if function.get("name") and not slot["name"]:
                    slot["name"] = function["name"]
                    self.parts += 1
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    slot["arguments"].append(arguments)
                    self.parts += bool(arguments)
                elif isinstance(arguments, (dict, list)):
                    slot["arguments"].append(json.dumps(arguments, ensure_ascii=False))
                    self.parts += 1

    def _slot(self, item: dict[str, Any]) -> dict[str, Any]:
        index = item.get("index")
        if isinstance(index, int):
            for slot in self.calls:
                if slot["index"] == index:
                    return slot
        elif self.calls and not (item.get("id") and item["id"] != self.calls[-1]["id"]):
            return self.calls[-1]  # no index: a continuation of the last call
        slot = {"index": index, "id": None, "name": "", "arguments": []}
        self.calls.append(slot)
        return slot

    def result(self, model: _Named, messages: Sequence[Message]) -> ModelResponse:
        if not self.saw_choice:
            raise UnexpectedModelOutput(f"{model.name}: the response stream had no choices")
        calls = [
            decode_tool_call(
                {
                    "id": s["id"],
                    "function": {"name": s["name"], "arguments": "".join(s["arguments"])},
                },
                position,
            )
            for position, s in enumerate(self.calls)
        ]
        content: str | None = "".join(self.content)
        if calls and not content:
            content = None
        reasoning = None if self.reasoning is None else "".join(self.reasoning)
        message = Message(role="assistant", content=content, tool_calls=calls, reasoning=reasoning)
        return ModelResponse(
            message=message,
            usage=decode_usage(self.usage, messages, message),
            model_name=self.model or model.model,
            finish_reason=self.finish_reason,
        )


async def drain_response(response: aiohttp.ClientResponse) -> None:
    """Read the end of the body after ``[DONE]`` so that the connection can be reused.

    A server that keeps the stream open only costs that connection (it is closed).
    """
    import asyncio

    import aiohttp

    with contextlib.suppress(asyncio.TimeoutError, aiohttp.ClientError):
        await asyncio.wait_for(response.content.read(), 1.0)


def wire_arguments(call: ToolCall) -> str:
    """A call's arguments as sent back in the conversation: always a JSON object.

    Valid arguments go back byte for byte. Servers that parse the history (llama.cpp's
    server answers HTTP 500 "Failed to parse tool call arguments as JSON") reject anything
    else, so blank arguments go back as ``{}`` and arguments that are not a JSON object as
    ``{"unparsed_arguments": "<the model's text>"}``: the model still sees what it wrote,
    and the error result that follows tells it what to fix. The trace keeps the raw text.
    """
    if call.arguments_error is not None:
        return json.dumps(
            {UNPARSED_ARGUMENTS_KEY: call.raw_arguments or ""},
            ensure_ascii=False,
            separators=(", ", ": "),
        )
    text = call.arguments_json()
    if not text.strip():
        return "{}"
    if ("NaN" in text or "Infinity" in text) and not _strict_json(text):
        # Python reads NaN and Infinity; the JSON parsers of servers do not.
        return json.dumps(
            {UNPARSED_ARGUMENTS_KEY: text}, ensure_ascii=False, separators=(", ", ": ")
        )
    return text


def _strict_json(text: str) -> bool:
    def reject(constant: str) -> Any:
        raise ValueError(constant)

    try:
        json.loads(text, parse_constant=reject)
    except (ValueError, RecursionError):
        return False
    return True


def decode_tool_call(item: dict[str, Any], position: int) -> ToolCall:
    function = item.get("function")
    if not isinstance(function, dict):
        function = {}
    name = function.get("name")
    arguments = function.get("arguments")
    if isinstance(arguments, (dict, list)):  # some servers send an object, not JSON text
        arguments = json.dumps(arguments, ensure_ascii=False)
    elif arguments is not None and not isinstance(arguments, str):
        arguments = str(arguments)
    call_id = item.get("id")
    name = name if isinstance(name, str) else ""
    call_id = call_id if isinstance(call_id, str) and call_id else f"call_{position}"
    if arguments:
        parsed = _decode_object(arguments)
        if parsed is not None:
            return ToolCall(name, parsed, call_id, arguments)
    return ToolCall.from_json_arguments(name, arguments, call_id)


def _decode_object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` holds, read by pydantic-core, when it is plain JSON data.

    ``None`` for anything else (not JSON, not an object, ``NaN``, lone surrogates, deep
    nesting, huge integers): ``ToolCall.from_json_arguments`` then reads the text with
    ``json`` and says what is wrong, as it always did. What both read, they read alike.
    """
    global _FROM_JSON
    if _FROM_JSON is None:
        from pydantic_core import from_json

        _FROM_JSON = from_json
    try:
        parsed = _FROM_JSON(text, allow_inf_nan=False)
    except ValueError:
        return None
    if type(parsed) is not dict or not plain(parsed, 0):
        return None
    return parsed


_FROM_JSON: Any = None


def content_text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [
            p["text"]
            for p in content
            if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)
        ]
        return "".join(parts)
    return str(content)


def decode_usage(raw: Any, messages: Sequence[Message], message: Message) -> Usage:
    if not isinstance(raw, dict) or (
        raw.get("prompt_tokens") is None and raw.get("completion_tokens") is None
    ):
        # The provider reported no usage (some servers do not, when streaming): estimate it
        # so that budgets and costs still see the request.
        from toolproof._tokens import estimate_message_tokens

        return Usage(
            input_tokens=sum(estimate_message_tokens(m) for m in messages),
            output_tokens=estimate_message_tokens(message),
            requests=1,
            estimated=True,
        )
    if raw.keys() <= _PLAIN_USAGE:  # only the three counters: no details to collect
        prompt, completion = raw.get("prompt_tokens"), raw.get("completion_tokens")
        return Usage(  # by position: see Message.system
            prompt if type(prompt) is int else 0,
            completion if type(completion) is int else 0,
            0,
            0,
            1,
        )
    details: dict[str, int] = {}
    _flatten(raw, "", details)
    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    cached = max(
        _int(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else 0,
        _int(raw.get("prompt_cache_hit_tokens")),  # DeepSeek
        _int(raw.get("cached_tokens")),  # Together
    )
    reasoning = (
        _int(completion_details.get("reasoning_tokens"))
        if isinstance(completion_details, dict)
        else 0
    )
    for key in _USAGE_MAPPED:
        details.pop(key, None)
    return Usage(
        input_tokens=_int(raw.get("prompt_tokens")),
        output_tokens=_int(raw.get("completion_tokens")),
        cached_tokens=cached,
        reasoning_tokens=reasoning,
        requests=1,
        details=details,
    )


def _flatten(raw: dict[str, Any], prefix: str, out: dict[str, int]) -> None:
    """Non-zero integer counters of a usage block, nested keys joined with dots."""
    for key, value in raw.items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int):
            if value:
                out[prefix + key] = value
        elif isinstance(value, dict) and not prefix:
            _flatten(value, key + ".", out)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def wire_tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def provider_error_text(error: Any) -> str | None:
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str):
            return message
        return clip(json.dumps(error, ensure_ascii=False), 200, flatten=False)
    if error:
        return clip(json.dumps(error, ensure_ascii=False, default=str), 200, flatten=False)
    return None


def amend_error(exc: BaseException, note: str) -> None:
    message = str(exc).rstrip(".")
    exc.args = (f"{message} ({note}).", *exc.args[1:])
