"""The SDK models: any toolproof model behind the SDK's ``Model`` interface, and a scripted one.

Also converts the SDK's input items to messages and back.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents import FunctionTool
from agents.items import ModelResponse as AgentsModelResponse
from agents.models.interface import Model as AgentsModelBase
from agents.tracing import generation_span
from agents.usage import Usage as AgentsUsage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolCall, ToolDefinition
from toolproof.errors import UserError
from toolproof.models._base import Model
from toolproof.models.fake import RequestView, ScriptedModel, ScriptItem

__all__ = ["AgentsModel", "AgentsRequest", "ScriptedAgentsModel"]


# -- input items <-> messages ---------------------------------------------------------------------


def _item(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped: dict[str, Any] = dump(exclude_unset=True)
        return dumped
    return {}


def content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for block in content:
        block = _item(block)
        if block.get("type") in ("input_text", "output_text", "text"):
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "refusal":
            parts.append(str(block.get("refusal", "")))
    return "".join(parts)


def items_to_messages(system: str | None, items: str | Sequence[Any]) -> list[Message]:
    """Convert the SDK's Responses-format input items into toolproof messages."""
    out: list[Message] = [Message.system(system)] if system else []
    if isinstance(items, str):
        out.append(Message.user(items))
        return out
    names: dict[str, str] = {}
    for raw in items:
        item = _item(raw)
        kind = item.get("type")
        role = item.get("role")
        if kind == "function_call":
            call = ToolCall.from_json_arguments(
                str(item.get("name", "")), item.get("arguments"), str(item.get("call_id", ""))
            )
            names[call.id] = call.name
            if out and out[-1].role == "assistant" and out[-1].content is None:
                out[-1].tool_calls.append(call)
            else:
                out.append(Message.assistant(None, [call]))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id", ""))
            output = item.get("output")
            text = output if isinstance(output, str) else content_text(output)
            out.append(
                Message(role="tool", content=text, tool_call_id=call_id, name=names.get(call_id))
            )
        elif role in ("system", "developer"):
            out.append(Message.system(content_text(item.get("content"))))
        elif role == "assistant":
            out.append(Message.assistant(content_text(item.get("content"))))
        elif role == "user" or kind == "message":
            out.append(Message.user(content_text(item.get("content"))))
    return out


def _output_items(message: Message) -> list[Any]:
    items: list[Any] = []
    if message.content:
        items.append(
            ResponseOutputMessage(
                id=f"msg_{uuid.uuid4().hex[:12]}",
                content=[
                    ResponseOutputText(text=message.content, type="output_text", annotations=[])
                ],
                role="assistant",
                status="completed",
                type="message",
            )
        )
    for call in message.tool_calls:
        items.append(
            ResponseFunctionToolCall(
                id=f"fc_{call.id}",
                call_id=call.id,
                name=call.name,
                arguments=call.arguments_json(),
                type="function_call",
            )
        )
    return items


# -- models ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class AgentsRequest(RequestView):
    """One request an :class:`AgentsModel` received.

    Attributes:
        messages: The request as toolproof messages (system instructions first).
        tools: The tools offered.
        input: The input items exactly as the SDK passed them.
    """

    messages: list[Message]
    tools: list[ToolDefinition] = field(default_factory=list)
    input: Any = None


class AgentsModel(AgentsModelBase):
    """Any toolproof model as a model of the OpenAI Agents SDK.

    Args:
        backend: The toolproof model that answers.

    Attributes:
        requests: Every request received, in order (:class:`AgentsRequest`).
    """

    def __init__(self, backend: Model) -> None:
        if not isinstance(backend, Model):
            raise UserError(f"AgentsModel(backend=...) needs a toolproof Model, got {backend!r}")
        self.backend = backend
        self.requests: list[AgentsRequest] = []
        self.responses: list[ModelResponse] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> AgentsModelResponse:
        """Answer one request of the SDK's runner from the backend model."""
        messages = items_to_messages(system_instructions, input)
        definitions = [
            ToolDefinition(t.name, t.description or "", dict(t.params_json_schema))
            for t in tools
            if isinstance(t, FunctionTool)
        ]
        self.requests.append(AgentsRequest(messages, definitions, input))
        settings = ModelSettings(
            temperature=getattr(model_settings, "temperature", None),
            max_tokens=getattr(model_settings, "max_tokens", None),
            tool_choice=_choice(getattr(model_settings, "tool_choice", None)),
        )
        enabled = bool(getattr(tracing, "is_disabled", lambda: False)() is False)
        include = bool(getattr(tracing, "include_data", lambda: False)())
        with generation_span(
            model=self.backend.name, model_config=settings.to_dict(), disabled=not enabled
        ) as span:
            response = await self.backend.request(messages, definitions, settings)
            self.responses.append(response)
            usage = response.usage
            span.span_data.usage = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
            }
            if include:
                span.span_data.input = [_chat_dict(m) for m in messages]
                span.span_data.output = [_chat_dict(response.message)]
        return AgentsModelResponse(
            output=_output_items(response.message),
            usage=AgentsUsage(
                requests=1,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                total_tokens=usage.total_tokens,
            ),
            response_id=None,
        )

    def stream_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: list[Any],
        output_schema: Any,
        handoffs: list[Any],
        tracing: Any,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> AsyncIterator[Any]:
        """Streaming is not scripted: use ``Runner.run`` with toolproof's models."""
        raise UserError(
            "toolproof's Agents SDK models do not stream; use Runner.run (or run_sync) in tests"
        )


class ScriptedAgentsModel(AgentsModel):
    """A model for the SDK's ``Runner`` that answers from a toolproof script.

    Args:
        script: Responses in order: strings, ``call(...)``, lists of calls, exceptions.
        name: The model name recorded in traces.

    Example:
        ```python
        model = ScriptedAgentsModel([call("get_weather", city="Paris"), "Sunny in Paris."])
        agent = Agent(name="assistant", model=model, tools=[get_weather])
        result = await Runner.run(agent, "Weather in Paris?")
        ```
    """

    def __init__(self, script: Sequence[ScriptItem], *, name: str = "scripted") -> None:
        super().__init__(ScriptedModel(script, name=name))

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used."""
        backend = self.backend
        assert isinstance(backend, ScriptedModel)
        return backend.remaining


def _choice(choice: Any) -> str | None:
    if choice is None or isinstance(choice, str):
        return None if choice is None else str(choice)
    return getattr(choice, "name", None)


def _chat_dict(message: Message) -> dict[str, Any]:
    data: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        data["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments_json()},
            }
            for c in message.tool_calls
        ]
    if message.tool_call_id:
        data["tool_call_id"] = message.tool_call_id
    return data
