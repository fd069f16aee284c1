"""The OpenAI Agents SDK: a scripted model, tools both ways, and trace capture.

Install with ``pip install "toolproof[openai-agents]"``. This module imports ``agents``.

- :class:`ScriptedAgentsModel` answers the SDK's ``Runner`` from a toolproof script
  (``call(...)`` and strings); :class:`AgentsModel` puts any toolproof model behind the SDK's
  ``Model`` interface. Both record every request.
- :func:`to_function_tool` makes toolproof tools SDK ``FunctionTool`` objects dispatched by a
  :class:`~toolproof.Toolset` (mock mode, fixtures and faults apply);
  :func:`from_function_tool` makes an SDK ``FunctionTool`` (``@function_tool``) a toolproof
  tool.
- :class:`TraceProcessor` is an SDK tracing processor that turns each SDK trace into a
  toolproof :class:`~toolproof.Trace` (for checks, the recorder and replay);
  :func:`trace_from_result` builds one from a ``RunResult`` directly.

Tests should install toolproof's processor with ``agents.set_trace_processors([...])``, which
also removes the SDK's default exporter, so nothing is sent to the network.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from agents import FunctionTool
from agents.items import ModelResponse as AgentsModelResponse
from agents.models.interface import Model as AgentsModelBase
from agents.tool_context import ToolContext
from agents.tracing import (
    FunctionSpanData,
    GenerationSpanData,
    ResponseSpanData,
    TracingProcessor,
    generation_span,
)
from agents.usage import Usage as AgentsUsage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from toolproof._agent import Agent as ToolproofAgent
from toolproof._agent import Budget
from toolproof._agent import RunResult as ToolproofRunResult
from toolproof._messages import (
    Message,
    ModelResponse,
    ModelSettings,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
)
from toolproof._tools import Tool
from toolproof._toolset import Toolset
from toolproof._trace import ErrorInfo, RequestSummary, Step, StopReason, Trace
from toolproof._trace import stable_hash as _hash
from toolproof.errors import UserError
from toolproof.models._base import Model
from toolproof.models.fake import ScriptedModel, ScriptItem

__all__ = [
    "AgentsModel",
    "AgentsRequest",
    "AgentsSDKAgent",
    "ScriptedAgentsModel",
    "TraceProcessor",
    "from_function_tool",
    "to_function_tool",
    "trace_from_result",
]


# -- input items <-> messages ---------------------------------------------------------------------


def _item(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        dumped: dict[str, Any] = dump(exclude_unset=True)
        return dumped
    return {}


def _content_text(content: Any) -> str:
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


def _items_to_messages(system: str | None, items: str | Sequence[Any]) -> list[Message]:
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
            text = output if isinstance(output, str) else _content_text(output)
            out.append(
                Message(role="tool", content=text, tool_call_id=call_id, name=names.get(call_id))
            )
        elif role in ("system", "developer"):
            out.append(Message.system(_content_text(item.get("content"))))
        elif role == "assistant":
            out.append(Message.assistant(_content_text(item.get("content"))))
        elif role == "user" or kind == "message":
            out.append(Message.user(_content_text(item.get("content"))))
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
class AgentsRequest:
    """One request an :class:`AgentsModel` received.

    Attributes:
        messages: The request as toolproof messages (system instructions first).
        tools: The tools offered.
        input: The input items exactly as the SDK passed them.
    """

    messages: list[Message]
    tools: list[ToolDefinition] = field(default_factory=list)
    input: Any = None

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools offered in this request."""
        return [t.name for t in self.tools]

    @property
    def last(self) -> Message:
        """The last message of the request."""
        return self.messages[-1]


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
        messages = _items_to_messages(system_instructions, input)
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


# -- tools ----------------------------------------------------------------------------------------

_results_lock = threading.Lock()
#: ToolResults of toolproof-dispatched calls by (SDK trace id, call id), for TraceProcessor
#: and trace_from_result; bounded, oldest first out.
_results: dict[tuple[str, str], ToolResult] = {}
_MAX_RESULTS = 10_000


def _current_trace_id() -> str:
    from agents.tracing import get_current_trace

    current = get_current_trace()
    return str(getattr(current, "trace_id", "") or "")


def _remember(result: ToolResult) -> None:
    with _results_lock:
        if len(_results) >= _MAX_RESULTS:
            for key in list(_results)[: _MAX_RESULTS // 2]:
                del _results[key]
        _results[(_current_trace_id(), result.call_id)] = result


def _known(trace_id: str, call_id: str, content: str | None = None) -> ToolResult | None:
    with _results_lock:
        if trace_id:
            return _results.get((trace_id, call_id))
        # Without the SDK trace id: the latest result of this call id with this content.
        for (_, key), result in reversed(_results.items()):
            if key == call_id and (content is None or result.content == content):
                return result
        return None


def to_function_tool(
    tools: Toolset | Tool[..., Any] | Sequence[Tool[..., Any]],
) -> list[FunctionTool]:
    """Make toolproof tools SDK ``FunctionTool`` objects that run through a Toolset.

    Calls are validated and dispatched by the :class:`~toolproof.Toolset` (pass one in mock
    mode for mocks, fixtures and faults; side-effecting tools without a mock are refused).
    Errors the model can act on come back to it as the tool's output text; bugs in a tool
    (``ToolCrashed``) and refused real calls (``UnmockedToolCall``) stop the run.

    Returns:
        One ``FunctionTool`` per tool, in the toolset's order.
    """
    if isinstance(tools, Toolset):
        toolset = tools
    elif isinstance(tools, Tool):
        toolset = Toolset([tools])
    else:
        toolset = Toolset(list(tools))
    return [_function_tool(toolset, t) for t in toolset]


def _function_tool(toolset: Toolset, t: Tool[..., Any]) -> FunctionTool:
    async def invoke(context: ToolContext[Any], arguments: str) -> str:
        call_id = getattr(context, "tool_call_id", "") or uuid.uuid4().hex
        call = ToolCall.from_json_arguments(t.name, arguments, call_id)
        result = await toolset.execute(call)
        _remember(result)
        return result.content

    return FunctionTool(
        name=t.name,
        description=t.description,
        params_json_schema=t.parameters,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


def from_function_tool(
    function_tool: FunctionTool,
    *,
    errors: tuple[type[BaseException], ...] = (),
    side_effects: bool = False,
) -> Tool[..., Any]:
    """Make an SDK ``FunctionTool`` (from ``@function_tool``) a toolproof tool.

    The name, description and JSON Schema are the SDK tool's. The tool runs through the
    SDK's own invocation (its argument parsing and error function); an error message the SDK
    returns is the tool's output text.
    """
    import inspect

    if not isinstance(function_tool, FunctionTool):
        raise UserError(f"from_function_tool() expects an SDK FunctionTool, got {function_tool!r}")
    parameters = dict(function_tool.params_json_schema)
    required = set(parameters.get("required") or [])
    params = [
        inspect.Parameter(
            key,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if key in required else None,
            annotation=Any,
        )
        for key in parameters.get("properties") or {}
    ]

    async def run(**kwargs: Any) -> Any:
        arguments = json.dumps({k: v for k, v in kwargs.items() if v is not None or k in required})
        context = ToolContext(
            context=None,
            tool_name=function_tool.name,
            tool_call_id=f"toolproof_{uuid.uuid4().hex[:12]}",
            tool_arguments=arguments,
        )
        return await function_tool.on_invoke_tool(context, arguments)

    run.__name__ = function_tool.name
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: Any for p in params}
    made: Tool[..., Any] = Tool(
        run,
        name=function_tool.name,
        description=function_tool.description or function_tool.name,
        errors=errors,
        side_effects=side_effects,
        extra="ignore",
        _localns={},
    )
    made.parameters = parameters
    made.definition = ToolDefinition(made.name, made.description, parameters)
    made.schema_hash = _hash(
        {"name": made.name, "description": made.description, "parameters": parameters}
    )
    return made


# -- traces ---------------------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _finish(
    trace: Trace, steps: list[Step], error: ErrorInfo | None, started: float | None = None
) -> Trace:
    usage = Usage()
    for step in steps:
        usage = usage + step.usage
    trace.steps = steps
    trace.usage = usage
    reason: StopReason
    if error is not None:
        reason, trace.error, trace.stop_detail = "error", error, f"{error.type}: {error.message}"
    elif steps and not steps[-1].response.tool_calls:
        reason = "final"
        trace.output = steps[-1].response.content or ""
    elif steps:
        reason = "max_steps"
        trace.stop_detail = "the run ended after tool calls without a final answer"
    else:
        reason, trace.stop_detail = "error", "no model call was recorded"
    trace.stop_reason = reason
    trace.tool_mode = "mock" if any(r.mocked for r in trace.tool_results) else "real"
    trace.model = next((s.model_name for s in steps if s.model_name), "") or ""
    return trace


def trace_from_result(result: Any, *, tools: Sequence[Tool[..., Any]] = ()) -> Trace:
    """Build a toolproof Trace from an SDK ``RunResult`` (exact call ids and outputs).

    Args:
        result: What ``Runner.run`` returned.
        tools: The toolproof tools the agent was given (recorded with their schemas).
    """
    from agents.items import MessageOutputItem, ToolCallItem, ToolCallOutputItem

    original = result.input
    first = _items_to_messages(None, original)
    users = [i for i, m in enumerate(first) if m.role == "user"]
    input_text = first[users[-1]].text if users else ""
    history = first[: users[-1]] if users else first
    trace = Trace(
        id=uuid.uuid4().hex,
        input=input_text,
        started_at=_now(),
        ended_at=_now(),
        history=history,
        tools=[t.info for t in tools],
        metadata={"agent": getattr(result.last_agent, "name", None)},
    )
    steps: list[Step] = []
    responses = list(result.raw_responses)
    for index, response in enumerate(responses, 1):
        message = _response_message(response.output)
        usage = Usage(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            requests=1,
        )
        steps.append(Step(index, RequestSummary(0), message, usage=usage, model_name=None))
    state = getattr(result, "_trace_state", None)
    trace_id = str(getattr(state, "trace_id", "") or "")
    outputs: dict[str, ToolResult] = {}
    for item in result.new_items:
        if isinstance(item, ToolCallOutputItem):
            raw = _item(item.raw_item)
            call_id = str(raw.get("call_id", ""))
            output = item.output
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            known = _known(trace_id, call_id, text)
            outputs[call_id] = known or ToolResult(call_id, "", "ok", text, value=output)
        elif isinstance(item, (MessageOutputItem, ToolCallItem)):
            continue
    for step in steps:
        step.tool_results = [outputs[c.id] for c in step.response.tool_calls if c.id in outputs]
        for r, c in zip(step.tool_results, step.response.tool_calls, strict=False):
            r.name = r.name or c.name
    done = _finish(trace, steps, None)
    model = getattr(result.last_agent, "model", None)
    backend = getattr(model, "backend", None)
    done.model = str(getattr(backend, "name", None) or getattr(model, "model", None) or model or "")
    return done


def _response_message(output: Sequence[Any]) -> Message:
    text_parts: list[str] = []
    calls: list[ToolCall] = []
    for raw in output:
        item = _item(raw)
        if item.get("type") == "message":
            text_parts.append(_content_text(item.get("content")))
        elif item.get("type") == "function_call":
            calls.append(
                ToolCall.from_json_arguments(
                    str(item.get("name", "")), item.get("arguments"), str(item.get("call_id", ""))
                )
            )
    text = "".join(text_parts)
    return Message.assistant(text or (None if calls else ""), calls)


@dataclass(slots=True)
class _Pending:
    trace: Trace
    started: float
    steps: list[Step] = field(default_factory=list)
    functions: list[tuple[str, str, Any, float, Any]] = field(default_factory=list)
    error: ErrorInfo | None = None


class TraceProcessor(TracingProcessor):
    """An SDK tracing processor that turns each SDK trace into a toolproof Trace.

    Generation and response spans become steps; function spans become the results of the
    calls they answer (by call id when toolproof dispatched the tool, else by name and
    arguments). Finished traces are kept in :attr:`traces` and handed to ``recorder``.

    Args:
        recorder: Receives every finished trace (``toolproof.replay.Recorder``).
        keep: How many finished traces to keep in :attr:`traces`.

    Example:
        ```python
        processor = TraceProcessor()
        agents.set_trace_processors([processor])  # replaces the SDK's network exporter
        await Runner.run(agent, "Weather in Paris?")
        assert_tool_called(processor.traces[-1], "get_weather", city="Paris")
        ```
    """

    def __init__(self, *, recorder: Any = None, keep: int = 1000) -> None:
        self.recorder = recorder
        self.keep = keep
        self.traces: list[Trace] = []
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def on_trace_start(self, trace: Any) -> None:
        """Start collecting an SDK trace."""
        with self._lock:
            self._pending[trace.trace_id] = _Pending(
                Trace(
                    id=trace.trace_id,
                    input="",
                    started_at=_now(),
                    metadata={"workflow": trace.name, **dict(trace.metadata or {})},
                    tags=[trace.group_id] if getattr(trace, "group_id", None) else [],
                ),
                time.perf_counter(),
            )

    def on_span_start(self, span: Any) -> None:
        """Spans are read when they end."""

    def on_span_end(self, span: Any) -> None:
        """Turn a finished generation, response or function span into trace data."""
        with self._lock:
            pending = self._pending.get(span.trace_id)
            if pending is None:
                return
            data = span.span_data
            if span.error and pending.error is None:
                pending.error = ErrorInfo(
                    "SpanError", str(span.error.get("message", "")), getattr(data, "name", None)
                )
            if isinstance(data, GenerationSpanData):
                output = list(data.output or [])
                message = _chat_message(output[-1]) if output else Message.assistant("")
                usage = Usage(
                    input_tokens=int((data.usage or {}).get("input_tokens") or 0),
                    output_tokens=int((data.usage or {}).get("output_tokens") or 0),
                    requests=1,
                )
                if not pending.trace.input and data.input:
                    self._set_input(pending.trace, [_chat_message(m) for m in data.input])
                pending.steps.append(
                    Step(
                        len(pending.steps) + 1,
                        RequestSummary(len(data.input or [])),
                        message,
                        usage=usage,
                        model_name=data.model,
                    )
                )
            elif isinstance(data, ResponseSpanData) and data.response is not None:
                response = data.response
                usage = Usage(requests=1)
                if response.usage is not None:
                    usage.input_tokens = response.usage.input_tokens
                    usage.output_tokens = response.usage.output_tokens
                if not pending.trace.input and data.input:
                    self._set_input(pending.trace, _items_to_messages(None, data.input))
                pending.steps.append(
                    Step(
                        len(pending.steps) + 1,
                        RequestSummary(len(data.input or [])),
                        _response_message(response.output),
                        usage=usage,
                        model_name=response.model,
                    )
                )
            elif isinstance(data, FunctionSpanData):
                pending.functions.append(
                    (data.name, data.input or "", data.output, time.perf_counter(), span.error)
                )
                self._attach(pending)

    @staticmethod
    def _set_input(trace: Trace, messages: list[Message]) -> None:
        trace.system_prompt = next((m.text for m in messages if m.role == "system"), None)
        rest = [m for m in messages if m.role != "system"]
        users = [i for i, m in enumerate(rest) if m.role == "user"]
        if users:
            trace.input = rest[users[-1]].text
            trace.history = rest[: users[-1]]

    def _attach(self, pending: _Pending) -> None:
        step_trace_id = pending.trace.id
        name, arguments, output, _, error = pending.functions.pop()
        if not pending.steps:
            return
        step = pending.steps[-1]
        answered = {r.call_id for r in step.tool_results}
        call = ToolCall.from_json_arguments(name, arguments)
        candidates = [
            c for c in step.response.tool_calls if c.name == name and c.id not in answered
        ]
        chosen = next((c for c in candidates if c.arguments == call.arguments), None)
        chosen = chosen or (candidates[0] if candidates else None)
        if chosen is None:
            return
        known = _known(step_trace_id, chosen.id)
        if known is not None:
            result = known
        else:
            status: Literal["ok", "error"] = "error" if error else "ok"
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            result = ToolResult(chosen.id, name, status, text or "", value=output)
        step.tool_results.append(result)
        order = {c.id: i for i, c in enumerate(step.response.tool_calls)}
        step.tool_results.sort(key=lambda r: order.get(r.call_id, 0))

    def on_trace_end(self, trace: Any) -> None:
        """Finish the toolproof Trace, keep it and hand it to the recorder."""
        with self._lock:
            pending = self._pending.pop(trace.trace_id, None)
        if pending is None:
            return
        done = _finish(pending.trace, pending.steps, pending.error)
        done.ended_at = _now()
        done.duration_ms = (time.perf_counter() - pending.started) * 1000
        with self._lock:
            self.traces.append(done)
            del self.traces[: -self.keep]
        if self.recorder is not None:
            try:
                self.recorder.record(done)
            except Exception:  # the recorder never breaks a run
                import logging

                logging.getLogger("toolproof").exception("recorder failed")

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self) -> None:
        """Nothing is buffered."""


def _chat_message(data: Any) -> Message:
    item = _item(data)
    role = item.get("role")
    calls = [
        ToolCall.from_json_arguments(
            str((c.get("function") or {}).get("name", "")),
            (c.get("function") or {}).get("arguments"),
            str(c.get("id", "")),
        )
        for c in item.get("tool_calls") or []
    ]
    content = item.get("content")
    text = content if isinstance(content, str) else _content_text(content) if content else None
    if role == "assistant":
        return Message.assistant(text, calls)
    if role == "system":
        return Message.system(text or "")
    if role == "tool":
        return Message(role="tool", content=text, tool_call_id=item.get("tool_call_id"))
    return Message.user(text or "")


# -- SDK agents where toolproof expects an Agent --------------------------------------------------


def _steps_of(model: AgentsModel) -> list[Step]:
    steps = []
    for index, response in enumerate(model.responses, 1):
        step = Step(
            index,
            RequestSummary(len(model.requests[index - 1].messages)),
            response.message,
            usage=response.usage,
            finish_reason=response.finish_reason,
            model_name=response.model_name,
        )
        if index < len(model.requests):
            answers = {
                m.tool_call_id: m for m in model.requests[index].messages if m.role == "tool"
            }
            step.tool_results = [
                _known("", c.id, answers[c.id].text)
                or ToolResult(c.id, c.name, "ok", answers[c.id].text)
                for c in response.message.tool_calls
                if c.id in answers
            ]
        steps.append(step)
    return steps


def _input_items(history: Sequence[Message], text: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for message in history:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.text,
                }
            )
        elif message.role == "assistant":
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            for c in message.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c.id,
                        "name": c.name,
                        "arguments": c.arguments_json(),
                    }
                )
        elif message.role in ("user", "system"):
            items.append({"role": message.role, "content": message.text})
    items.append({"role": "user", "content": text})
    return items


class AgentsSDKAgent(ToolproofAgent):
    """An OpenAI Agents SDK agent that toolproof can run, evaluate and record.

    On each run it builds the SDK agent from an :class:`AgentsModel` backed by this agent's
    toolproof model and ``FunctionTool`` versions of its tools (so a suite's scripted model,
    mock mode, fixtures and faults apply), runs it with ``Runner.run`` and returns a
    :class:`~toolproof.RunResult` whose trace comes from :func:`trace_from_result`.

    Args:
        build: ``build(model, tools)`` returns the SDK ``Agent``.
        model: A toolproof model or model string.
        tools: Tools or a toolset.
        max_steps: The SDK's ``max_turns``; exceeding it ends the run with ``"max_steps"``.
        sdk_tracing: Let the SDK's own tracing run (its default processor exports to the
            network when ``OPENAI_API_KEY`` is set); off by default, the trace comes from the
            run's result.
        name: Recorded in trace metadata.
        recorder: Receives every finished trace.

    Example:
        ```python
        def build_agent(model, tools=None):
            return AgentsSDKAgent(
                lambda sdk_model, sdk_tools: Agent(name="support", model=sdk_model,
                                                   tools=sdk_tools),
                model, TOOLS if tools is None else tools,
            )
        ```
    """

    def __init__(
        self,
        build: Callable[[AgentsModel, list[FunctionTool]], Any],
        model: Model | str,
        tools: Sequence[Tool[..., Any] | Callable[..., Any]] | Toolset = (),
        *,
        max_steps: int = 10,
        sdk_tracing: bool = False,
        name: str | None = None,
        recorder: Any = None,
    ) -> None:
        if not callable(build):
            raise UserError(f"AgentsSDKAgent(build=...) must be callable, got {build!r}")
        super().__init__(model, tools, max_steps=max_steps, name=name, recorder=recorder)
        self.build = build
        self.sdk_tracing = sdk_tracing

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
    ) -> ToolproofRunResult:
        """Run the SDK agent on one user message; see :meth:`toolproof.Agent.run`.

        Of the budget, the wall-clock limit (``max_seconds``) applies: the run is cancelled
        and ends with stop reason ``budget``. Turns are limited by ``max_steps``.

        Raises:
            AgentRunError: The SDK run raised; ``error.trace`` holds the partial trace.
        """
        from agents import RunConfig, Runner
        from agents.exceptions import AgentsException, MaxTurnsExceeded

        from toolproof._run import ForeignRun
        from toolproof.errors import AgentRunError

        run = ForeignRun(self, input, budget)
        sdk_model = AgentsModel(run.model)
        sdk_agent = self.build(sdk_model, to_function_tool(run.toolset))
        items: Any = _input_items(history, input)
        data: Any = await run.call(
            Runner.run(
                sdk_agent,
                items,
                max_turns=self.max_steps,
                run_config=RunConfig(tracing_disabled=not self.sdk_tracing),
            )
        )
        failure = run.failure
        if isinstance(failure, AgentsException):
            data = failure.run_data
        if data is not None and (data.raw_responses or not sdk_model.responses):
            trace = trace_from_result(data)
        else:  # the SDK kept nothing: rebuild the steps from what the model was asked
            trace = _finish(
                Trace(id=uuid.uuid4().hex, input=input, started_at=_now()),
                _steps_of(sdk_model),
                None,
            )
        trace.input = input
        run.describe(trace, history)
        instructions = getattr(sdk_agent, "instructions", None)
        trace.system_prompt = instructions if isinstance(instructions, str) else None
        trace.metadata = {**dict(metadata or {}), **({"agent": self.name} if self.name else {})}
        trace.tags = list(tags)
        trace.ended_at = _now()
        trace.duration_ms = (time.perf_counter() - run.started) * 1000
        if isinstance(failure, MaxTurnsExceeded):
            trace.stop_reason, trace.output = "max_steps", None
            trace.stop_detail = f"stopped after {self.max_steps} turns (max_turns): {failure}"
            run.failure = None
        elif failure is not None and not run.timed_out:
            root = failure.__cause__ if failure.__cause__ is not None else failure
            trace.stop_reason, trace.output = "error", None
            trace.error = ErrorInfo(
                type(root).__name__, str(failure), getattr(root, "tool_name", None)
            )
            trace.stop_detail = str(failure)
        cause = failure.__cause__ if failure is not None else None
        error = cause if isinstance(cause, AgentRunError) else None  # a tool bug, a refused call
        return run.finish(trace, framework="the Agents SDK run", error=error)
