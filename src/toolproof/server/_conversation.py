"""Conversations read off the wire, and the Trace each one becomes.

A conversation keeps what its trace needs (the first request's system prompt, history and
input, each answer, and the tool results sent back for it) and a digest of its transcript,
never every request's full list of messages: a conversation of n requests costs memory in
proportion to its last request, not to the sum of all of them.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from toolproof._messages import Message, ModelResponse, ToolDefinition
from toolproof._trace import ErrorInfo, RequestSummary, Trace, tool_info
from toolproof._trace_build import TraceBuilder, split_request, utc_now

__all__ = ["Conversation", "message_key", "results_unseen", "transcript_digests"]

#: The metadata a wire trace carries: its tool results are the text the agent sent back.
UNSEEN = {"tool_results": "unseen"}


def results_unseen(traces: Sequence[Trace]) -> str | None:
    """Why the tool results of ``traces`` cannot be checked (``None``: they can).

    A trace read off the wire holds each tool result as the text the agent sent back to
    the model: whether the tool failed, was mocked, or what it returned is the agent's own
    business, not on the wire. Checks that need it say so instead of passing.
    """
    if any(t.metadata.get("tool_results") == "unseen" and t.tool_calls for t in traces):
        return (
            "the agent runs its own tools, and the wire shows only the text it sent back for "
            "each result (not whether a tool failed or was mocked)"
        )
    return None


_arguments = json.JSONEncoder(sort_keys=True, default=str).encode


def message_key(message: Message, *, ids: bool = True) -> tuple[Any, ...]:
    """What identifies a message when matching a request to a conversation."""
    calls = tuple(
        (c.name, _arguments(c.arguments), c.id if ids else "") for c in message.tool_calls
    )
    call_id = message.tool_call_id if ids else None
    return (message.role, message.content or "", calls, call_id or "")


def _chain(previous: bytes, message: Message) -> bytes:
    """The digest of the transcript ``previous`` followed by ``message``."""
    key = repr(message_key(message)).encode("utf-8", "surrogatepass")  # unambiguous, quick
    return hashlib.sha256(previous + key).digest()


def transcript_digests(messages: Sequence[Message]) -> list[bytes]:
    """``digests[i]`` identifies the transcript ``messages[: i + 1]`` (contents and ids)."""
    digests: list[bytes] = []
    digest = b""
    for message in messages:
        digest = _chain(digest, message)
        digests.append(digest)
    return digests


def _chars(message: Message) -> int:
    """The characters of text ``message`` holds (what a conversation counts as kept)."""
    calls = sum(
        len(c.name) + len(c.raw_arguments or c.arguments_json()) + 16 for c in message.tool_calls
    )
    return len(message.content or "") + calls + 64


@dataclass(slots=True)
class _Exchange:
    count: int
    """How many messages the request had."""
    response: ModelResponse | None
    offset_ms: float
    latency_ms: float
    error: BaseException | None = None
    answers: list[Message] = field(default_factory=list)
    """What the next request sent after this answer: the results of its tool calls."""


@dataclass(eq=False)
class Conversation:
    """One user turn as the client sent it: its requests and the answers it was given.

    Attributes:
        model: The model answering this conversation.
        tag: The client's name for it (header ``X-Toolproof-Conversation``), if any.
        id: The conversation's id (the trace id).
        exchanges: Each request with its answer, in order.
        digest: The digest of its transcript up to and including the last answer: a
            request continues this conversation when its messages start with exactly that.
        busy: Whether a request of this conversation is being answered.
        chars: The characters of text it keeps (for the channel's memory budget).
    """

    model: Any
    tag: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    exchanges: list[_Exchange] = field(default_factory=list)
    tools: list[ToolDefinition] = field(default_factory=list)
    system: str | None = None
    history: list[Message] = field(default_factory=list)
    input: str = ""
    started: float = field(default_factory=time.perf_counter)
    started_at: str = field(default_factory=utc_now)
    ended_at: str = ""
    digest: bytes | None = None
    busy: bool = False
    chars: int = 0

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
        messages: Sequence[Message],
        digests: Sequence[bytes],
        tools: Sequence[ToolDefinition],
        response: ModelResponse | None,
        started: float,
        error: BaseException | None = None,
    ) -> None:
        """Record one request (its messages and their :func:`transcript_digests`) and answer."""
        if tools:
            self.tools = list(tools)
        if not self.exchanges:
            self._first(messages)
        else:
            self._results(messages)
        now = time.perf_counter()
        self.exchanges.append(
            _Exchange(
                len(messages),
                response,
                (started - self.started) * 1000,
                (now - started) * 1000,
                error,
            )
        )
        self.ended_at = utc_now()
        self.digest = None
        if response is not None:
            self.chars += _chars(response.message)
            self.digest = _chain(digests[-1] if digests else b"", response.message)

    def _first(self, messages: Sequence[Message]) -> None:
        self.system, self.history, self.input = split_request(messages)
        self.chars += len(self.system or "") + len(self.input)
        self.chars += sum(_chars(m) for m in self.history)

    def _results(self, messages: Sequence[Message]) -> None:
        last = self.exchanges[-1]
        if last.response is None:
            return
        calls = {c.id for c in last.response.message.tool_calls}
        new = messages[last.count + 1 :]
        last.answers = [m for m in new if m.role == "tool" and m.tool_call_id in calls]
        self.chars += sum(_chars(m) for m in last.answers)

    def trace(self, *, output: str | None = None) -> Trace:
        """The conversation as a Trace, as toolproof's own agent would have recorded it."""
        build = TraceBuilder(
            Trace(
                id=self.id,
                input=self.input,
                started_at=self.started_at,
                ended_at=self.ended_at or utc_now(),
                history=list(self.history),
                system_prompt=self.system,
                model=getattr(self.model, "name", "") or "",
                tools=[tool_info(t.name, t.description, t.parameters) for t in self.tools],
                duration_ms=(time.perf_counter() - self.started) * 1000,
                metadata={"source": "wire", **UNSEEN},
            )
        )
        for exchange in self.exchanges:
            response = exchange.response
            if response is None:
                continue
            step = build.step(
                response.message,
                request=RequestSummary(message_count=exchange.count),
                usage=response.usage,
                finish_reason=response.finish_reason,
                model_name=response.model_name,
                offset_ms=exchange.offset_ms,
                latency_ms=exchange.latency_ms,
                parse_errors=response.parse_errors,
            )
            build.answer(exchange.answers, step)
        last = self.exchanges[-1] if self.exchanges else None
        if last is not None and last.error is not None:
            failure = f"{type(last.error).__name__}: {last.error}"
            trace = build.finish(
                "error",
                detail=f"the model failed: {failure}",
                error=ErrorInfo(type(last.error).__name__, str(last.error)),
            )
        else:
            trace = build.finish()
        if output is not None:
            trace.output = output
        return trace
