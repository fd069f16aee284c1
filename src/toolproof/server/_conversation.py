"""Conversations read off the wire, and the Trace each one becomes."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from toolproof._messages import Message, ModelResponse, ToolDefinition, ToolResult, Usage
from toolproof._trace import ErrorInfo, RequestSummary, Step, ToolInfo, Trace, stable_hash

__all__ = ["Conversation", "message_key"]


def message_key(message: Message, *, ids: bool = True) -> tuple[Any, ...]:
    """What identifies a message when matching a request to a conversation."""
    calls = tuple(
        (c.name, json.dumps(c.arguments, sort_keys=True, default=str), c.id if ids else "")
        for c in message.tool_calls
    )
    call_id = message.tool_call_id if ids else None
    return (message.role, message.content or "", calls, call_id or "")


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass(slots=True)
class _Exchange:
    messages: list[Message]
    response: ModelResponse | None
    offset_ms: float
    latency_ms: float
    error: BaseException | None = None


@dataclass
class Conversation:
    """One user turn as the client sent it: its requests and the answers it was given.

    Attributes:
        id: The conversation's id (the trace id).
        model: The model answering this conversation.
        exchanges: Each request with its answer, in order.
    """

    model: Any
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    exchanges: list[_Exchange] = field(default_factory=list)
    tools: list[ToolDefinition] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    started_at: str = field(default_factory=_now)
    ended_at: str = ""

    expected: list[tuple[Any, ...]] = field(default_factory=list)
    """The keys a continuation of this conversation starts with."""
    tail: tuple[int, tuple[Any, ...]] | None = None
    """Where the channel indexes this conversation (the position and key of its last answer)."""

    @property
    def finished(self) -> bool:
        """Whether the last answer was final (no tool calls) or an error."""
        if not self.exchanges:
            return False
        last = self.exchanges[-1]
        return last.response is None or not last.response.message.tool_calls

    def pending_call_ids(self) -> set[str]:
        """The ids of the tool calls of the last answer."""
        if not self.exchanges or self.exchanges[-1].response is None:
            return set()
        return {c.id for c in self.exchanges[-1].response.message.tool_calls}

    def add(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        response: ModelResponse | None,
        started: float,
        error: BaseException | None = None,
    ) -> None:
        """Record one request and its answer."""
        if tools:
            self.tools = list(tools)
        now = time.perf_counter()
        self.exchanges.append(
            _Exchange(
                list(messages),
                response,
                (started - self.started) * 1000,
                (now - started) * 1000,
                error,
            )
        )
        self.ended_at = _now()
        self.expected = [message_key(m) for m in messages]
        if response is not None:
            self.expected.append(message_key(response.message))

    def trace(self, *, output: str | None = None) -> Trace:
        """The conversation as a Trace, as toolproof's own agent would have recorded it."""
        first = self.exchanges[0].messages if self.exchanges else []
        system = next((m.content for m in first if m.role == "system"), None)
        users = [i for i, m in enumerate(first) if m.role == "user"]
        start = users[-1] if users else len(first)
        user_input = first[start].content or "" if users else ""
        history = [m for m in first[:start] if m.role != "system"]
        steps: list[Step] = []
        usage = Usage()
        for index, exchange in enumerate(self.exchanges):
            if exchange.response is None:
                continue
            response = exchange.response
            results: list[ToolResult] = []
            calls = {c.id: c.name for c in response.message.tool_calls}
            if index + 1 < len(self.exchanges):
                for m in self.exchanges[index + 1].messages[len(exchange.messages) + 1 :]:
                    if m.role == "tool" and m.tool_call_id in calls:
                        results.append(
                            ToolResult(
                                m.tool_call_id or "",
                                calls[m.tool_call_id or ""],
                                "ok",
                                m.content or "",
                            )
                        )
            usage = usage + response.usage
            steps.append(
                Step(
                    index=len(steps),
                    request=RequestSummary(message_count=len(exchange.messages)),
                    response=response.message,
                    offset_ms=exchange.offset_ms,
                    latency_ms=exchange.latency_ms,
                    usage=response.usage,
                    finish_reason=response.finish_reason,
                    model_name=response.model_name,
                    tool_results=results,
                    parse_errors=list(response.parse_errors),
                )
            )
        trace = Trace(
            id=self.id,
            input=user_input,
            started_at=self.started_at,
            ended_at=self.ended_at or _now(),
            history=history,
            system_prompt=system,
            system_prompt_hash=stable_hash(system) if system is not None else None,
            model=getattr(self.model, "name", "") or "",
            tools=[
                ToolInfo(
                    t.name,
                    t.description,
                    t.parameters,
                    stable_hash(
                        {"name": t.name, "description": t.description, "parameters": t.parameters}
                    ),
                )
                for t in self.tools
            ],
            tool_mode="real",
            steps=steps,
            usage=usage,
            duration_ms=(time.perf_counter() - self.started) * 1000,
            metadata={"source": "wire"},
        )
        last = self.exchanges[-1] if self.exchanges else None
        if last is not None and last.error is not None:
            trace.stop_reason = "error"
            trace.stop_detail = f"the model failed: {type(last.error).__name__}: {last.error}"
            trace.error = ErrorInfo(type(last.error).__name__, str(last.error))
        elif steps and not steps[-1].response.tool_calls:
            trace.output = steps[-1].response.content or ""
        elif steps:
            trace.stop_reason = "error"
            trace.stop_detail = "the client stopped without sending the tool results back"
        if output is not None:
            trace.output = output
        return trace
