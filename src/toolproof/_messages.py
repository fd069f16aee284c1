"""Provider-neutral conversation data: messages, tool calls, tool results, usage.

These are plain (slotted) dataclasses so that building them on the agent's hot path costs
about a microsecond, and ``import toolproof`` stays free of pydantic. Their JSON codec lives
in ``_trace.py`` (one ``TypeAdapter`` for the whole trace).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "Message",
    "ModelResponse",
    "ModelSettings",
    "Role",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "Usage",
]

Role = Literal["system", "user", "assistant", "tool"]
ToolStatus = Literal["ok", "error"]


@dataclass(slots=True)
class ToolCall:
    """One tool call requested by the model.

    Attributes:
        name: The tool's name, as the model wrote it.
        arguments: The parsed arguments (``{}`` when the model's text was not a JSON object).
        id: The call id that links the call to its result.
        raw_arguments: The arguments exactly as the model sent them, when it sent text; kept
            so the conversation can be sent back verbatim and malformed JSON can be shown.
        arguments_error: Why ``raw_arguments`` could not be parsed, if it could not.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str = ""
    raw_arguments: str | None = None
    arguments_error: str | None = None

    @classmethod
    def from_json_arguments(cls, name: str, raw: str | None, id: str = "") -> ToolCall:
        """Build a call from a provider's JSON-text arguments, never raising.

        Args:
            name: The tool name.
            raw: The arguments as text (``None`` or ``""`` mean no arguments).
            id: The call id.

        Returns:
            The call; ``arguments_error`` says what was wrong if the text was not a JSON object.
        """
        if raw is None or not raw.strip():
            return cls(name=name, arguments={}, id=id, raw_arguments=raw)
        try:
            parsed = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            return cls(name, {}, id, raw, f"arguments are not valid JSON ({exc})")
        if not isinstance(parsed, dict):
            return cls(
                name, {}, id, raw, f"arguments must be a JSON object, got {type(parsed).__name__}"
            )
        return cls(name=name, arguments=parsed, id=id, raw_arguments=raw)

    def arguments_json(self) -> str:
        """The arguments as JSON text, as sent to an OpenAI-compatible API."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    def with_id(self, id: str) -> ToolCall:
        """Return a copy of this call with another id."""
        return replace(self, id=id)

    def signature(self) -> str:
        """A readable one-line form such as ``multiply_numbers(a=12, b=8)``."""
        if self.arguments_error is not None:
            return f"{self.name}(<{self.raw_arguments!r}>)"
        args = ", ".join(f"{k}={_short(v)}" for k, v in self.arguments.items())
        return f"{self.name}({args})"


@dataclass(slots=True)
class ToolResult:
    """The outcome of one tool call, as the model will see it.

    Attributes:
        call_id: The id of the call this answers.
        name: The tool name.
        status: ``"ok"`` or ``"error"``.
        content: The text sent back to the model.
        value: The tool's return value in JSON form (``None`` for errors).
        error_type: For errors, what kind: ``"ToolError"``, ``"ValidationError"``,
            ``"UnknownTool"``, ``"InvalidArguments"``, ``"Rejected"``, ``"Timeout"``, or the
            name of a declared exception class such as ``"KeyError"``.
        duration_ms: How long the tool ran.
        mocked: Whether a mock implementation answered instead of the real tool.
    """

    call_id: str
    name: str
    status: ToolStatus
    content: str
    value: Any = None
    error_type: str | None = None
    duration_ms: float = 0.0
    mocked: bool = False

    @property
    def ok(self) -> bool:
        """Whether the tool succeeded."""
        return self.status == "ok"


@dataclass(slots=True)
class Message:
    """One message of a conversation, in a provider-neutral form.

    Use the constructors :meth:`system`, :meth:`user`, :meth:`assistant` and :meth:`tool`.

    Attributes:
        role: ``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``.
        content: The text (``None`` for an assistant message that only calls tools).
        tool_calls: For assistant messages, the tools it asks to call.
        tool_call_id: For tool messages, the call they answer.
        name: For tool messages, the tool's name.
        reasoning: Reasoning text some providers return (DeepSeek ``reasoning_content``),
            kept so it can be sent back when the provider requires it.
        status: For tool messages, ``"ok"`` or ``"error"``.
    """

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    reasoning: str | None = None
    status: ToolStatus | None = None

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls(role="system", content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls(role="user", content=content)

    @classmethod
    def assistant(
        cls,
        content: str | None = None,
        tool_calls: list[ToolCall] | None = None,
        *,
        reasoning: str | None = None,
    ) -> Message:
        """An assistant message: text, tool calls, or both."""
        return cls(
            role="assistant",
            content=content,
            tool_calls=list(tool_calls or ()),
            reasoning=reasoning,
        )

    @classmethod
    def tool(cls, result: ToolResult) -> Message:
        """The tool message that carries ``result`` back to the model."""
        return cls(
            role="tool",
            content=result.content,
            tool_call_id=result.call_id,
            name=result.name,
            status=result.status,
        )

    @property
    def text(self) -> str:
        """The content, or ``""`` when there is none."""
        return self.content or ""


@dataclass(slots=True)
class Usage:
    """Token usage of one model call, or a sum of several.

    Attributes:
        input_tokens: Prompt tokens, including cached ones.
        output_tokens: Completion tokens, including reasoning ones.
        cached_tokens: Prompt tokens served from the provider's cache (DeepSeek cache hits,
            OpenAI ``cached_tokens``).
        reasoning_tokens: Completion tokens spent on reasoning.
        requests: Number of model calls summed here.
        estimated: Whether the counts come from toolproof's estimator rather than the provider.
        details: Provider-specific extra counters, kept as reported.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    estimated: bool = False
    details: dict[str, int] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        details = dict(self.details)
        for key, value in other.details.items():
            details[key] = details.get(key, 0) + value
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            requests=self.requests + other.requests,
            estimated=self.estimated or other.estimated,
            details=details,
        )


@dataclass(slots=True)
class ToolDefinition:
    """What the model is told about one tool.

    Attributes:
        name: The tool's name.
        description: What the tool does and when to use it.
        parameters: The JSON Schema of its arguments (an ``object`` schema).
    """

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry: ``{"type": "function", "function": {...}}``."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


@dataclass(slots=True)
class ModelSettings:
    """Generation settings passed to the model with every request.

    ``None`` means "not set": the provider's default applies and nothing is sent.

    Attributes:
        temperature: Sampling temperature.
        max_tokens: Cap on completion tokens.
        seed: Sampling seed, where the provider supports one.
        stop: Stop sequences.
        tool_choice: ``"auto"``, ``"none"``, ``"required"`` or a tool name to force.
        parallel_tool_calls: Whether the model may call several tools in one message.
        extra: Provider-specific body fields sent as they are.
    """

    temperature: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    stop: list[str] | None = None
    tool_choice: str | None = None
    parallel_tool_calls: bool | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def merged(self, other: ModelSettings | None) -> ModelSettings:
        """Return these settings overridden by every field ``other`` sets."""
        if other is None:
            return self
        return ModelSettings(
            temperature=other.temperature if other.temperature is not None else self.temperature,
            max_tokens=other.max_tokens if other.max_tokens is not None else self.max_tokens,
            seed=other.seed if other.seed is not None else self.seed,
            stop=other.stop if other.stop is not None else self.stop,
            tool_choice=other.tool_choice if other.tool_choice is not None else self.tool_choice,
            parallel_tool_calls=(
                other.parallel_tool_calls
                if other.parallel_tool_calls is not None
                else self.parallel_tool_calls
            ),
            extra={**self.extra, **other.extra},
        )

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, as a plain dict (for traces and request bodies)."""
        out: dict[str, Any] = {}
        for key in ("temperature", "max_tokens", "seed", "stop", "tool_choice"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        if self.parallel_tool_calls is not None:
            out["parallel_tool_calls"] = self.parallel_tool_calls
        if self.extra:
            out["extra"] = dict(self.extra)
        return out


@dataclass(slots=True)
class ModelResponse:
    """What a model returned for one request.

    Attributes:
        message: The assistant message (text and/or tool calls).
        usage: Token usage of this request.
        model_name: The model that answered, as the provider reported it.
        finish_reason: Why generation stopped (``"stop"``, ``"tool_calls"``, ``"length"``...).
        parse_errors: Tool-call blocks the model wrote that could not be parsed (text
            protocol); the agent sends them back as a correction.
    """

    message: Message
    usage: Usage = field(default_factory=Usage)
    model_name: str | None = None
    finish_reason: str | None = None
    parse_errors: list[str] = field(default_factory=list)


def _short(value: Any, limit: int = 60) -> str:
    text = (
        repr(value)
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, default=str)
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"
