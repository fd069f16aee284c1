"""The Trace: the one record every way of running an agent produces, and every check reads.

Format invariant: ``version`` is bumped whenever a field is removed or changes meaning; new
optional fields with defaults do not bump it. Reading a trace with a version this code does
not know raises a ``UserError`` that says how to migrate. The JSON codec is one pydantic
``TypeAdapter`` built on first use (so ``import toolproof`` does not import pydantic).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from toolproof._messages import Message, ToolCall, ToolResult, Usage
from toolproof.errors import UserError

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = [
    "TRACE_VERSION",
    "ErrorInfo",
    "RequestSummary",
    "Step",
    "StopReason",
    "ToolInfo",
    "Trace",
    "stable_hash",
]

#: Version of the trace format written by this code. Bump it when a field is removed or
#: changes meaning; readers refuse versions they do not know (see module docstring).
TRACE_VERSION = 1

StopReason = Literal["final", "max_steps", "budget", "repeated_call", "cancelled", "error"]


def stable_hash(value: Any) -> str:
    """A short, stable content hash (sha256 of canonical JSON, first 16 hex digits).

    Used for system-prompt and tool-schema versions: equal content gives equal hashes across
    processes and machines.
    """
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(value.encode()).hexdigest()[:16]


@dataclass(slots=True)
class ToolInfo:
    """A tool as it was offered to the model in a run.

    Attributes:
        name: The tool's name.
        description: Its description.
        parameters: Its parameters' JSON Schema.
        schema_hash: ``stable_hash`` of name, description and parameters: the tool-schema
            version recorded with every run.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    schema_hash: str


@dataclass(slots=True)
class RequestSummary:
    """What was sent to the model in one step.

    Attributes:
        message_count: Messages in the request, system prompt included.
        estimated_tokens: toolproof's estimate of the request's input tokens.
        trimmed_messages: Messages that memory left out of this request to fit its budget.
        summarized: Whether a summary message replaced trimmed history.
    """

    message_count: int
    estimated_tokens: int = 0
    trimmed_messages: int = 0
    summarized: bool = False


@dataclass(slots=True)
class Step:
    """One model call and the tool calls it asked for.

    Attributes:
        index: 1-based step number within the run.
        offset_ms: When the step started, in milliseconds after the run started.
        latency_ms: How long the model took to answer.
        request: What was sent.
        response: The assistant message the model returned.
        usage: Tokens of this model call.
        finish_reason: The provider's finish reason.
        model_name: The model that answered, as reported.
        tool_results: One result per tool call of ``response``, in call order.
        parse_errors: Tool-call blocks the model wrote that could not be parsed.
        cost: Cost of this model call in USD, when a price is known.
    """

    index: int
    request: RequestSummary
    response: Message
    offset_ms: float = 0.0
    latency_ms: float = 0.0
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    model_name: str | None = None
    tool_results: list[ToolResult] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    cost: float | None = None


@dataclass(slots=True)
class ErrorInfo:
    """Why a run stopped with ``stop_reason="error"``.

    Attributes:
        type: The exception class name.
        message: The exception message.
        tool_name: The tool involved, if any.
    """

    type: str
    message: str
    tool_name: str | None = None


@dataclass(slots=True)
class Trace:
    """The complete record of one agent run.

    Attributes:
        id: Unique id of the run.
        input: The user message that started the run.
        version: Trace format version (see ``TRACE_VERSION``).
        started_at: ISO-8601 UTC time the run started.
        ended_at: ISO-8601 UTC time the run ended.
        history: Conversation before this run (earlier turns of a session).
        system_prompt: The system prompt.
        system_prompt_hash: ``stable_hash`` of the system prompt: its version.
        model: The model's name (``"deepseek:deepseek-chat"``, ``"scripted"``...).
        settings: Generation settings that were set.
        tools: Every tool offered, with its schema hash.
        tool_mode: ``"real"`` or ``"mock"``: which implementations answered.
        steps: Every model call, in order.
        output: The final answer, or ``None`` when the run did not produce one.
        stop_reason: Why the run ended.
        stop_detail: A sentence explaining ``stop_reason`` when it is not ``"final"``.
        error: The error that stopped the run, for ``stop_reason="error"``.
        usage: Tokens summed over all steps.
        cost: Cost in USD summed over all steps, when prices are known.
        duration_ms: Wall time of the run.
        metadata: Free-form data from the caller (case names, user ids...).
        tags: Labels from the caller, used to filter stored traces.
    """

    id: str
    input: str
    version: int = TRACE_VERSION
    started_at: str = ""
    ended_at: str = ""
    history: list[Message] = field(default_factory=list)
    system_prompt: str | None = None
    system_prompt_hash: str | None = None
    model: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    tools: list[ToolInfo] = field(default_factory=list)
    tool_mode: str = "real"
    steps: list[Step] = field(default_factory=list)
    output: str | None = None
    stop_reason: StopReason = "final"
    stop_detail: str | None = None
    error: ErrorInfo | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    duration_ms: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)

    # -- views -------------------------------------------------------------------------------

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Every tool call of the run, in order."""
        return [call for step in self.steps for call in step.response.tool_calls]

    @property
    def tool_results(self) -> list[ToolResult]:
        """Every tool result of the run, in call order."""
        return [result for step in self.steps for result in step.tool_results]

    @property
    def tool_names(self) -> list[str]:
        """The names of the tools called, in order (repeats included)."""
        return [call.name for call in self.tool_calls]

    def calls_and_results(self) -> Iterator[tuple[ToolCall, ToolResult | None]]:
        """Each tool call with its result (``None`` if the run stopped before it ran)."""
        for step in self.steps:
            by_id = {result.call_id: result for result in step.tool_results}
            for call in step.response.tool_calls:
                yield call, by_id.get(call.id)

    @property
    def messages(self) -> list[Message]:
        """The whole conversation of the run, as the model saw it without trimming."""
        out: list[Message] = []
        if self.system_prompt:
            out.append(Message.system(self.system_prompt))
        out.extend(self.history)
        out.append(Message.user(self.input))
        for step in self.steps:
            out.append(step.response)
            out.extend(Message.tool(result) for result in step.tool_results)
        return out

    @property
    def ok(self) -> bool:
        """Whether the run ended with a final answer."""
        return self.stop_reason == "final"

    def summary(self) -> str:
        """A few readable lines: outcome, steps, tool calls, tokens, cost and time."""
        calls = self.tool_calls
        errors = sum(1 for result in self.tool_results if not result.ok)
        lines = [
            f"trace {self.id}  model={self.model}  stop={self.stop_reason}",
            f"  steps={len(self.steps)}  tool_calls={len(calls)}  tool_errors={errors}"
            f"  tokens={self.usage.input_tokens}+{self.usage.output_tokens}"
            + (f"  cost=${self.cost:.6f}" if self.cost is not None else "")
            + f"  time={self.duration_ms:.1f}ms",
        ]
        if calls:
            lines.append("  tools: " + ", ".join(call.signature() for call in calls))
        if self.stop_detail:
            lines.append(f"  detail: {self.stop_detail}")
        if self.output is not None:
            lines.append(f"  output: {self.output}")
        return "\n".join(lines)

    # -- codec -------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The trace as plain JSON-compatible data."""
        data: dict[str, Any] = _adapter().dump_python(self, mode="json")
        return data

    def to_json(self, *, indent: int | None = None) -> str:
        """The trace as JSON text (readable with ``indent=2``)."""
        return _adapter().dump_json(self, indent=indent).decode()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        """Read a trace from plain data produced by :meth:`to_dict`.

        Raises:
            UserError: The data is not a trace of a known version.
        """
        _check_version(data.get("version") if isinstance(data, dict) else None)
        trace: Trace = _adapter().validate_python(data)
        return trace

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        """Read a trace from JSON produced by :meth:`to_json`.

        Raises:
            UserError: The text is not a trace of a known version.
        """
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UserError(f"not a toolproof trace: invalid JSON ({exc})") from exc
        if not isinstance(data, dict):
            raise UserError("not a toolproof trace: expected a JSON object")
        return cls.from_dict(data)


def _check_version(version: object) -> None:
    if version == TRACE_VERSION:
        return
    if not isinstance(version, int):
        raise UserError("not a toolproof trace: it has no integer 'version' field")
    if version > TRACE_VERSION:
        raise UserError(
            f"trace format version {version} is newer than this toolproof understands "
            f"(version {TRACE_VERSION}); upgrade toolproof to read it"
        )
    raise UserError(
        f"trace format version {version} is no longer supported (current: {TRACE_VERSION}); "
        "re-record the trace or convert it with an older toolproof release"
    )


@cache
def _adapter() -> TypeAdapter[Trace]:
    from pydantic import TypeAdapter

    return TypeAdapter(Trace)
