"""LangChain and LangGraph: tools both ways, a scripted chat model, trace capture, suite agents.

Install with ``pip install "toolproof[langchain]"``. This module imports ``langchain_core``.

- :func:`from_langchain` makes a LangChain tool a toolproof :class:`~toolproof.Tool`;
  :func:`to_langchain` makes toolproof tools LangChain ``StructuredTool`` objects whose calls
  go through a :class:`~toolproof.Toolset`, so mock mode, fixtures and faults apply inside a
  LangChain agent.
- :class:`ScriptedChatModel` is a real ``BaseChatModel`` answering from a toolproof script
  (``call(...)`` and strings); :class:`ToolproofChatModel` puts any toolproof model (replay,
  function, OpenAI-compatible) behind LangChain's chat-model interface. Both record requests.
- :class:`TraceCapture` (a callback handler) and :func:`capture_trace` turn any LangChain or
  LangGraph run into a :class:`~toolproof.Trace`.
- :class:`LangChainAgent` runs a LangChain agent wherever toolproof expects an ``Agent``: an
  eval suite's ``agent:`` factory, ``run_agent`` in tests, the recorder.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    BaseCallbackHandler,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult, LLMResult
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.tracers.context import register_configure_hook
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from toolproof._agent import Agent, Budget, RunResult
from toolproof._messages import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
)
from toolproof._run import ForeignRun
from toolproof._tools import Tool
from toolproof._toolset import Toolset
from toolproof._trace import ErrorInfo, RequestSummary, Step, StopReason, ToolInfo, Trace
from toolproof._trace import stable_hash as _hash
from toolproof.errors import AgentRunError, ToolError, UserError
from toolproof.models._base import Model
from toolproof.models.fake import ScriptedModel, ScriptItem

__all__ = [
    "ChatRequest",
    "LangChainAgent",
    "ScriptedChatModel",
    "ToolproofChatModel",
    "TraceCapture",
    "capture_trace",
    "from_langchain",
    "to_langchain",
    "to_langchain_messages",
    "to_toolproof_messages",
]


# -- messages -------------------------------------------------------------------------------------


def _text(content: Any) -> str:
    """The text of a LangChain message content (a string or a list of content blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    return str(content)


def to_toolproof_messages(messages: Sequence[BaseMessage]) -> list[Message]:
    """Convert LangChain messages into toolproof messages.

    System, human, AI (with tool calls and invalid tool calls) and tool messages map to the
    roles ``system``, ``user``, ``assistant`` and ``tool``; other kinds become user messages.
    """
    out: list[Message] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append(Message.system(_text(message.content)))
        elif isinstance(message, AIMessage):
            calls = [
                ToolCall(name=c["name"], arguments=dict(c.get("args") or {}), id=c.get("id") or "")
                for c in message.tool_calls
            ]
            for bad in message.invalid_tool_calls:
                calls.append(
                    ToolCall.from_json_arguments(
                        bad.get("name") or "", bad.get("args"), bad.get("id") or ""
                    )
                )
            content = _text(message.content)
            out.append(Message.assistant(content or (None if calls else ""), calls))
        elif isinstance(message, ToolMessage):
            out.append(
                Message(
                    role="tool",
                    content=_text(message.content),
                    tool_call_id=message.tool_call_id,
                    name=message.name,
                    status="error" if message.status == "error" else "ok",
                )
            )
        else:
            out.append(Message.user(_text(message.content)))
    return out


def _ai_message(message: Message, response: ModelResponse | None = None) -> AIMessage:
    calls = []
    invalid = []
    for c in message.tool_calls:
        if c.arguments_error is not None:
            invalid.append(
                {
                    "type": "invalid_tool_call",
                    "name": c.name,
                    "args": c.raw_arguments,
                    "id": c.id,
                    "error": c.arguments_error,
                }
            )
        else:
            calls.append(
                {"type": "tool_call", "name": c.name, "args": dict(c.arguments), "id": c.id}
            )
    kwargs: dict[str, Any] = {}
    if response is not None:
        usage = response.usage
        kwargs["usage_metadata"] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        }
        kwargs["response_metadata"] = {
            "finish_reason": response.finish_reason,
            "model_name": response.model_name,
        }
    return AIMessage(
        content=message.content or "", tool_calls=calls, invalid_tool_calls=invalid, **kwargs
    )


def to_langchain_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    """Convert toolproof messages into LangChain messages.

    It is the inverse of :func:`to_toolproof_messages`.
    """
    out: list[BaseMessage] = []
    for message in messages:
        if message.role == "system":
            out.append(SystemMessage(message.text))
        elif message.role == "user":
            out.append(HumanMessage(message.text))
        elif message.role == "assistant":
            out.append(_ai_message(message))
        else:
            out.append(
                ToolMessage(
                    message.text,
                    tool_call_id=message.tool_call_id or "",
                    name=message.name,
                    status="error" if message.status == "error" else "success",
                )
            )
    return out


# -- running coroutines from LangChain's synchronous paths ----------------------------------------

_home_loop: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "toolproof_langchain_loop", default=None
)


def _run_sync(make: Callable[[], Awaitable[Any]], what: str) -> Any:
    """Run a coroutine from synchronous LangChain code (``invoke``, a sync tool)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError(
            f"{what} was called synchronously inside a running event loop; use the async "
            "form (`await ....ainvoke(...)`) or run the synchronous code in a thread"
        )
    loop = _home_loop.get()
    if loop is not None and loop.is_running():
        # LangChainAgent runs synchronous agent code in a worker thread: send the work back to
        # the agent's loop, where the model's connections live.
        return asyncio.run_coroutine_threadsafe(_as_coroutine(make), loop).result()
    return asyncio.run(_as_coroutine(make))


async def _as_coroutine(make: Callable[[], Awaitable[Any]]) -> Any:
    return await make()


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
        return response, _ai_message(response.message, response)

    def _check(self, message: Message, tools: list[ToolDefinition], number: int) -> None:
        import jsonschema

        by_name = {t.name: t for t in tools}
        where = f"{getattr(self.backend, 'name', 'model')} response {number}"
        for c in message.tool_calls:
            if c.name not in by_name:
                bound = ", ".join(by_name) or "none (call bind_tools(...) first)"
                raise UserError(
                    f"{where} calls tool {c.name!r}, which is not bound to the model; "
                    f"bound tools: {bound}"
                )
            if c.arguments_error is not None:
                continue  # malformed arguments on purpose: the agent must cope with them
            validator = jsonschema.Draft202012Validator(by_name[c.name].parameters)
            problems = [
                f"{'.'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}"
                for e in validator.iter_errors(c.arguments)
            ]
            if problems:
                raise UserError(
                    f"{where} calls {c.signature()} with arguments the tool's schema rejects: "
                    + "; ".join(problems)
                )

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
        _, message = _run_sync(lambda: self._respond(messages, stop, kwargs), "the chat model")
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
        _, message = _run_sync(lambda: self._respond(messages, stop, kwargs), "the chat model")
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


# -- tools -----------------------------------------------------------------------------------------


def from_langchain(
    lc_tool: BaseTool,
    *,
    errors: tuple[type[BaseException], ...] = (),
    side_effects: bool = False,
    requires_approval: bool = False,
    timeout: float | None = None,
) -> Tool[..., Any]:
    """Make a LangChain tool (``@tool``, ``StructuredTool``, any ``BaseTool``) a toolproof tool.

    The name, description and argument schema are LangChain's (the model sees what it saw
    before); arguments are validated with the tool's argument types first. Async tools (with
    a coroutine, or a ``BaseTool`` that implements ``_arun``) become async tools.
    A ``ToolException`` the tool raises is reported to the model as a ``ToolError``.

    Args:
        lc_tool: The LangChain tool.
        errors: Exceptions reported to the model instead of stopping the run.
        side_effects: The tool changes the outside world (mock mode never runs it).
        requires_approval: Each call goes through the agent's approver first.
        timeout: Seconds one call may take.

    Returns:
        The toolproof tool; declare its mock with ``@the_tool.mock`` as usual.
    """
    import inspect

    if not isinstance(lc_tool, BaseTool):
        raise UserError(f"from_langchain() expects a LangChain BaseTool, got {lc_tool!r}")
    spec = convert_to_openai_tool(lc_tool)["function"]
    parameters: dict[str, Any] = spec.get("parameters") or {"type": "object", "properties": {}}
    signature, annotations = _signature(lc_tool, parameters)

    def unwrap(value: Any) -> Any:
        if isinstance(value, ToolMessage):
            return value.content
        return value

    if "coroutine" in type(lc_tool).model_fields:  # StructuredTool, Tool: async if given one
        is_async = getattr(lc_tool, "coroutine", None) is not None
    else:  # a BaseTool subclass: async if it implements _arun itself
        is_async = type(lc_tool)._arun is not BaseTool._arun

    if is_async:

        async def call_async(**kwargs: Any) -> Any:
            try:
                return unwrap(await lc_tool.ainvoke(kwargs))
            except ToolException as exc:
                raise ToolError(str(exc)) from exc

        function: Callable[..., Any] = call_async
    else:

        def call_sync(**kwargs: Any) -> Any:
            try:
                return unwrap(lc_tool.invoke(kwargs))
            except ToolException as exc:
                raise ToolError(str(exc)) from exc

        function = call_sync
    function.__name__ = lc_tool.name
    function.__doc__ = spec.get("description") or lc_tool.description
    function.__signature__ = signature  # type: ignore[attr-defined]
    function.__annotations__ = annotations
    made: Tool[..., Any] = Tool(
        function,
        name=lc_tool.name,
        description=spec.get("description") or lc_tool.description or lc_tool.name,
        errors=errors,
        side_effects=side_effects,
        requires_approval=requires_approval,
        timeout=timeout,
        extra="ignore",
        _localns={},
    )
    # What the model is told is exactly LangChain's schema.
    made.parameters = parameters
    made.definition = ToolDefinition(made.name, made.description, parameters)
    made.schema_hash = _hash(
        {"name": made.name, "description": made.description, "parameters": parameters}
    )
    made.is_async = inspect.iscoroutinefunction(function)
    return made


def _signature(lc_tool: BaseTool, parameters: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    import inspect

    from pydantic import BaseModel

    schema = lc_tool.tool_call_schema
    params = []
    annotations: dict[str, Any] = {}
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        for name, info in schema.model_fields.items():
            key = info.alias or name
            annotation = info.annotation if info.annotation is not None else Any
            default = inspect.Parameter.empty if info.is_required() else info.get_default()
            params.append(
                inspect.Parameter(
                    key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
                )
            )
            annotations[key] = annotation
    else:
        required = set(parameters.get("required") or [])
        for key in parameters.get("properties") or {}:
            default = inspect.Parameter.empty if key in required else None
            params.append(
                inspect.Parameter(
                    key, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Any
                )
            )
            annotations[key] = Any
    return inspect.Signature(params), annotations


ErrorStyle = Literal["message", "raise"]


def to_langchain(
    tools: Toolset | Tool[..., Any] | Sequence[Tool[..., Any]],
    *,
    errors: ErrorStyle = "message",
) -> list[StructuredTool]:
    """Make toolproof tools LangChain ``StructuredTool`` objects that run through a Toolset.

    Each call is validated and dispatched by the :class:`~toolproof.Toolset` (pass one in mock
    mode and LangChain runs your mocks, fixtures and faults; side-effecting tools without a
    mock are refused), and the full :class:`~toolproof.ToolResult` is the ``ToolMessage``'s
    artifact and reaches :class:`TraceCapture`.

    Args:
        tools: A toolset, a tool, or tools (wrapped in a real-mode toolset).
        errors: What a tool error (a declared exception, ``ToolError``, invalid arguments)
            becomes: ``"message"`` (default) an error ``ToolMessage`` the model reads, as
            toolproof's own loop does; ``"raise"`` the declared exception itself (rebuilt with
            the same class and message), for agents that catch tool exceptions themselves.

    Returns:
        One ``StructuredTool`` per tool, in the toolset's order.
    """
    if errors not in ("message", "raise"):
        raise UserError(f"to_langchain(errors=...) must be 'message' or 'raise', got {errors!r}")
    if isinstance(tools, Toolset):
        toolset = tools
    elif isinstance(tools, Tool):
        toolset = Toolset([tools])
    else:
        toolset = Toolset(list(tools))
    return [_structured(toolset, t, errors) for t in toolset]


def _structured(toolset: Toolset, t: Tool[..., Any], errors: ErrorStyle) -> StructuredTool:
    # LangChain passes ``callbacks`` (the tool run's child manager) to a function that has
    # that parameter: its parent_run_id is the tool run this call belongs to.
    async def dispatch(callbacks: Any = None, **kwargs: Any) -> tuple[str, ToolResult]:
        run_id = getattr(callbacks, "parent_run_id", None)
        result = await toolset.execute(ToolCall(t.name, dict(kwargs), id=str(run_id or "")))
        capture = _active.get()
        for target in {id(c): c for c in (*_handlers_of(callbacks), capture) if c}.values():
            target._tool_result(run_id, result)
        if result.ok:
            return result.content, result
        if errors == "raise":
            declared = [e for e in t.errors if e.__name__ == result.error_type]
            if declared:
                raise declared[0](result.content)
        raise ToolException(result.content)

    def dispatch_sync(callbacks: Any = None, **kwargs: Any) -> tuple[str, ToolResult]:
        result: tuple[str, ToolResult] = _run_sync(
            lambda: dispatch(callbacks, **kwargs), f"tool {t.name!r}"
        )
        return result

    return StructuredTool(
        name=t.name,
        description=t.description,
        args_schema=t.parameters,
        func=dispatch_sync,
        coroutine=dispatch,
        response_format="content_and_artifact",
        handle_tool_error=True,
    )


def _handlers_of(callbacks: Any) -> list[TraceCapture]:
    handlers = getattr(callbacks, "handlers", None) or []
    return [h for h in handlers if isinstance(h, TraceCapture)]


# -- trace capture ---------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class _ToolRun:
    name: str
    arguments: dict[str, Any]
    call_id: str | None
    started: float
    result: ToolResult | None = None


class TraceCapture(BaseCallbackHandler):
    """A LangChain callback handler that records a run (or several) as one toolproof Trace.

    Pass it in a run's config (``config={"callbacks": [capture]}``) or use
    :func:`capture_trace` to record everything LangChain does inside a ``with`` block (agents
    that call models and tools without passing callbacks along, like a hand-written
    ``bind_tools`` loop). Every chat-model call becomes a step; every tool run becomes the
    result of the call it answers (matched by call id, else by name and arguments); the
    ``ToolMessage`` the model receives next is what the trace records as the result's text.

    Args:
        input: The run's user input (default: the last user message of the first request).
        metadata: Recorded in the trace.
        tags: Recorded in the trace.
    """

    run_inline = True  # callbacks arrive in order, on the caller's thread or loop

    def __init__(
        self,
        *,
        input: str | None = None,
        metadata: dict[str, Any] | None = None,
        tags: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self._lock = threading.RLock()
        self._clock = time.perf_counter
        self._started = self._clock()
        self._started_at = _now()
        self._input = input
        self._metadata = dict(metadata or {})
        self._tags = list(tags)
        self._steps: list[Step] = []
        self._model_runs: dict[
            UUID, tuple[float, list[BaseMessage], str, list[dict[str, Any]]]
        ] = {}
        self._tool_runs: dict[UUID, _ToolRun] = {}
        # Results by (step index, position of the call in its step): call ids may repeat
        # across steps, or be empty, with some providers.
        self._results: dict[tuple[int, int], ToolResult] = {}
        self._orphans: list[ToolResult] = []
        self._tools: dict[str, ToolInfo] = {}
        self._first: list[Message] | None = None
        self._error: BaseException | None = None
        self._ended: float | None = None

    # -- model runs ------------------------------------------------------------------------------

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the start of a model call (its request)."""
        params = kwargs.get("invocation_params") or {}
        name = str(
            (metadata or {}).get("ls_model_name")
            or params.get("model")
            or params.get("model_name")
            or (serialized or {}).get("name")
            or "langchain"
        )
        tools = [t for t in params.get("tools") or [] if isinstance(t, dict)]
        request = list(messages[0]) if messages else []
        with self._lock:
            self._model_runs[run_id] = (self._clock(), request, name, tools)
            for t in tools:
                function = t.get("function") or t
                if "name" in function and function["name"] not in self._tools:
                    parameters = function.get("parameters") or {}
                    description = function.get("description") or ""
                    self._tools[function["name"]] = ToolInfo(
                        function["name"],
                        description,
                        parameters,
                        _hash(
                            {
                                "name": function["name"],
                                "description": description,
                                "parameters": parameters,
                            }
                        ),
                    )
            converted = to_toolproof_messages(request)
            if self._first is None:
                self._first = converted
            self._reconcile(converted)

    def on_llm_end(
        self, response: LLMResult, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        """Record a model call's response as a step."""
        with self._lock:
            started = self._model_runs.pop(run_id, None)
            if started is None:
                return
            began, request, name, _ = started
            generations = response.generations[0] if response.generations else []
            message: BaseMessage = AIMessage("")
            if generations:
                generation = generations[0]
                message = getattr(generation, "message", None) or AIMessage(generation.text)
            converted = to_toolproof_messages([message])[0]
            if converted.role != "assistant":
                converted = Message.assistant(converted.content)
            usage = Usage(requests=1)
            meta = getattr(message, "usage_metadata", None)
            if meta:
                usage.input_tokens = int(meta.get("input_tokens") or 0)
                usage.output_tokens = int(meta.get("output_tokens") or 0)
            metadata = getattr(message, "response_metadata", None) or {}
            finish = metadata.get("finish_reason")
            self._steps.append(
                Step(
                    index=len(self._steps) + 1,
                    request=RequestSummary(len(request)),
                    response=converted,
                    offset_ms=(began - self._started) * 1000,
                    latency_ms=(self._clock() - began) * 1000,
                    usage=usage,
                    finish_reason=str(finish) if finish else None,
                    model_name=str(metadata.get("model_name") or name),
                )
            )

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record that a model call failed."""
        with self._lock:
            self._model_runs.pop(run_id, None)
            if self._error is None:
                self._error = error

    # -- tool runs -------------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the start of a tool run."""
        name = str((serialized or {}).get("name") or kwargs.get("name") or "tool")
        arguments = dict(inputs) if isinstance(inputs, dict) else {}
        if not arguments and input_str:
            try:
                parsed = json.loads(input_str)
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                arguments = parsed
        with self._lock:
            self._tool_runs[run_id] = _ToolRun(
                name, arguments, kwargs.get("tool_call_id"), self._clock()
            )

    def _tool_result(self, run_id: UUID | None, result: ToolResult) -> None:
        """Receive the ToolResult of a toolproof tool dispatched inside this run."""
        with self._lock:
            run = self._tool_runs.get(run_id) if run_id is not None else None
            if run is not None:
                run.result = result

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a finished tool run as the result of its call."""
        with self._lock:
            run = self._tool_runs.pop(run_id, None)
            if run is None:
                return
            if run.result is not None:
                result = run.result
                if isinstance(output, ToolMessage):
                    result.content = _text(output.content)
            elif isinstance(output, ToolMessage):
                artifact = output.artifact
                status: Literal["ok", "error"] = "error" if output.status == "error" else "ok"
                result = ToolResult(
                    "",
                    run.name,
                    status,
                    _text(output.content),
                    value=None
                    if status == "error"
                    else _jsonable(artifact if artifact is not None else output.content),
                    error_type="ToolException" if status == "error" else None,
                )
            else:
                value = _jsonable(output)
                content = (
                    output if isinstance(output, str) else json.dumps(value, ensure_ascii=False)
                )
                result = ToolResult("", run.name, "ok", content, value=value)
            result.duration_ms = (self._clock() - run.started) * 1000
            self._attach(run, result)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a tool run that raised as an error result of its call."""
        with self._lock:
            run = self._tool_runs.pop(run_id, None)
            if run is None:
                return
            if run.result is not None:
                result = run.result
            else:
                text = str(error.args[0]) if len(error.args) == 1 else str(error)
                result = ToolResult(
                    "",
                    run.name,
                    "error",
                    text or type(error).__name__,
                    error_type=type(error).__name__,
                )
            result.duration_ms = (self._clock() - run.started) * 1000
            self._attach(run, result)

    def _attach(self, run: _ToolRun, result: ToolResult) -> None:
        found = self._find_call(run)
        if found is None:
            result.call_id = run.call_id or ""
            self._orphans.append(result)
            return
        key, call = found
        result.call_id = call.id
        result.name = call.name
        self._results[key] = result

    def _find_call(self, run: _ToolRun) -> tuple[tuple[int, int], ToolCall] | None:
        for step in reversed(self._steps):
            calls = list(enumerate(step.response.tool_calls))
            open_calls = [(i, c) for i, c in calls if (step.index, i) not in self._results]
            if run.call_id:
                for i, c in open_calls:
                    if c.id == run.call_id:
                        return (step.index, i), c
                if any(c.id == run.call_id for _, c in calls):
                    continue  # already answered in this step: an older step's call
            named = [(i, c) for i, c in open_calls if c.name == run.name]
            for i, c in named:
                if c.arguments == run.arguments:
                    return (step.index, i), c
            if named:
                i, c = named[0]
                return (step.index, i), c
        return None

    def _reconcile(self, request: list[Message]) -> None:
        """Tool messages in a request are what the model saw: they are the results' text."""
        if not self._steps:
            return
        step = self._steps[-1]  # a request answers the calls of the step just before it
        calls = list(enumerate(step.response.tool_calls))
        used: set[int] = set()
        # The answers are the tool messages after the request's last assistant message.
        last = max((i for i, m in enumerate(request) if m.role == "assistant"), default=-1)
        for message in request[last + 1 :]:
            if message.role != "tool" or message.tool_call_id is None:
                continue
            match = next(
                ((i, c) for i, c in calls if c.id == message.tool_call_id and i not in used), None
            )
            if match is None:
                continue
            i, call = match
            used.add(i)
            result = self._results.get((step.index, i))
            status = message.status or "ok"
            if result is None:
                self._results[(step.index, i)] = ToolResult(
                    call.id,
                    call.name,
                    status,
                    message.text,
                    error_type="ToolMessage" if status == "error" else None,
                )
            else:
                result.content = message.text
                result.status = status
                if status == "ok":
                    result.error_type = None
                elif result.error_type is None:
                    result.error_type = "ToolMessage"

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        """Record the error that stopped a root run."""
        if parent_run_id is None:
            with self._lock:
                if self._error is None:
                    self._error = error

    # -- the trace -------------------------------------------------------------------------------

    def fail(self, error: BaseException) -> None:
        """Record the error that stopped the run (``capture_trace`` calls it for you)."""
        with self._lock:
            self._error = error

    def finish(self) -> None:
        """Mark the end of the run (``capture_trace`` calls it when its block ends)."""
        with self._lock:
            self._ended = self._clock()

    @property
    def requests(self) -> int:
        """How many model calls were recorded."""
        return len(self._steps)

    @property
    def trace(self) -> Trace:
        """The trace of everything recorded so far."""
        with self._lock:
            return self._build()

    def _build(self) -> Trace:
        first = self._first or []
        system = next((m.text for m in first if m.role == "system"), None)
        rest = [m for m in first if m.role != "system"]
        user_index = max((i for i, m in enumerate(rest) if m.role == "user"), default=None)
        if self._input is not None:
            input_text = self._input
            history = rest[:user_index] if user_index is not None else []
        elif user_index is not None:
            input_text = rest[user_index].text
            history = rest[:user_index]
        else:
            input_text, history = "", rest
        steps = []
        for step in self._steps:
            results = [
                self._results[(step.index, i)]
                for i in range(len(step.response.tool_calls))
                if (step.index, i) in self._results
            ]
            steps.append(
                Step(
                    index=step.index,
                    request=step.request,
                    response=step.response,
                    offset_ms=step.offset_ms,
                    latency_ms=step.latency_ms,
                    usage=step.usage,
                    finish_reason=step.finish_reason,
                    model_name=step.model_name,
                    tool_results=results,
                )
            )
        usage = Usage()
        for step in steps:
            usage = usage + step.usage
        output: str | None = None
        detail: str | None = None
        error: ErrorInfo | None = None
        reason: StopReason
        if self._error is not None:
            reason = "error"
            failure = self._error
            # Like toolproof's own loop: a run error is named by its root cause.
            root = failure.__cause__ or failure if isinstance(failure, AgentRunError) else failure
            error = ErrorInfo(
                type(root).__name__, str(failure), getattr(failure, "tool_name", None)
            )
            detail = str(failure) if root is not failure else f"{type(root).__name__}: {root}"
        elif steps and not steps[-1].response.tool_calls:
            reason = "final"
            output = steps[-1].response.content or ""
            if not output:
                detail = "the model returned an empty answer"
        elif steps:
            reason = "max_steps"
            pending = ", ".join(c.signature() for c in steps[-1].response.tool_calls)
            detail = f"the run ended after tool calls without a final answer ({pending})"
        else:
            reason = "error"
            detail = "no chat model call was recorded"
        ended = self._ended if self._ended is not None else self._clock()
        mocked = [r.mocked for s in steps for r in s.tool_results]
        model = next((s.model_name for s in steps if s.model_name), "") or ""
        return Trace(
            id=uuid.uuid4().hex,
            input=input_text,
            started_at=self._started_at,
            ended_at=_now(),
            history=history,
            system_prompt=system,
            system_prompt_hash=_hash(system) if system else None,
            model=model,
            tools=list(self._tools.values()),
            tool_mode="mock" if mocked and any(mocked) else "real",
            steps=steps,
            output=output,
            stop_reason=reason,
            stop_detail=detail,
            error=error,
            usage=usage,
            duration_ms=(ended - self._started) * 1000,
            metadata=dict(self._metadata),
            tags=list(self._tags),
        )


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    if isinstance(value, ToolResult):
        return value.value
    return to_jsonable_python(value, fallback=str)


_active: contextvars.ContextVar[TraceCapture | None] = contextvars.ContextVar(
    "toolproof_langchain_capture", default=None
)
register_configure_hook(_active, inheritable=True)


@contextmanager
def capture_trace(
    *,
    input: str | None = None,
    metadata: dict[str, Any] | None = None,
    tags: Sequence[str] = (),
) -> Iterator[TraceCapture]:
    """Record every LangChain run inside the block as one toolproof Trace.

    The handler is attached to every LangChain run started in this context (threads started
    with ``asyncio.to_thread`` and LangGraph's workers included), whether or not the code
    passes callbacks along. An exception leaving the block is recorded as the trace's error
    and re-raised.

    Example:
        ```python
        with capture_trace() as captured:
            agent.run("What is 12 times 8?")
        assert_tool_called(captured.trace, "multiply_numbers", a=12, b=8)
        ```
    """
    capture = TraceCapture(input=input, metadata=metadata, tags=tags)
    with _capturing(capture):
        yield capture


@contextmanager
def _capturing(capture: TraceCapture) -> Iterator[None]:
    token = _active.set(capture)
    try:
        yield
    except BaseException as exc:
        capture.fail(exc)
        raise
    finally:
        _active.reset(token)
        capture.finish()


# -- LangChain agents where toolproof expects an Agent -------------------------------------------

#: Builds the LangChain agent from a chat model and LangChain tools.
AgentBuilder = Callable[[BaseChatModel, list[StructuredTool]], Any]


class LangChainAgent(Agent):
    """A LangChain or LangGraph agent that toolproof can run, evaluate and record.

    On each run it builds the LangChain agent from a chat model backed by this agent's
    toolproof model and LangChain versions of this agent's tools (so a suite's scripted
    model, mock mode, fixtures and faults apply), runs it with :func:`capture_trace`, and
    returns a :class:`~toolproof.RunResult` with the trace. What the builder returns decides
    how it is run: a runnable or graph (``create_agent(...)``) gets
    ``{"messages": [...history, user input]}`` through ``ainvoke``; an object with ``run``
    (sync or async) gets the input text; a callable is called with the input text.

    Args:
        build: ``build(chat_model, tools)`` returns the LangChain agent.
        model: A toolproof model or model string.
        tools: Tools or a toolset.
        system_prompt: Sent first in the messages of a runnable agent.
        tool_errors: See :func:`to_langchain` (``"raise"`` for agents that catch tool
            exceptions themselves).
        name: Recorded in trace metadata.
        recorder: Receives every finished trace.

    Example:
        ```python
        def build_agent(model, tools=None):
            return LangChainAgent(
                lambda chat, lc_tools: create_agent(chat, lc_tools),
                model, tools if tools is not None else [multiply_numbers],
            )
        ```
    """

    def __init__(
        self,
        build: AgentBuilder,
        model: Model | str,
        tools: Sequence[Tool[..., Any] | Callable[..., Any]] | Toolset = (),
        *,
        system_prompt: str | None = None,
        tool_errors: ErrorStyle = "message",
        name: str | None = None,
        recorder: Any = None,
    ) -> None:
        if not callable(build):
            raise UserError(f"LangChainAgent(build=...) must be callable, got {build!r}")
        if tool_errors not in ("message", "raise"):
            raise UserError(
                f"LangChainAgent(tool_errors=...) must be 'message' or 'raise', got {tool_errors!r}"
            )
        super().__init__(model, tools, system_prompt=system_prompt, name=name, recorder=recorder)
        self.build = build
        self.tool_errors: ErrorStyle = tool_errors

    async def run(
        self,
        input: str,
        *,
        history: Sequence[Message] = (),
        metadata: Any = None,
        tags: Sequence[str] = (),
        settings: ModelSettings | None = None,
        memory_state: Any = None,
        budget: Budget | None = None,
    ) -> RunResult:
        """Run the LangChain agent on one user message; see :meth:`toolproof.Agent.run`.

        Of the budget, the wall-clock limit (``max_seconds``) applies: the run is cancelled
        and ends with stop reason ``budget``. Step limits are the LangChain agent's own.

        Raises:
            AgentRunError: The LangChain run raised; ``error.trace`` holds the partial trace.
        """
        run = ForeignRun(self, input, budget)
        chat = ToolproofChatModel(backend=run.model, settings=self.settings.merged(settings))
        lc_tools = to_langchain(run.toolset, errors=self.tool_errors)
        meta = dict(metadata or {})
        if self.name and "agent" not in meta:
            meta["agent"] = self.name
        captured = TraceCapture(input=input, metadata=meta, tags=tags)
        token = _home_loop.set(asyncio.get_running_loop())
        try:
            with _capturing(captured):
                target = self.build(chat, lc_tools)
                await run.call(self._invoke(target, input, list(history)))
        except Exception as exc:  # building the agent failed
            run.failure = exc
        finally:
            _home_loop.reset(token)
        trace = captured.trace
        run.describe(trace, history)
        trace.system_prompt = self.system_prompt
        trace.system_prompt_hash = self.system_prompt_hash
        trace.settings = self.settings.merged(settings).to_dict()
        failure = run.failure
        error = failure if isinstance(failure, AgentRunError) else None
        return run.finish(trace, framework="the LangChain agent", error=error)

    async def _invoke(self, target: Any, input: str, history: list[Message]) -> Any:
        import inspect

        messages = [*to_langchain_messages(history), HumanMessage(input)]
        if self.system_prompt:
            messages.insert(0, SystemMessage(self.system_prompt))
        if hasattr(target, "ainvoke"):
            return await target.ainvoke({"messages": messages})
        runner = getattr(target, "arun", None) or getattr(target, "run", None)
        if runner is None and callable(target):
            runner = target
        if runner is None:
            raise UserError(
                f"the LangChain agent builder returned {target!r}: return a runnable or graph, "
                "an object with run(input), or a callable taking the input"
            )
        if inspect.iscoroutinefunction(runner):
            return await runner(input)
        context = contextvars.copy_context()
        loop = asyncio.get_running_loop()
        value = await loop.run_in_executor(None, lambda: context.run(runner, input))
        if inspect.isawaitable(value):
            value = await value
        return value
