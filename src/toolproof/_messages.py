"""Provider-neutral conversation data: messages, tool calls, tool results, usage.

These are plain (slotted) dataclasses so that building them on the agent's hot path costs
about a microsecond, and ``import toolproof`` stays free of pydantic. Their JSON codec lives
in ``_trace.py`` (one ``TypeAdapter`` for the whole trace).

Whatever is built here can be written as JSON and read back equal: construction turns ids
and names given as numbers into strings, replaces lone surrogates in text with U+FFFD, and
makes free-form values (arguments, tool values, metadata) plain JSON data with
:func:`json_data`. Negative token counts are refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from toolproof.errors import TraceFormatError

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
#: The error kinds of a call refused before its tool (real or mocked) ran: ``AlreadyRan`` is a
#: side-effecting repeat answered with the earlier result; the last three are a mocked run's
#: refusals where a tool is served alone (``toolproof mcp serve``).
NOT_RUN_ERRORS = frozenset(
    {
        "UnknownTool",
        "InvalidArguments",
        "ValidationError",
        "Rejected",
        "AlreadyRan",
        "UnmockedToolCall",
        "MockBypassed",
        "MissingFixture",
    }
)

#: Containers nested deeper than this in a free-form value are refused: the trace decoder
#: reads at most about 200 levels in the whole document, and the trace's own structure
#: takes up to 8 of them.
MAX_JSON_DEPTH = 64

#: Integers longer than this many bits are kept as decimal strings: Python refuses to read
#: integers of more than 4,300 digits from JSON (about 14,280 bits).
MAX_INT_BITS = 14_000

NON_FINITE = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


class _Unfit(Exception):
    """A value that is not plain JSON data; ``path`` grows while the walk unwinds."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


def json_data(value: Any, where: str = "value", *, strict: bool = False) -> Any:
    """``value`` as plain JSON data that encodes and decodes back equal.

    Plain data is returned as it is (the same object). Otherwise a converted copy is
    returned: tuples become lists, dictionary keys that are numbers, booleans or ``None``
    become their JSON text, ``NaN`` and infinities become the strings ``"NaN"``,
    ``"Infinity"`` and ``"-Infinity"``, integers of more than 4,000 digits become decimal
    strings, lone surrogates in strings become U+FFFD, and other objects pydantic knows how
    to write (datetimes, enums, sets, dataclasses...) become their JSON form.

    Args:
        value: The value.
        where: Names the value in error messages (``"metadata"``).
        strict: Refuse anything that is not already plain data instead of converting it
            (what the encoder does with values changed after construction).

    Raises:
        TraceFormatError: The value nests containers more than ``MAX_JSON_DEPTH`` deep, has
            an object that has no JSON form, or (with ``strict``) is not plain data. The
            message names the path of the offending part.
    """
    if plain(value, 0):
        return value
    try:
        return _convert(value, 0, strict)
    except _Unfit as exc:
        path = "".join(reversed(exc.path))
        raise TraceFormatError(f"{where}{path}: {exc.reason}") from None


def plain(value: Any, depth: int) -> bool:
    # The hot path of every ToolCall, ToolResult and Trace: exact type checks, and leaves of
    # containers checked inline (a function call per leaf would double the cost).
    kind = type(value)
    if kind is str:
        return value.isascii() or _encodable(value)
    if kind is int:
        return bool(value.bit_length() <= MAX_INT_BITS)
    if value is None or kind is bool:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth >= MAX_JSON_DEPTH:
        return False
    if kind is dict:
        for key in value:
            if type(key) is not str or not (key.isascii() or _encodable(key)):
                return False
        items = value.values()
    elif kind is list:
        items = value
    else:
        return False
    for item in items:
        leaf = type(item)
        if leaf is str:
            if not item.isascii() and not _encodable(item):
                return False
        elif leaf is int or leaf is bool or item is None:
            if leaf is int and item.bit_length() > MAX_INT_BITS:
                return False
        elif not plain(item, depth + 1):
            return False
    return True


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _clean_text(text: str) -> str:
    """``text`` with lone surrogates (which UTF-8 cannot hold) replaced by U+FFFD."""
    if text.isascii() or _encodable(text):
        return text
    return "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text)


def _convert(value: Any, depth: int, strict: bool) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return _convert_scalar(value, strict)
    if depth >= MAX_JSON_DEPTH:
        raise _Unfit(f"nested more than {MAX_JSON_DEPTH} levels deep")
    if isinstance(value, dict):
        if strict and type(value) is not dict:
            raise _Unfit(f"{type(value).__name__} is not a plain dict")
        out: dict[str, Any] = {}
        for key, item in value.items():
            name = _key(key, strict)
            try:
                out[name] = _convert(item, depth + 1, strict)
            except _Unfit as exc:
                exc.path.append(f"[{name!r}]")
                raise
        return out
    if isinstance(value, (list, tuple)):
        if strict and type(value) is not list:
            raise _Unfit(f"{type(value).__name__} is not a plain list")
        items = []
        for index, item in enumerate(value):
            try:
                items.append(_convert(item, depth + 1, strict))
            except _Unfit as exc:
                exc.path.append(f"[{index}]")
                raise
        return items
    if strict:
        raise _Unfit(f"{type(value).__name__} is not JSON data")
    try:
        from pydantic_core import to_jsonable_python

        converted = to_jsonable_python(value)
    except Exception:  # unknown types, cycles, too deep: all mean "no JSON form"
        raise _Unfit(f"{type(value).__name__} is not JSON data") from None
    if type(converted) is type(value):  # pragma: no cover - a converter that changes nothing
        raise _Unfit(f"{type(value).__name__} is not JSON data")
    return _convert(converted, depth, strict)


def _convert_scalar(value: str | bool | int | float | None, strict: bool) -> Any:
    """A string, ``None``, boolean or number as plain JSON data (see :func:`_convert`)."""
    if isinstance(value, str):
        text = str.__str__(value)
        if plain(text, 0):
            if strict and type(value) is not str:
                raise _Unfit(f"{type(value).__name__} is not a plain string")
            return text
        if strict:
            raise _Unfit("the string has lone surrogates, which UTF-8 cannot hold")
        return _clean_text(text)
    if value is None or isinstance(value, bool):
        if strict and value is not None and type(value) is not bool:  # pragma: no cover
            raise _Unfit(f"{type(value).__name__} is not a plain boolean")
        return value if value is None else bool(value)
    if isinstance(value, int):
        number = int(value)
        if number.bit_length() <= MAX_INT_BITS:
            if strict and type(value) is not int:
                raise _Unfit(f"{type(value).__name__} is not a plain integer")
            return number
        if strict:
            raise _Unfit("an integer of more than 4,000 digits; store it as a string")
        import decimal

        return str(decimal.Decimal(number))  # int -> str refuses more than 4,300 digits
    real = float(value)
    if math.isfinite(real):
        if strict and type(value) is not float:
            raise _Unfit(f"{type(value).__name__} is not a plain float")
        return real
    if strict:
        raise _Unfit(f"{real!r} is not a JSON number; store it as a string")
    return NON_FINITE[repr(real)]


def _key(key: Any, strict: bool) -> str:
    if type(key) is str and (key.isascii() or _encodable(key)):
        return key
    if strict:
        raise _Unfit(f"the key {key!r} is not a plain string")
    if isinstance(key, str):
        return _clean_text(str.__str__(key))
    if key is None or isinstance(key, (bool, int, float)):
        text = json.dumps(_convert(key, 0, False))
        return text.strip('"')
    raise _Unfit(f"the key {key!r} is not a string")


def as_str(value: Any) -> str:
    """A text field: strings kept (lone surrogates replaced), numbers and others as text."""
    if type(value) is str:
        return value if value.isascii() else _clean_text(value)
    if value is None:
        return ""
    return _clean_text(str(value))


def as_opt_str(value: Any) -> str | None:
    if value is None:
        return None
    return as_str(value)


MAX_COUNT = 2**63


def _count(value: Any, name: str) -> int:
    if type(value) is int and 0 <= value < MAX_COUNT:
        return value
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceFormatError(f"token count {name} must be an integer, got {value!r}"[:200])
    if value < 0:
        raise TraceFormatError(f"token count {name} must not be negative, got {value}")
    raise TraceFormatError(f"token count {name} is too large ({value.bit_length()} bits)")


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

    def __post_init__(self) -> None:
        if type(self.name) is not str or not self.name.isascii():
            self.name = as_str(self.name)
        if type(self.id) is not str or not self.id.isascii():
            self.id = as_str(self.id)
        if self.raw_arguments is not None and type(self.raw_arguments) is not str:
            self.raw_arguments = as_str(self.raw_arguments)
        elif self.raw_arguments is not None and not self.raw_arguments.isascii():
            self.raw_arguments = _clean_text(self.raw_arguments)
        if self.arguments_error is not None:
            self.arguments_error = as_str(self.arguments_error)
        if type(self.arguments) is not dict or self.arguments:
            arguments = json_data(self.arguments, "arguments")
            if not isinstance(arguments, dict):
                raise TraceFormatError(
                    f"tool call {self.name}: arguments must be a dict, got "
                    f"{type(arguments).__name__}"
                )
            self.arguments = arguments

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
            parsed = _decode_arguments(raw)
        except (ValueError, RecursionError) as exc:
            return cls(name, {}, id, raw, f"arguments are not valid JSON ({exc})")
        if not isinstance(parsed, dict):
            return cls(
                name, {}, id, raw, f"arguments must be a JSON object, got {type(parsed).__name__}"
            )
        if not plain(parsed, 0):
            return cls(
                name,
                {},
                id,
                raw,
                f"arguments nest more than {MAX_JSON_DEPTH} levels deep, or hold an integer "
                "of more than 4,000 digits",
            )
        return cls(name=name, arguments=parsed, id=id, raw_arguments=raw)

    def arguments_json(self) -> str:
        """The arguments as JSON text, as sent to an OpenAI-compatible API."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        return json.dumps(self.arguments, ensure_ascii=False)

    def with_id(self, id: str) -> ToolCall:
        """Return a copy of this call with another id."""
        # The other fields were checked when this call was built; only the id is new (a
        # dataclasses.replace would check the arguments again, the dearest part).
        copy = object.__new__(ToolCall)
        copy.name = self.name
        copy.arguments = self.arguments
        copy.id = id if type(id) is str and id.isascii() else as_str(id)
        copy.raw_arguments = self.raw_arguments
        copy.arguments_error = self.arguments_error
        return copy

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
        content: The text sent back to the model; for errors ``Error (<kind>): <message>``
            (see :func:`error_text`).
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

    def __post_init__(self) -> None:
        if type(self.call_id) is not str or not self.call_id.isascii():
            self.call_id = as_str(self.call_id)
        if type(self.name) is not str or not self.name.isascii():
            self.name = as_str(self.name)
        if type(self.content) is not str or not self.content.isascii():
            self.content = as_str(self.content)
        if self.error_type is not None and type(self.error_type) is not str:
            self.error_type = as_str(self.error_type)
        if self.value is not None:
            self.value = json_data(self.value, f"tool result {self.name}: value")

    @property
    def ok(self) -> bool:
        """Whether the tool succeeded."""
        return self.status == "ok"

    @property
    def ran(self) -> bool:
        """Whether the tool (real or mocked) ran: a refused call did not happen."""
        return not refused(self.status, self.error_type)


def refused(status: Any, error_type: Any) -> bool:
    """Whether a result of this status and error kind is a call refused before its tool ran.

    The rule of :attr:`ToolResult.ran`, also for results read back as JSON data.
    """
    return status == "error" and error_type in NOT_RUN_ERRORS


def error_text(kind: str, message: str) -> str:
    """The text a model reads for a failed tool call: ``Error (KeyError): E999``.

    Every error result toolproof makes carries this text as its ``content``, so each model
    adapter (native tool messages, the text protocol, LangChain, the Agents SDK, MCP) tells
    the model that the call failed and how.
    """
    return f"Error ({kind}): {message}"


def error_message(result: ToolResult) -> str:
    """The message of a failed ``result`` without the marker :func:`error_text` adds."""
    return result.content.removeprefix(error_text(result.error_type or "", ""))


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

    def __post_init__(self) -> None:
        content = self.content
        if content is not None and (type(content) is not str or not content.isascii()):
            self.content = as_str(content)
        if self.tool_call_id is not None and type(self.tool_call_id) is not str:
            self.tool_call_id = as_str(self.tool_call_id)
        if self.name is not None and type(self.name) is not str:
            self.name = as_str(self.name)
        reasoning = self.reasoning
        if reasoning is not None and (type(reasoning) is not str or not reasoning.isascii()):
            self.reasoning = as_str(reasoning)

    # The constructors pass fields by position: keyword arguments cost about 40 ns each in a
    # dataclass's __init__, and these run for every message of every run.

    @classmethod
    def system(cls, content: str) -> Message:
        """A system message."""
        return cls("system", content)

    @classmethod
    def user(cls, content: str) -> Message:
        """A user message."""
        return cls("user", content)

    @classmethod
    def assistant(
        cls,
        content: str | None = None,
        tool_calls: list[ToolCall] | None = None,
        *,
        reasoning: str | None = None,
    ) -> Message:
        """An assistant message: text, tool calls, or both."""
        return cls("assistant", content, list(tool_calls or ()), None, None, reasoning)

    @classmethod
    def tool(cls, result: ToolResult) -> Message:
        """The tool message that carries ``result`` back to the model."""
        return cls("tool", result.content, [], result.call_id, result.name, None, result.status)

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

    def __post_init__(self) -> None:
        a, b, c, d, e = (
            self.input_tokens,
            self.output_tokens,
            self.cached_tokens,
            self.reasoning_tokens,
            self.requests,
        )
        if not (
            type(a) is int
            and type(b) is int
            and type(c) is int
            and type(d) is int
            and type(e) is int
            and 0 <= (a | b | c | d | e) < MAX_COUNT  # one check for all five
        ):
            self.input_tokens = _count(self.input_tokens, "input_tokens")
            self.output_tokens = _count(self.output_tokens, "output_tokens")
            self.cached_tokens = _count(self.cached_tokens, "cached_tokens")
            self.reasoning_tokens = _count(self.reasoning_tokens, "reasoning_tokens")
            self.requests = _count(self.requests, "requests")
        if self.details:
            self.details = {as_str(k): _count(v, "details") for k, v in self.details.items()}

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        details = dict(self.details) if self.details else {}
        if other.details:
            for key, value in other.details.items():
                details[key] = details.get(key, 0) + value
        return Usage(  # by position: see Message.system
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.requests + other.requests,
            self.estimated or other.estimated,
            details,
        )


def sum_usage(usages: list[Usage]) -> Usage:
    """The sum of ``usages`` field by field, as ``Usage.__add__`` sums two, in one record."""
    a = b = c = d = e = 0
    estimated = False
    details: dict[str, int] = {}
    for usage in usages:
        a += usage.input_tokens
        b += usage.output_tokens
        c += usage.cached_tokens
        d += usage.reasoning_tokens
        e += usage.requests
        estimated = estimated or usage.estimated
        if usage.details:
            for key, value in usage.details.items():
                details[key] = details.get(key, 0) + value
    return Usage(a, b, c, d, e, estimated, details)  # by position: see Message.system


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
        chosen = {
            name: getattr(other if getattr(other, name) is not None else self, name)
            for name in _OPTIONAL_SETTINGS
        }
        return ModelSettings(**chosen, extra={**self.extra, **other.extra})

    def to_dict(self) -> dict[str, Any]:
        """The fields that are set, as a plain dict (for traces and request bodies)."""
        out: dict[str, Any] = {
            name: value for name in _OPTIONAL_SETTINGS if (value := getattr(self, name)) is not None
        }
        if self.extra:
            out["extra"] = dict(self.extra)
        return out


#: The settings that ``None`` leaves unset, in the order they are sent.
_OPTIONAL_SETTINGS = (
    "temperature",
    "max_tokens",
    "seed",
    "stop",
    "tool_choice",
    "parallel_tool_calls",
)


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

    def __post_init__(self) -> None:
        if self.model_name is not None and type(self.model_name) is not str:
            self.model_name = as_str(self.model_name)
        if self.finish_reason is not None and type(self.finish_reason) is not str:
            self.finish_reason = as_str(self.finish_reason)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_arguments_decoder: json.JSONDecoder | None = None


def _decode_arguments(raw: str) -> Any:
    """``json.loads(raw, parse_constant=_no_constant)`` with one decoder for every call.

    ``json.loads`` builds a new decoder for each call given an argument (~2 µs). A text
    starting with a byte-order mark goes to ``json.loads`` itself, for its message.
    """
    global _arguments_decoder
    if raw[:1] == "\ufeff":
        return json.loads(raw, parse_constant=_no_constant)
    if _arguments_decoder is None:
        _arguments_decoder = json.JSONDecoder(parse_constant=_no_constant)
    return _arguments_decoder.decode(raw)


def _short(value: Any, limit: int = 60) -> str:
    text = (
        repr(value)
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, default=str)
    )
    return text if len(text) <= limit else text[: limit - 1] + "…"
