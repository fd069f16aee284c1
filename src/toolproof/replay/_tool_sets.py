"""Tool sets: each distinct tools array of a store's traces, stored once.

The traces of one agent offer the same tools run after run, and their JSON Schemas are a
large part of each trace. From layout version 3 on, a stored row holds the trace's JSON
without its ``tools`` member, and names its tool set: the ``tool_sets`` row whose payload
is the tools array exactly as the trace codec writes it, keyed by its digest (the SHA-256
of those bytes, in full: two different arrays cannot share a digest in practice).

Everything here is bytes the codec wrote, cut and joined, never JSON written another way:

- ``encode_parts``: the codec writes the trace without its tools (``exclude``), and the
  tools array once per distinct array (a cache keyed by an exact snapshot of the tools'
  values, see ``_snapshot``). The trace's JSON is that text with ``,"tools":<array>``
  inserted before its first ``,"tool_mode":`` (the codec writes ``tools`` right before the
  ``tool_mode`` member). That first one is the member itself when the fields written before
  it are plain text, numbers or empty (inside text a quote is escaped); otherwise it must be
  the only one in the text, and a text where it is not (a key of that name inside
  free-form data) is stored whole, tools inline.
- ``join``: the stored text and its tool set back into the trace's JSON, byte for byte
  what the codec writes for the whole trace (``tests/replay/test_tool_sets.py`` checks it
  with generated traces).

A row without a tool set (written before version 3, imported, or whose text could not be
cut) keeps its tools inline: every reader takes both.
"""

from __future__ import annotations

import dataclasses
import marshal

from toolproof import _trace
from toolproof._trace import ToolInfo, Trace, _first
from toolproof.errors import TraceFormatError

__all__ = ["Unjoined", "digest_of", "encode_parts", "join"]

_TOOLS_MEMBER = b',"tools":'
_MODE_MEMBER = b',"tool_mode":'
_TOOLS = {"tools"}  # (include= and exclude= of the codec: the one member)
_TOOLS_OPEN = b'{"tools":'


def _fields_before_tools() -> tuple[str, ...]:
    names = [item.name for item in dataclasses.fields(Trace)]
    return tuple(names[: names.index("tools")])


#: The trace's fields the codec writes before its tools (in field order).
_BEFORE_TOOLS = _fields_before_tools()

#: Encoded tools arrays by the snapshot of their values: ``(array JSON, digest)``.
_ENCODED: dict[bytes, tuple[bytes, str]] = {}
_ENCODED_KEPT = 256
_SNAPSHOT_BYTES = 262_144


def digest_of(tools_json: bytes) -> str:
    """The digest naming a tool set: SHA-256 of its exact bytes, 64 hex digits."""
    import hashlib  # on use: its OpenSSL binding costs milliseconds at import

    return hashlib.sha256(tools_json).hexdigest()


def _snapshot(tools: list[ToolInfo], parameters: bytes | None) -> bytes | None:
    """An exact snapshot of every value the codec writes of the tools, or ``None``.

    ``parameters`` is the codec check's snapshot of the tools' parameters (``marshal`` of
    them, see ``toolproof._trace._schemas_key``); the names, descriptions and schema hashes
    are added here. ``marshal`` writes only the exact built-in types and tells apart every
    type and value the encoding depends on (``1``, ``1.0`` and ``True``; a tuple and a
    list; key order), and a marshal text holds one value and ends where it ends (so two
    joined texts tell apart both values): equal snapshots are tools the codec writes to
    equal bytes. Anything marshal cannot write (an object that is not a ``ToolInfo``, an
    odd value) has none, and its tools are encoded again.
    """
    if parameters is None:
        return None
    try:
        parts = [
            (info.name, info.description, info.schema_hash)
            for info in tools
            if type(info) is ToolInfo
        ]
        if len(parts) != len(tools):
            return None
        key = parameters + marshal.dumps(parts)
    except ValueError:
        return None
    return key if len(key) <= _SNAPSHOT_BYTES else None


def _encode_tools(trace: Trace) -> tuple[bytes, str]:
    """The trace's tools array as the codec writes it, and its digest."""
    try:
        text = _trace._adapter().dump_json(trace, include=_TOOLS, warnings="error")
    except ValueError as exc:
        raise TraceFormatError(f"trace {trace.id}: cannot be encoded: {_first(exc)}") from None
    if not (text.startswith(_TOOLS_OPEN) and text.endswith(b"}")):  # pragma: no cover
        raise TraceFormatError(f"trace {trace.id}: cannot be encoded: unexpected tools layout")
    array = text[len(_TOOLS_OPEN) : -1]
    return array, digest_of(array)


def encode_parts(trace: Trace) -> tuple[bytes, bytes | None, str | None]:
    """The trace's stored text, its tools array and digest (``None`` when kept inline).

    Raises:
        TraceFormatError: The trace cannot be encoded so that it reads back (as
            ``Trace.to_json`` raises it).
    """
    tools = trace.tools
    if not tools:  # nothing to share
        return trace._to_json_bytes(), None, None
    key = _snapshot(tools, trace._check_encodable())
    found = _ENCODED.get(key) if key is not None else None
    if found is None:
        found = _encode_tools(trace)
        # (kept only when unchanged since the check and while it was encoded)
        if key is not None and _snapshot(tools, _trace._schemas_key(tools)) == key:
            if len(_ENCODED) >= _ENCODED_KEPT:
                _ENCODED.clear()
            _ENCODED[key] = found
    try:
        rest = _trace._adapter().dump_json(trace, exclude=_TOOLS, warnings="error")
    except ValueError as exc:
        raise TraceFormatError(f"trace {trace.id}: cannot be encoded: {_first(exc)}") from None
    if not _plain_before_tools(trace) and rest.count(_MODE_MEMBER) != 1:
        return trace._to_json_bytes(), None, None  # (a key of that name in data: kept whole)
    return rest, found[0], found[1]


def _plain_before_tools(trace: Trace) -> bool:
    """Whether every field the codec writes before ``tools`` is text, a number or empty."""
    for name in _BEFORE_TOOLS:
        value = getattr(trace, name)
        kind = type(value)
        if kind is str or kind is int or value is None:
            continue
        if (kind is not list and kind is not dict) or value:
            return False
    return True


class Unjoined:
    """A stored row whose tool set cannot be joined to it: why (readers skip the row)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unjoined({self.reason!r})"


def join(payload: bytes, tools_json: bytes) -> bytes | Unjoined:
    """The trace's JSON from its stored text and its tool set's bytes."""
    at = payload.find(_MODE_MEMBER)
    if at < 0:
        return Unjoined("its tools cannot be placed: its JSON has no tool_mode member")
    return payload[:at] + _TOOLS_MEMBER + tools_json + payload[at:]
