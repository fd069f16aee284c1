"""Chat models: any toolproof model behind LangChain's chat-model interface, and a scripted one."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from toolproof._messages import Message, ModelResponse, ModelSettings, ToolDefinition
from toolproof._tools import Tool
from toolproof.errors import UserError
from toolproof.integrations.langchain._messages import (
    _text,
    ai_message,
    run_sync,
    to_toolproof_messages,
)
from toolproof.models._base import Model
from toolproof.models.fake import ScriptedModel, ScriptItem

__all__ = ["ChatRequest", "ScriptedChatModel", "ToolproofChatModel"]


# -- chat models -----------------------------------------------------------------------------------


@dataclass(slots=True)
class ChatRequest:
    """One request a :class:`ToolproofChatModel` received.

    Attributes:
        messages: The LangChain messages, as the agent sent them.
        tools: The bound tools, in OpenAI format (``{"type": "function", "function": ...}``).
        tool_choice: The ``tool_choice`` passed to ``bind_tools``, if any.
    """

    messages: list[BaseMessage]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Any = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools bound for this request."""
        return [t["function"]["name"] for t in self.tools]

    @property
    def last(self) -> BaseMessage:
        """The last message of the request."""
        return self.messages[-1]


class ToolproofChatModel(BaseChatModel):
    """Any toolproof :class:`~toolproof.models.Model` as a LangChain chat model.

    It supports ``bind_tools``, ``invoke``/``ainvoke``, ``stream``/``astream`` and callbacks,
    and records every request in :attr:`requests`.

    Args:
        backend: The toolproof model that answers (scripted, function, replay or a real
            adapter).
        check_tool_calls: Refuse responses that call a tool which is not bound, or pass
            arguments its schema rejects (on for scripted models: a script that does not fit
            the agent is a test bug).
        settings: Generation settings sent with every request.

    Attributes:
        requests: Every request received, in order (:class:`ChatRequest`).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    backend: Any
    check_tool_calls: bool = False
    settings: Any = None
    requests: list[ChatRequest] = Field(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "toolproof"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": getattr(self.backend, "name", "toolproof")}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> Any:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"] = "toolproof"
        params["ls_model_name"] = getattr(self.backend, "name", "toolproof")
        return params

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """Bind tools to the model; returns a runnable that sends them with every request.

        Tools may be LangChain tools, functions, pydantic models, toolproof tools or OpenAI
        tool dicts.
        """
        formatted = [_openai_tool(t) for t in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    # -- generation ----------------------------------------------------------------------------

    async def _respond(
        self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]
    ) -> tuple[ModelResponse, AIMessage]:
        tools = list(kwargs.get("tools") or [])
        tool_choice = kwargs.get("tool_choice")
        with self._lock:
            self.requests.append(ChatRequest(list(messages), tools, tool_choice))
        backend = self.backend
        if not isinstance(backend, Model):
            raise UserError(
                f"ToolproofChatModel(backend=...) needs a toolproof Model, got {backend!r}"
            )
        definitions = [
            ToolDefinition(
                t["function"]["name"],
                t["function"].get("description", ""),
                t["function"].get("parameters") or {"type": "object", "properties": {}},
            )
            for t in tools
        ]
        base = self.settings if isinstance(self.settings, ModelSettings) else ModelSettings()
        settings = base.merged(
            ModelSettings(
                stop=list(stop) if stop else None,
                tool_choice=_tool_choice(tool_choice),
            )
        )
        response = await backend.request(to_toolproof_messages(messages), definitions, settings)
        if self.check_tool_calls:
            self._check(response.message, definitions, len(self.requests))
        return response, ai_message(response.message, response)

    def _check(self, message: Message, tools: list[ToolDefinition], number: int) -> None:
        from toolproof.models.fake import script_misfit

        where = f"{getattr(self.backend, 'name', 'model')} response {number}"
        for c in message.tool_calls:
            problem = script_misfit(c, tools)
            if problem is not None:
                hint = "" if tools else " (call bind_tools(...) first)"
                raise UserError(f"{where} {problem}{hint}")

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        _, message = await self._respond(messages, stop, kwargs)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        _, message = run_sync(lambda: self._respond(messages, stop, kwargs), "the chat model")
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        _, message = await self._respond(messages, stop, kwargs)
        for chunk in _chunks(message):
            if run_manager is not None:
                await run_manager.on_llm_new_token(_text(chunk.message.content), chunk=chunk)
            yield chunk

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        _, message = run_sync(lambda: self._respond(messages, stop, kwargs), "the chat model")
        for chunk in _chunks(message):
            if run_manager is not None:
                run_manager.on_llm_new_token(_text(chunk.message.content), chunk=chunk)
            yield chunk


class ScriptedChatModel(ToolproofChatModel):
    """A LangChain chat model that answers from a script, one item per request.

    The script is toolproof's (see :class:`~toolproof.models.ScriptedModel`): strings for
    text answers, ``call(...)`` for a tool call, a list of calls for parallel calls, an
    exception to raise; LangChain ``AIMessage`` objects work too. Every scripted tool call must
    name a bound tool with arguments its schema accepts, or the request fails naming the
    problem.

    Args:
        script: The responses in order.
        name: The model name recorded in traces.

    Example:
        ```python
        model = ScriptedChatModel([call("multiply_numbers", a=12, b=8), "12 x 8 = 96"])
        agent = create_agent(model, tools)
        agent.invoke({"messages": [("user", "What is 12 times 8?")]})
        second = model.requests[1].messages
        assert second[-1].tool_call_id == second[-2].tool_calls[0]["id"]
        ```
    """

    def __init__(
        self, script: Sequence[ScriptItem | AIMessage], *, name: str = "scripted", **kwargs: Any
    ) -> None:
        items: list[ScriptItem] = [
            to_toolproof_messages([item])[0] if isinstance(item, AIMessage) else item
            for item in script
        ]
        kwargs.setdefault("check_tool_calls", True)
        super().__init__(backend=ScriptedModel(items, name=name), **kwargs)

    @property
    def remaining(self) -> int:
        """How many scripted responses have not been used."""
        remaining: int = self.backend.remaining
        return remaining


def _tool_choice(choice: Any) -> str | None:
    if choice is None:
        return None
    if isinstance(choice, str):
        return "required" if choice == "any" else choice
    if isinstance(choice, dict):
        return str((choice.get("function") or {}).get("name") or choice.get("name") or "auto")
    return None


def _openai_tool(item: Any) -> dict[str, Any]:
    if isinstance(item, Tool):
        return item.definition.to_openai()
    if isinstance(item, dict) and item.get("type") == "function" and "function" in item:
        return item
    converted: dict[str, Any] = convert_to_openai_tool(item)
    return converted


def _chunks(message: AIMessage) -> Iterator[ChatGenerationChunk]:
    text = _text(message.content)
    pieces = [text[i : i + 16] for i in range(0, len(text), 16)]
    for piece in pieces:
        yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
    tool_chunks = [
        {
            "name": c["name"],
            "args": json.dumps(c["args"], ensure_ascii=False),
            "id": c["id"],
            "index": i,
            "type": "tool_call_chunk",
        }
        for i, c in enumerate(message.tool_calls)
    ]
    tool_chunks += [
        {
            "name": c.get("name"),
            "args": c.get("args"),
            "id": c.get("id"),
            "index": len(tool_chunks) + i,
            "type": "tool_call_chunk",
        }
        for i, c in enumerate(message.invalid_tool_calls)
    ]
    yield ChatGenerationChunk(
        message=AIMessageChunk(
            content="",
            tool_call_chunks=tool_chunks,  # type: ignore[arg-type]
            usage_metadata=message.usage_metadata,
            response_metadata=message.response_metadata,
            chunk_position="last",
        )
    )
