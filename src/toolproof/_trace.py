"""The Trace: the one record every way of running an agent produces, and every check reads.

Format invariant: ``version`` is bumped whenever a field is removed or changes meaning; new
optional fields with defaults do not bump it. Reading a trace with a version this code does
not know raises a ``TraceFormatError`` that says how to migrate. The JSON codec is one
pydantic ``TypeAdapter`` built on first use (so ``import toolproof`` does not import pydantic).

Round-trip contract: whatever the encoder writes, the decoder reads back equal. Construction
makes every field storable (ids and names given as numbers become strings, free-form values
become plain JSON data, see ``json_data``); the encoder refuses, with a ``TraceFormatError``
naming the field, a value that was changed after construction into something JSON cannot hold.
Non-finite floats in numeric fields (``cost``, durations) are written as the strings
``"NaN"``, ``"Infinity"`` and ``"-Infinity"``, which the decoder reads back as floats.

The decoder raises only ``TraceFormatError`` (a ``UserError``): for text that is not JSON,
nests too deeply, has an unknown version or has invalid fields.
"""

from __future__ import annotations

import json
import marshal
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, get_args

from toolproof._messages import (
    NON_FINITE,
    Message,
    ToolCall,
    ToolResult,
    Usage,
    as_opt_str,
    as_str,
    json_data,
    plain,
)
from toolproof.errors import TraceFormatError

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
    "schema_hash",
    "stable_hash",
    "tool_info",
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
    import hashlib  # on use: its OpenSSL binding costs milliseconds at import

    # (a lone surrogate, which UTF-8 cannot hold, is hashed as its escape)
    return hashlib.sha256(value.encode("utf-8", "backslashreplace")).hexdigest()[:16]


def schema_hash(name: str, description: str, parameters: Any) -> str:
    """The version of a tool's schema: ``stable_hash`` of its name, description and parameters.

    The one rule every producer of a trace uses, so the same tool hashes alike whether it
    was defined in code, imported from a file or read off the wire.
    """
    return stable_hash({"name": name, "description": description, "parameters": parameters})


def tool_info(name: str, description: str, parameters: dict[str, Any]) -> ToolInfo:
    """A tool as offered to the model, with its :func:`schema_hash`."""
    return ToolInfo(name, description, parameters, schema_hash(name, description, parameters))


@dataclass(slots=True)
class ToolInfo:
    """A tool as it was offered to the model in a run.

    Attributes:
        name: The tool's name.
        description: Its description.
        parameters: Its parameters' JSON Schema.
        schema_hash: ``schema_hash(name, description, parameters)``: the tool-schema
            version recorded with every run.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    schema_hash: str

    def __post_init__(self) -> None:
        self.name = as_str(self.name)
        self.description = as_str(self.description)
        self.schema_hash = as_str(self.schema_hash)
        self.parameters = json_data(self.parameters, f"tool {self.name}: parameters")


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

    def __post_init__(self) -> None:
        if self.model_name is not None and type(self.model_name) is not str:
            self.model_name = as_str(self.model_name)
        if self.finish_reason is not None and type(self.finish_reason) is not str:
            self.finish_reason = as_str(self.finish_reason)
        if self.parse_errors:
            self.parse_errors = [as_str(error) for error in self.parse_errors]


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

    def __post_init__(self) -> None:
        self.type = as_str(self.type)
        self.message = as_str(self.message)
        self.tool_name = as_opt_str(self.tool_name)


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

    def __post_init__(self) -> None:
        if type(self.id) is not str or not self.id.isascii():
            self.id = as_str(self.id)
        if type(self.input) is not str or not self.input.isascii():
            self.input = as_str(self.input)
        if type(self.model) is not str or not self.model.isascii():
            self.model = as_str(self.model)
        output = self.output
        if output is not None and (type(output) is not str or not output.isascii()):
            self.output = as_str(output)
        prompt = self.system_prompt
        if prompt is not None and (type(prompt) is not str or not prompt.isascii()):
            self.system_prompt = as_str(prompt)
        if self.system_prompt_hash is not None and type(self.system_prompt_hash) is not str:
            self.system_prompt_hash = as_str(self.system_prompt_hash)
        detail = self.stop_detail
        if detail is not None and (type(detail) is not str or not detail.isascii()):
            self.stop_detail = as_str(detail)
        if self.tags and not all(type(tag) is str and tag.isascii() for tag in self.tags):
            self.tags = [as_str(tag) for tag in self.tags]
        if self.metadata:
            self.metadata = json_data(self.metadata, "metadata")
        if self.settings:
            self.settings = json_data(self.settings, "settings")

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
        """The trace as plain JSON-compatible data.

        Raises:
            TraceFormatError: A field was set after construction to a value JSON cannot
                hold exactly (the message names it).
        """
        self._check_encodable()
        try:
            data: dict[str, Any] = _adapter().dump_python(self, mode="json", warnings="error")
        except ValueError as exc:  # pydantic's serialization errors are ValueErrors
            raise TraceFormatError(f"trace {self.id}: cannot be encoded: {_first(exc)}") from None
        _finite_numbers(data)
        return data

    def to_json(self, *, indent: int | None = None) -> str:
        """The trace as JSON text (readable with ``indent=2``).

        Raises:
            TraceFormatError: A field was set after construction to a value JSON cannot
                hold exactly (the message names it).
        """
        return self._to_json_bytes(indent).decode()

    def _to_json_bytes(self, indent: int | None = None) -> bytes:
        """``to_json`` as UTF-8 bytes (what the store writes: no decode and encode again)."""
        self._check_encodable()
        try:
            return _adapter().dump_json(self, indent=indent, warnings="error")
        except ValueError as exc:
            raise TraceFormatError(f"trace {self.id}: cannot be encoded: {_first(exc)}") from None

    def _check_encodable(self) -> bytes | None:
        """Refuse what would not read back.

        That is: values changed after construction into ones JSON cannot hold, and the
        fields the serializer does not check (the version, literal fields).

        Returns:
            The snapshot of the tools' parameters (see ``_schemas_key``; ``None``: no
            tools, or none could be taken), for the store's cache of encoded tools.
        """
        # Where-strings are built only for a value that fails: this runs on every encode.
        if self.version != TRACE_VERSION or type(self.version) is not int:
            raise TraceFormatError(
                f"{_where(self)}version {self.version!r}: "
                f"this toolproof writes version {TRACE_VERSION}"
            )
        if self.stop_reason not in _STOP_REASONS:
            raise TraceFormatError(f"{_where(self)}unknown stop_reason {self.stop_reason!r}")
        if not plain(self.metadata, 0):
            json_data(self.metadata, _where(self) + "metadata", strict=True)
        if not plain(self.settings, 0):
            json_data(self.settings, _where(self) + "settings", strict=True)
        tools = self.tools
        key = None
        if tools:
            # The same tool set is offered run after run: its schemas are checked once.
            key = _schemas_key(tools)
            if key is None or key not in _CHECKED_SCHEMAS:
                for info in tools:
                    if not plain(info.parameters, 0):
                        part = f"{_where(self)}tool {info.name}: parameters"
                        json_data(info.parameters, part, strict=True)
                if key is not None and _schemas_key(tools) == key:
                    # (the snapshot again: a schema changed during the check is not kept)
                    _remember_schemas(key)
        for message in self.history:
            _check_message(message, self, None)
        for step in self.steps:
            _check_message(step.response, self, step.index)
            for result in step.tool_results:
                if result.status != "ok" and result.status != "error":
                    raise TraceFormatError(
                        f"{_where(self)}step {step.index}: tool result status {result.status!r}"
                    )
                if not plain(result.value, 0):
                    where = f"{_where(self)}step {step.index}: value"
                    json_data(result.value, where, strict=True)
            _check_usage(step.usage, self, step.index)
        _check_usage(self.usage, self, None)
        return key

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        """Read a trace from plain data produced by :meth:`to_dict`.

        Raises:
            TraceFormatError: The data is not a trace of a known version, or a field is
                invalid (the message names the first one).
        """
        if not isinstance(data, dict):
            raise TraceFormatError("not a toolproof trace: expected a JSON object")
        _check_version(data.get("version"))
        try:
            trace: Trace = _adapter().validate_python(data)
        except (ValueError, TypeError, RecursionError) as exc:
            raise TraceFormatError(_invalid(exc)) from None
        return trace

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        """Read a trace from JSON produced by :meth:`to_json`.

        Raises:
            TraceFormatError: The text is not JSON, not a trace of a known version, or a
                field is invalid (the message names the first one).
        """
        if not isinstance(text, (str, bytes, bytearray)):
            raise TraceFormatError(
                f"not a toolproof trace: expected JSON text, got {type(text).__name__}"
            )
        try:
            trace: Trace = _adapter().validate_json(text)
        except (ValueError, TypeError, RecursionError) as exc:
            failure: BaseException = exc
        else:
            if trace.version != TRACE_VERSION:
                _check_version(trace.version)
            return trace
        # Say why, in the order a reader needs it: JSON, object, version, then the field.
        from pydantic_core import from_json

        try:
            data = from_json(text)
        except ValueError as exc:
            raise TraceFormatError(f"not a toolproof trace: invalid JSON ({_first(exc)})") from None
        except TypeError:  # a str that cannot be UTF-8: it holds a lone surrogate
            raise TraceFormatError(
                "not a toolproof trace: invalid JSON (the text holds a lone surrogate, "
                "U+D800 to U+DFFF, which UTF-8 cannot carry)"
            ) from None
        if not isinstance(data, dict):
            raise TraceFormatError("not a toolproof trace: expected a JSON object")
        _check_version(data.get("version"))
        raise TraceFormatError(_invalid(failure)) from None


# -- the declared shape of a trace ---------------------------------------------------------
#
# What each field of the trace classes holds, declared once for every walk over a trace
# (redaction, the encoder's number fields, the replay view's checks). A field is one of:
# ``KEPT``, the run's structure (ids, names, roles, statuses, times, counts, hashes, the
# tools' definitions), never data of the run; ``NUMBER``, a float that may be non-finite;
# ``TEXT``, free text of the run; ``JSON``, free-form JSON data of the run (arguments,
# tool values, metadata); or a nested trace class (a one-item list: a list of them).

KEPT, NUMBER, TEXT, JSON = "kept", "number", "text", "json"

#: Per trace class, what each of its fields holds (every field is named).
TRACE_SHAPE: dict[type, dict[str, Any]] = {
    # A tool's description is text a client may send (``serve --mode record``): redacted. Its
    # name, parameters and hash are kept: replay validates recorded calls against them.
    ToolInfo: {"name": KEPT, "description": TEXT, "parameters": KEPT, "schema_hash": KEPT},
    ToolCall: {
        "name": KEPT,
        "arguments": JSON,
        "id": KEPT,
        "raw_arguments": TEXT,
        "arguments_error": TEXT,
    },
    ToolResult: {
        "call_id": KEPT,
        "name": KEPT,
        "status": KEPT,
        "content": TEXT,
        "value": JSON,
        "error_type": KEPT,
        "duration_ms": NUMBER,
        "mocked": KEPT,
    },
    Message: {
        "role": KEPT,
        "content": TEXT,
        "tool_calls": [ToolCall],
        "tool_call_id": KEPT,
        "name": KEPT,
        "reasoning": TEXT,
        "status": KEPT,
    },
    ErrorInfo: {"type": KEPT, "message": TEXT, "tool_name": KEPT},
    Step: {
        "index": KEPT,
        "request": KEPT,
        "response": Message,
        "offset_ms": NUMBER,
        "latency_ms": NUMBER,
        "usage": KEPT,
        "finish_reason": KEPT,
        "model_name": KEPT,
        "tool_results": [ToolResult],
        "parse_errors": TEXT,
        "cost": NUMBER,
    },
    Trace: {
        "id": KEPT,
        "input": TEXT,
        "version": KEPT,
        "started_at": KEPT,
        "ended_at": KEPT,
        "history": [Message],
        "system_prompt": TEXT,
        "system_prompt_hash": KEPT,
        "model": KEPT,
        "settings": JSON,
        "tools": [ToolInfo],
        "tool_mode": KEPT,
        "steps": [Step],
        "output": TEXT,
        "stop_reason": KEPT,
        "stop_detail": TEXT,
        "error": ErrorInfo,
        "usage": KEPT,
        "cost": NUMBER,
        "duration_ms": NUMBER,
        "metadata": JSON,
        "tags": TEXT,
    },
}

#: Text fields that usually hold the JSON text of the field named next to them (a tool
#: result's content and value, a call's raw and parsed arguments).
MIRRORS = {"content": "value", "raw_arguments": "arguments"}


def fields_holding(kind: str, cls: type = Trace) -> tuple[str, ...]:
    """The fields of ``cls`` that hold ``kind`` (``KEPT``, ``NUMBER``, ``TEXT``, ``JSON``)."""
    return tuple(name for name, held in TRACE_SHAPE[cls].items() if held == kind)


_STOP_REASONS = frozenset(get_args(StopReason))
_NUMBERS = {cls: fields_holding(NUMBER, cls) for cls in (Trace, Step, ToolResult)}

#: ``marshal`` snapshots of tool-parameter sets that passed the encoder's check. marshal
#: writes only the exact built-in types (no subclass, no other object) and tells apart every
#: type and value the check looks at (``1``, ``1.0`` and ``True``; ``NaN``; a lone
#: surrogate; a tuple and a list; a number key and a text key): equal snapshots load back
#: as equal data of the same types, so they are equally encodable, and a schema changed in
#: any way after its check gets a new snapshot and is checked again. (A snapshot may differ
#: for the same data, never be equal for different data: at worst a check runs again.)
#: Bounded: emptied when full, and large schema sets are not kept.
_CHECKED_SCHEMAS: set[bytes] = set()
_SCHEMAS_KEPT = 256
_SCHEMA_KEY_BYTES = 65_536


def _schemas_key(tools: list[ToolInfo]) -> bytes | None:
    """The snapshot of the tools' parameters, or ``None`` when marshal cannot write them."""
    try:
        key = marshal.dumps([info.parameters for info in tools])
    except ValueError:  # an object marshal does not write, or too deep: the full check
        return None
    return key if len(key) <= _SCHEMA_KEY_BYTES else None


def _remember_schemas(key: bytes) -> None:
    if len(_CHECKED_SCHEMAS) >= _SCHEMAS_KEPT:
        _CHECKED_SCHEMAS.clear()
    _CHECKED_SCHEMAS.add(key)


_ROLES = frozenset(("system", "user", "assistant", "tool"))


def _part(step: int | None) -> str:
    return "history" if step is None else f"step {step}"


def _where(trace: Trace) -> str:
    """How the encoder's errors name the trace."""
    return f"trace {trace.id!r}: "


def _check_message(message: Message, trace: Trace, step: int | None) -> None:
    if message.role not in _ROLES:
        raise TraceFormatError(
            f"{_where(trace)}{_part(step)}: unknown message role {message.role!r}"
        )
    status = message.status
    if status is not None and status != "ok" and status != "error":
        raise TraceFormatError(f"{_where(trace)}{_part(step)}: unknown message status {status!r}")
    for call in message.tool_calls:
        if not plain(call.arguments, 0):
            part = f"{_where(trace)}{_part(step)}: {call.name} arguments"
            json_data(call.arguments, part, strict=True)


def _check_usage(usage: Usage, trace: Trace, step: int | None) -> None:
    a, b, c, d, e = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cached_tokens,
        usage.reasoning_tokens,
        usage.requests,
    )
    if (
        type(a) is int
        and type(b) is int
        and type(c) is int
        and type(d) is int
        and type(e) is int
        and (a | b | c | d | e) >= 0
        and (not usage.details or all(type(n) is int and n >= 0 for n in usage.details.values()))
    ):
        return
    part = "usage" if step is None else f"step {step}: usage"
    raise TraceFormatError(f"{_where(trace)}{part}: token counts must be integers, not negative")


def _finite_numbers(data: dict[str, Any]) -> None:
    """Non-finite floats of numeric fields as strings, as ``to_json`` writes them."""
    holders: list[tuple[dict[str, Any], tuple[str, ...]]] = [(data, _NUMBERS[Trace])]
    for step in data.get("steps", ()):
        holders.append((step, _NUMBERS[Step]))
        holders.extend((result, _NUMBERS[ToolResult]) for result in step.get("tool_results", ()))
    for holder, keys in holders:
        for key in keys:
            value = holder.get(key)
            if type(value) is float and not math.isfinite(value):
                holder[key] = NON_FINITE[repr(value)]


def _first(exc: BaseException) -> str:
    """The first line of an error's message that says something."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    text = lines[0] if lines else type(exc).__name__
    if "Pydantic serializer warnings" in text and len(lines) > 1:
        text = lines[1]
    return text[:300]


def _invalid(exc: BaseException) -> str:
    """One line naming the first invalid field of a trace (from a pydantic error)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            found = errors(include_url=False, include_input=False)
        except Exception:  # pragma: no cover - errors() itself failing
            found = []
        if found:
            first = found[0]
            # a key of the data may hold any text: quoted when it would break the line
            parts = [str(part) for part in first.get("loc", ())]
            where = ".".join(p if p.isprintable() else repr(p) for p in parts) or "trace"
            message = str(first.get("msg", "invalid")).removeprefix("Value error, ")
            more = f" (and {len(found) - 1} more problems)" if len(found) > 1 else ""
            return f"not a valid toolproof trace: {where}: {message}"[:400] + more
    if isinstance(exc, RecursionError):
        return "not a valid toolproof trace: it nests too deeply"
    return f"not a valid toolproof trace: {_first(exc)}"


def _check_version(version: object) -> None:
    if version == TRACE_VERSION and type(version) is int:
        return
    if not isinstance(version, int) or isinstance(version, bool):
        raise TraceFormatError("not a toolproof trace: it has no integer 'version' field")
    if version > TRACE_VERSION:
        raise TraceFormatError(
            f"trace format version {version} is newer than this toolproof understands "
            f"(version {TRACE_VERSION}); upgrade toolproof to read it"
        )
    raise TraceFormatError(
        f"trace format version {version} is no longer supported (current: {TRACE_VERSION}); "
        "re-record the trace or convert it with an older toolproof release"
    )


#: Codec settings of every trace dataclass: numbers in text fields (``"model": 123`` from
#: older files) are read as text, and non-finite floats are written as strings, not ``null``.
CODEC_CONFIG = {"ser_json_inf_nan": "strings", "coerce_numbers_to_str": True}


@cache
def _adapter() -> TypeAdapter[Trace]:
    from pydantic import TypeAdapter

    classes: tuple[type, ...] = (
        Trace,
        Step,
        ErrorInfo,
        ToolInfo,
        RequestSummary,
        Message,
        ToolCall,
        ToolResult,
        Usage,
    )
    for cls in classes:
        setattr(cls, "__pydantic_config__", CODEC_CONFIG)  # noqa: B010 - a class attribute
    return TypeAdapter(Trace)
