"""Traces: from an SDK run's result, or from the SDK's tracing (``TraceProcessor``)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Literal

from agents.tracing import FunctionSpanData, GenerationSpanData, ResponseSpanData, TracingProcessor

from toolproof._messages import Message, ToolCall, ToolResult, Usage
from toolproof._tools import Tool
from toolproof._trace import ErrorInfo, RequestSummary, Step, StopReason, Trace
from toolproof.integrations.openai_agents._models import _content_text, _item, _items_to_messages
from toolproof.integrations.openai_agents._tools import _known

__all__ = ["TraceProcessor", "trace_from_result"]


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
