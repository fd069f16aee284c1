"""Traces: from an SDK run's result, or from the SDK's tracing (``TraceProcessor``)."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from agents.tracing import FunctionSpanData, GenerationSpanData, ResponseSpanData, TracingProcessor

from toolproof._messages import Message, ToolCall, ToolResult, Usage
from toolproof._tools import Tool
from toolproof._trace import ErrorInfo, RequestSummary, Trace
from toolproof._trace_build import TraceBuilder, split_request, utc_now
from toolproof.integrations.openai_agents._models import _item, content_text, items_to_messages
from toolproof.integrations.openai_agents._tools import _known

__all__ = ["TraceProcessor", "trace_from_result"]


# -- traces ---------------------------------------------------------------------------------------


def trace_from_result(result: Any, *, tools: Sequence[Tool[..., Any]] = ()) -> Trace:
    """Build a toolproof Trace from an SDK ``RunResult`` (exact call ids and outputs).

    Args:
        result: What ``Runner.run`` returned.
        tools: The toolproof tools the agent was given (recorded with their schemas).
    """
    from agents.items import ToolCallOutputItem

    system, history, input_text = split_request(items_to_messages(None, result.input))
    instructions = getattr(result.last_agent, "instructions", None)
    if system is None and isinstance(instructions, str):
        system = instructions  # (the agent's own, as the SDK sends them)
    build = TraceBuilder(
        Trace(
            id=uuid.uuid4().hex,
            input=input_text,
            started_at=utc_now(),
            ended_at=utc_now(),
            history=history,
            system_prompt=system,
            tools=[t.info for t in tools],
            metadata={"agent": getattr(result.last_agent, "name", None)},
        ),
        mode_from_results=True,
    )
    state = getattr(result, "_trace_state", None)
    trace_id = str(getattr(state, "trace_id", "") or "")
    outputs: dict[str, ToolResult] = {}
    for item in result.new_items:
        if isinstance(item, ToolCallOutputItem):
            call_id = str(_item(item.raw_item).get("call_id", ""))
            output = item.output
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            known = _known(trace_id, call_id, text)
            outputs[call_id] = known or ToolResult(call_id, "", "ok", text, value=output)
    for response in result.raw_responses:
        usage = response.usage
        step = build.step(
            _response_message(response.output),
            usage=Usage(
                input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, requests=1
            ),
        )
        for call in step.response.tool_calls:
            if call.id in outputs:
                build.result(outputs[call.id], step)
    done = build.finish()
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
            text_parts.append(content_text(item.get("content")))
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
    build: TraceBuilder
    started: float
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
                TraceBuilder(
                    Trace(
                        id=trace.trace_id,
                        input="",
                        started_at=utc_now(),
                        metadata={"workflow": trace.name, **dict(trace.metadata or {})},
                        tags=[trace.group_id] if getattr(trace, "group_id", None) else [],
                    ),
                    mode_from_results=True,
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
                if not pending.build.trace.input and data.input:
                    _set_input(pending.build.trace, [_chat_message(m) for m in data.input])
                pending.build.step(
                    message,
                    request=RequestSummary(len(data.input or [])),
                    usage=usage,
                    model_name=data.model,
                )
            elif isinstance(data, ResponseSpanData) and data.response is not None:
                response = data.response
                usage = Usage(requests=1)
                if response.usage is not None:
                    usage.input_tokens = response.usage.input_tokens
                    usage.output_tokens = response.usage.output_tokens
                if not pending.build.trace.input and data.input:
                    _set_input(pending.build.trace, items_to_messages(None, data.input))
                pending.build.step(
                    _response_message(response.output),
                    request=RequestSummary(len(data.input or [])),
                    usage=usage,
                    model_name=response.model,
                )
            elif isinstance(data, FunctionSpanData):
                _attach(pending.build, data.name, data.input or "", data.output, span.error)

    def on_trace_end(self, trace: Any) -> None:
        """Finish the toolproof Trace, keep it and hand it to the recorder."""
        with self._lock:
            pending = self._pending.pop(trace.trace_id, None)
        if pending is None:
            return
        done = pending.build.finish(None, error=pending.error)
        done.ended_at = utc_now()
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
    text = content if isinstance(content, str) else content_text(content) if content else None
    if role == "assistant":
        return Message.assistant(text, calls)
    if role == "system":
        return Message.system(text or "")
    if role == "tool":
        return Message(role="tool", content=text, tool_call_id=item.get("tool_call_id"))
    return Message.user(text or "")


def _set_input(trace: Trace, messages: list[Message]) -> None:
    system, history, text = split_request(messages)
    trace.system_prompt = system
    if any(m.role == "user" for m in messages):
        trace.input, trace.history = text, history


def _attach(build: TraceBuilder, name: str, arguments: str, output: Any, error: Any) -> None:
    """A function span's result, as the result of the open call of the last step it answers."""
    steps = build.trace.steps
    if not steps:
        return
    step = steps[-1]
    answered = {r.call_id for r in step.tool_results}
    call = ToolCall.from_json_arguments(name, arguments)
    candidates = [c for c in step.response.tool_calls if c.name == name and c.id not in answered]
    chosen = next((c for c in candidates if c.arguments == call.arguments), None)
    chosen = chosen or (candidates[0] if candidates else None)
    if chosen is None:
        return
    result = _known(build.trace.id, chosen.id)
    if result is None:
        status: Literal["ok", "error"] = "error" if error else "ok"
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        result = ToolResult(chosen.id, name, status, text or "", value=output)
    build.result(result, step)
