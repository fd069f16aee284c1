"""Stored traces read for tools mode as plain data, without building ``Trace`` objects.

Tools mode needs a stored trace's tool calls, their recorded results, the tools' names and
schema hashes, and a few top-level fields; building the whole :class:`~toolproof.Trace`
(every step, message, usage and tool schema as an object, each with its normalising
``__post_init__``) costs more than the replay itself. This module reads the same payload
with a ``TypeAdapter`` of the trace classes read as ``TypedDict``s: each dataclass's fields
with the same names, types, defaults and codec settings (``CODEC_CONFIG``), so the same
JSON parser, the same field checks and coercions, no objects. It is not a second decoder:

- the plain classes are derived from the trace classes' own fields at first use, so a field
  added to a trace is checked here too;
- a payload is read this way only when the codec's ``__post_init__`` hooks would neither
  refuse nor change any of its values (the usage counts' range, checked by the schema
  itself, and :func:`_unchanged_by_hooks`, which asks ``_plain``'s conditions: the very
  conditions under which those hooks return their input as it is);
- every other payload, and every payload this schema refuses, goes to the codec itself
  (``Trace.from_json`` through the store's ``_decode``): a row the codec refuses is
  skipped with the codec's message, exactly as before.

``tests/replay/test_recorded_view.py`` checks with generated and hostile payloads that the
view and the full trace give the same replay outcomes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from functools import cache
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Literal,
    Union,
    get_args,
    get_origin,
    get_type_hints,
)

from toolproof._messages import MAX_COUNT, MAX_INT_BITS, MAX_JSON_DEPTH, Usage
from toolproof._trace import CODEC_CONFIG, TRACE_VERSION, Trace
from toolproof.errors import TraceFormatError
from toolproof.replay._store_rows import TraceFilter, _decode

if TYPE_CHECKING:
    from toolproof.replay._store import TraceStore

__all__ = [
    "RecordedCall",
    "RecordedResult",
    "RecordedTrace",
    "read_recorded",
    "read_store",
    "read_tool_set",
]


class RecordedCall:
    """One recorded tool call (the fields tools mode reads of a ``ToolCall``)."""

    __slots__ = ("arguments", "arguments_error", "id", "name", "raw_arguments")

    def __init__(self, data: dict[str, Any]) -> None:
        self.name: str = data["name"]
        self.arguments: dict[str, Any] = data["arguments"]
        self.id: str = data["id"]
        self.raw_arguments: str | None = data["raw_arguments"]
        self.arguments_error: str | None = data["arguments_error"]


class RecordedResult:
    """One recorded tool result (the fields tools mode reads of a ``ToolResult``)."""

    __slots__ = ("call_id", "content", "error_type", "name", "ok", "status", "value")

    def __init__(self, data: dict[str, Any]) -> None:
        self.call_id: str = data["call_id"]
        self.name: str = data["name"]
        self.status: str = data["status"]
        self.ok: bool = self.status == "ok"
        self.content: str = data["content"]
        self.value: Any = data["value"]
        self.error_type: str | None = data["error_type"]


class RecordedTool:
    """A tool offered in the recorded run: its name, description and schema hash."""

    __slots__ = ("description", "name", "schema_hash")

    def __init__(self, data: dict[str, Any]) -> None:
        self.name: str = data["name"]
        self.description: str = data["description"]
        self.schema_hash: str = data["schema_hash"]


class RecordedTrace:
    """A read-only view of a stored trace: what tools mode reads of a ``Trace``.

    Built only from data the codec's schema accepted and its hooks would leave unchanged,
    so every value read here equals the one ``Trace.from_json`` would give.
    """

    __slots__ = ("_data", "id", "input", "model", "output")

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.id: str = data["id"]
        self.input: str = data["input"]
        self.model: str = data["model"]
        self.output: str | None = data["output"]

    @property
    def tools(self) -> list[RecordedTool]:
        """The tools offered in the recorded run (tools mode reads the data itself)."""
        return [RecordedTool(info) for info in self._data["tools"]]

    def calls_and_results(self) -> list[tuple[RecordedCall, RecordedResult | None]]:
        """Each tool call with its result (``None`` if the run stopped before it ran)."""
        return [
            (RecordedCall(call), None if result is None else RecordedResult(result))
            for call, result in call_pairs(self._data)
        ]

    def full(self) -> Trace:
        """The whole trace, decoded by the codec (for code that needs every field)."""
        return Trace.from_dict(self._data)


def call_pairs(data: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    """The plain data of each tool call of a stored trace, with its result's or ``None``.

    Paired as ``Trace.calls_and_results`` pairs them: by call id, the last result of an id.
    """
    pairs: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
    for step in data["steps"]:
        calls = step["response"]["tool_calls"]
        if not calls:
            continue
        results = step["tool_results"]
        if len(calls) == 1 and len(results) == 1:  # the common step: no lookup table
            call = calls[0]
            result = results[0]
            pairs.append((call, result if result["call_id"] == call["id"] else None))
            continue
        by_id = {result["call_id"]: result for result in results}
        pairs.extend((call, by_id.get(call["id"])) for call in calls)
    return pairs


def read_recorded(
    payload: Any, version: Any, tools: list[dict[str, Any]] | None = None
) -> RecordedTrace | None:
    """The stored payload as a view, or ``None`` when the codec itself must read it.

    ``None`` means: the payload is not text, not a trace this schema accepts, not of the
    current version (or not of the row's ``format_version``), or holds a value the codec's
    hooks would refuse or change. The caller then decodes it with the codec (and skips it
    with the codec's message when the codec refuses it).

    ``tools``: for a row stored without its tools, its tool set as :func:`read_tool_set`
    read it (the row's own text then holds no tools).
    """
    validator = _validator()
    if validator is None or not isinstance(payload, (bytes, str)):
        return None
    try:
        data = validator.validate_json(payload)
    except (ValueError, TypeError, RecursionError):
        return None
    if tools is not None:
        if data["tools"]:  # (a row with a tool set holds no tools of its own)
            return None
        data["tools"] = tools
    if (
        data["version"] != TRACE_VERSION
        or version != TRACE_VERSION
        or type(version) is not int
        or not _unchanged_by_hooks(data, tools is None)
    ):
        return None
    return RecordedTrace(data)


def read_tool_set(tools_json: bytes) -> list[dict[str, Any]] | None:
    """A tool set's bytes as the view's data, or ``None`` when the codec must read them.

    Read with the codec's own schema of the ``tools`` field, and checked as
    :func:`read_recorded` checks the tools of a whole trace: once per tool set.
    """
    validator = _tools_validator()
    if validator is None:
        return None
    try:
        tools: list[dict[str, Any]] = validator.validate_json(tools_json)
    except (ValueError, TypeError, RecursionError):
        return None
    if type(tools) is not list or not all(_fits(info["parameters"], 0) for info in tools):
        return None
    return tools


def read_store(
    store: TraceStore, filter: TraceFilter | None
) -> Iterator[tuple[float, RecordedTrace | Trace]]:
    """A store's matching traces for tools mode, with their stored times, most recent first.

    Each payload is read once: as data where that is exact, else decoded by the codec; a
    row the codec refuses is skipped with its message, as ``TraceStore.query`` skips it.
    A tool set (the tools array of rows stored without theirs) is read once per replay.
    """
    tool_sets: dict[str, list[dict[str, Any]] | None] = {}
    for trace_id, ts, payload, version, digest in store._raw_parts(filter):
        if digest is None:
            view = read_recorded(payload, version)
        else:
            if digest in tool_sets:
                tools = tool_sets[digest]
            else:
                try:
                    tools = read_tool_set(store._tool_set(digest))
                except TraceFormatError:
                    tools = None  # (the codec path below says why, for each row)
                tool_sets[digest] = tools
            view = None if tools is None else read_recorded(payload, version, tools)
        if view is not None:
            yield ts, view
            continue
        if digest is not None:
            payload = store._joined(payload, digest)
        try:
            trace = _decode(payload, version, trace_id)
        except TraceFormatError as exc:
            store._skip(trace_id, exc)
            continue
        yield ts, trace


# -- the trace classes' fields, read as plain data -------------------------------------------


class _UnknownLayout(Exception):
    """A trace class has a field this reading does not know how to mirror."""


@cache
def _validator() -> Any:
    """A ``TypeAdapter`` reading a stored trace as plain data, or ``None`` (the codec reads)."""
    plain = _plain_trace()
    return None if plain is None else _adapter_of(plain)


@cache
def _tools_validator() -> Any:
    """A ``TypeAdapter`` reading a trace's ``tools`` array as plain data (or ``None``)."""
    plain = _plain_trace()
    return None if plain is None else _adapter_of(plain.__annotations__["tools"])


def _adapter_of(annotation: Any) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(annotation)


@cache
def _plain_trace() -> Any:
    """``Trace`` as a ``TypedDict`` of the same fields, each nested trace class likewise."""
    try:
        return _plain_class(Trace)
    except _UnknownLayout:  # a trace class this reading cannot mirror: correct, only slower
        return None


def _plain_class(cls: type) -> Any:
    """A ``TypedDict`` with the fields of the dataclass ``cls``.

    The same names, types, defaults and codec settings, each field read from its own key.
    Each use of a trace class inside another gets a class of its own, so pydantic writes
    every check out where it is used instead of following a shared definition.
    """
    from pydantic import Field
    from typing_extensions import TypedDict

    hints = get_type_hints(cls)
    fields: dict[str, Any] = {}
    for item in dataclasses.fields(cls):
        if not item.init or item.metadata:
            raise _UnknownLayout(f"{cls.__name__}.{item.name}")  # not read from its own key
        annotation = _mirrored(hints[item.name])
        if cls is Usage and item.name in _COUNT_FIELDS:
            annotation = _counted(annotation, item.name)
        if item.default is not dataclasses.MISSING:
            annotation = Annotated[annotation, Field(default=item.default)]
        elif item.default_factory is not dataclasses.MISSING:
            annotation = Annotated[annotation, Field(default_factory=item.default_factory)]
        fields[item.name] = annotation
    make: Any = TypedDict  # (a class made from data: its name is not a literal)
    plain = make(cls.__name__, fields)
    plain.__pydantic_config__ = CODEC_CONFIG  # (pydantic's documented place for it)
    return plain


def _mirrored(annotation: Any) -> Any:
    """``annotation`` with every dataclass in it replaced by its plain ``TypedDict``."""
    if dataclasses.is_dataclass(annotation) and isinstance(annotation, type):
        return _plain_class(annotation)
    origin, arguments = get_origin(annotation), get_args(annotation)
    if origin is None or origin is Literal or not arguments:
        return annotation
    mirrored = tuple(_mirrored(argument) for argument in arguments)
    if origin is list:
        return list[mirrored[0]]  # type: ignore[valid-type]
    if origin is dict:
        return dict[mirrored[0], mirrored[1]]  # type: ignore[valid-type]
    if origin is Union or origin is UnionType:
        return Union[mirrored]  # noqa: UP007 - built from a tuple of types
    raise _UnknownLayout(str(annotation))


#: Usage's fields that its hook checks as token counts (ints in ``[0, 2**63)``).
_COUNT_FIELDS = frozenset(
    {"input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens", "requests", "details"}
)


def _counted(annotation: Any, name: str) -> Any:
    """A token count's type that also refuses what Usage's hook refuses (out of range).

    Only ever stricter than the codec's type: a payload it refuses goes to the codec.
    """
    from pydantic import Field

    count = Annotated[int, Field(ge=0, le=MAX_COUNT - 1)]
    if name == "details":
        if annotation != dict[str, int]:
            raise _UnknownLayout(name)
        return dict[str, count]
    if annotation is not int:
        raise _UnknownLayout(name)
    return count


# -- the codec's hooks --------------------------------------------------------------------------


def _unchanged_by_hooks(data: dict[str, Any], check_tools: bool = True) -> bool:
    """Whether every ``__post_init__`` of the codec would keep ``data``'s values as they are.

    The hooks convert text fields (a no-op on the strings the parser returns: it refuses
    lone surrogates), free-form JSON values (``json_data``: a no-op exactly when ``_plain``
    holds, which :func:`_fits` decides for parsed values) and token counts (a no-op when
    they are ints in ``[0, 2**63)``, which the view's schema already demands of every count
    it reads; only the field's default, ``Usage()``, is left to check). Anything else is
    for the codec to decide.
    """
    metadata = data["metadata"]
    if metadata and not _fits(metadata, 0):
        return False
    settings = data["settings"]
    if settings and not _fits(settings, 0):
        return False
    if type(data["usage"]) is not dict and not _default_usage(data["usage"]):
        return False
    for info in data["tools"] if check_tools else ():
        parameters = info["parameters"]
        if _PLAIN_PARAMETERS.get(info["schema_hash"]) != parameters:
            if not _fits(parameters, 0):
                return False
            if len(_PLAIN_PARAMETERS) >= 256:
                _PLAIN_PARAMETERS.clear()
            _PLAIN_PARAMETERS[info["schema_hash"]] = parameters
    for message in data["history"]:
        for call in message["tool_calls"]:
            arguments = call["arguments"]
            if arguments and not _fits(arguments, 0):
                return False
    for step in data["steps"]:
        if type(step["usage"]) is not dict and not _default_usage(step["usage"]):
            return False
        for call in step["response"]["tool_calls"]:
            arguments = call["arguments"]
            if arguments and not _fits(arguments, 0):
                return False
        for result in step["tool_results"]:
            value = result["value"]
            if value is not None and not _fits(value, 0):
                return False
    return True


def _default_usage(usage: Any) -> bool:
    """A usage the payload left out: the field's default, ``Usage()``, made by its factory."""
    return type(usage) is Usage and usage == Usage()


def _fits(value: Any, depth: int) -> bool:
    """``_plain(value, depth)`` for a value the view's JSON parser returned.

    Such a value is made of exact dicts (with str keys), lists, strs, ints, floats, bools
    and ``None``, and its strings are valid text (the parser refuses lone surrogates), so
    what ``_plain`` can still refuse is a float that is not finite, an int of more than
    ``MAX_INT_BITS`` bits, or containers nested deeper than ``MAX_JSON_DEPTH``: only
    those are looked for (``tests/replay/test_recorded_view.py`` checks both agree).
    """
    kind = type(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        items = value
    elif kind is float:
        return math.isfinite(value)
    elif kind is int:
        return bool(value.bit_length() <= MAX_INT_BITS)
    else:
        return True
    if depth >= MAX_JSON_DEPTH:
        return False
    for item in items:
        leaf = type(item)
        if leaf is str or leaf is bool or item is None:
            continue
        if leaf is int:
            if item.bit_length() > MAX_INT_BITS:
                return False
        elif leaf is float:
            if not math.isfinite(item):
                return False
        elif not _fits(item, depth + 1):
            return False
    return True


#: Tool schemas repeat across the traces of a store: the ones found plain, by schema hash,
#: each compared by value with the schema at hand (equal JSON values are plain alike), so a
#: schema is walked once, not once per trace.
_PLAIN_PARAMETERS: dict[str, dict[str, Any]] = {}
