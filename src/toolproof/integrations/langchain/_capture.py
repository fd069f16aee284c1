"""Trace capture: a callback handler that turns a LangChain or LangGraph run into a Trace."""

from __future__ import annotations

import contextvars
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import LLMResult
from langchain_core.tracers.context import register_configure_hook

from toolproof._messages import Message, ToolCall, ToolResult, Usage
from toolproof._trace import ErrorInfo, RequestSummary, Step, ToolInfo, Trace, tool_info
from toolproof._trace_build import TraceBuilder, split_request, utc_now
from toolproof.errors import AgentRunError
from toolproof.integrations.langchain._messages import _text, to_toolproof_messages

__all__ = ["TraceCapture", "capture_trace"]


# -- trace capture ---------------------------------------------------------------------------------


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
        self._started_at = utc_now()
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
                    self._tools[function["name"]] = tool_info(
                        function["name"],
                        function.get("description") or "",
                        function.get("parameters") or {},
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
        self._finish(run_id, lambda run: _end_result(run, output))

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Record a tool run that raised as an error result of its call."""
        self._finish(run_id, lambda run: _error_result(run, error))

    def _finish(self, run_id: UUID, result_of: Callable[[_ToolRun], ToolResult]) -> None:
        with self._lock:
            run = self._tool_runs.pop(run_id, None)
            if run is None:
                return
            result = result_of(run)
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
        system, history, input_text = split_request(first)
        if self._input is not None:
            input_text = self._input
            if not any(m.role == "user" for m in first):
                history = []
        ended = self._ended if self._ended is not None else self._clock()
        build = TraceBuilder(
            Trace(
                id=uuid.uuid4().hex,
                input=input_text,
                started_at=self._started_at,
                ended_at=utc_now(),
                history=history,
                system_prompt=system,
                tools=list(self._tools.values()),
                duration_ms=(ended - self._started) * 1000,
                metadata=dict(self._metadata),
                tags=list(self._tags),
            ),
            mode_from_results=True,
        )
        for recorded in self._steps:
            step = build.step(
                recorded.response,
                request=recorded.request,
                usage=recorded.usage,
                finish_reason=recorded.finish_reason,
                model_name=recorded.model_name,
                offset_ms=recorded.offset_ms,
                latency_ms=recorded.latency_ms,
            )
            for i in range(len(recorded.response.tool_calls)):
                result = self._results.get((recorded.index, i))
                if result is not None:
                    build.result(result, step)
        failure = self._error
        if failure is None:
            return build.finish()
        # Like toolproof's own loop: a run error is named by its root cause.
        root = failure.__cause__ or failure if isinstance(failure, AgentRunError) else failure
        error = ErrorInfo(type(root).__name__, str(failure), getattr(failure, "tool_name", None))
        detail = str(failure) if root is not failure else f"{type(root).__name__}: {root}"
        return build.finish("error", detail=detail, error=error)


def _end_result(run: _ToolRun, output: Any) -> ToolResult:
    """The result of a tool run that returned ``output``."""
    if run.result is not None:
        if isinstance(output, ToolMessage):
            run.result.content = _text(output.content)
        return run.result
    if isinstance(output, ToolMessage):
        artifact = output.artifact
        status: Literal["ok", "error"] = "error" if output.status == "error" else "ok"
        return ToolResult(
            "",
            run.name,
            status,
            _text(output.content),
            value=None
            if status == "error"
            else _jsonable(artifact if artifact is not None else output.content),
            error_type="ToolException" if status == "error" else None,
        )
    value = _jsonable(output)
    content = output if isinstance(output, str) else json.dumps(value, ensure_ascii=False)
    return ToolResult("", run.name, "ok", content, value=value)


def _error_result(run: _ToolRun, error: BaseException) -> ToolResult:
    """The result of a tool run that raised ``error``."""
    if run.result is not None:
        return run.result
    text = str(error.args[0]) if len(error.args) == 1 else str(error)
    return ToolResult(
        "", run.name, "error", text or type(error).__name__, error_type=type(error).__name__
    )


def _jsonable(value: Any) -> Any:
    from pydantic_core import to_jsonable_python

    if isinstance(value, ToolResult):
        return value.value
    return to_jsonable_python(value, fallback=str)


active: contextvars.ContextVar[TraceCapture | None] = contextvars.ContextVar(
    "toolproof_langchain_capture", default=None
)
register_configure_hook(active, inheritable=True)


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
    with capturing(capture):
        yield capture


@contextmanager
def capturing(capture: TraceCapture) -> Iterator[None]:
    token = active.set(capture)
    try:
        yield
    except BaseException as exc:
        capture.fail(exc)
        raise
    finally:
        active.reset(token)
        capture.finish()
