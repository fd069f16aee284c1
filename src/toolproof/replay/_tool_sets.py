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
  inserted before its ``,"tool_mode":`` member (the codec writes ``tools`` right before
  ``tool_mode``); a text where that member cannot be found once and only once (a key of
  that name inside free-form data before it) is stored whole, tools inline.
- ``join``: the stored text and its tool set back into the trace's JSON, byte for byte
  what the codec writes for the whole trace (``tests/replay/test_tool_sets.py`` checks it
  with generated traces).

A row without a tool set (written before version 3, imported, or whose text could not be
cut) keeps its tools inline: every reader takes both.
"""

from __future__ import annotations

import hashlib
import marshal
from typing import TYPE_CHECKING

from toolproof import _trace
from toolproof._trace import ToolInfo, _first
from toolproof.errors import TraceFormatError

if TYPE_CHECKING:
    from toolproof._trace import Trace

__all__ = ["Unjoined", "digest_of", "encode_parts", "join"]

_TOOLS_MEMBER = b',"tools":'
_MODE_MEMBER = b',"tool_mode":'
_TOOLS = {"tools"}  # (include= and exclude= of the codec: the one member)
_TOOLS_OPEN = b'{"tools":'

#: Encoded tools arrays by the snapshot of their values: ``(array JSON, digest)``.
_ENCODED: dict[bytes, tuple[bytes, str]] = {}
_ENCODED_KEPT = 256
_SNAPSHOT_BYTES = 262_144


def digest_of(tools_json: bytes) -> str:
    """The digest naming a tool set: SHA-256 of its exact bytes, 64 hex digits."""
    return hashlib.sha256(tools_json).hexdigest()


def _snapshot(tools: list[ToolInfo]) -> bytes | None:
    """An exact snapshot of every value the codec writes of the tools, or ``None``.

    ``marshal`` writes only the exact built-in types and tells apart every type and value
    the encoding depends on (``1``, ``1.0`` and ``True``; a tuple and a list; key order):
    equal snapshots are tools the codec writes to equal bytes. Anything marshal cannot
    write (an object that is not a ``ToolInfo``, a subclass, an odd value) has none, and
    its tools are encoded again.
    """
    try:
        parts = [
            (info.name, info.description, info.schema_hash, info.parameters)
            for info in tools
            if type(info) is ToolInfo
        ]
        if len(parts) != len(tools):
            return None
        key = marshal.dumps(parts)
    except (ValueError, AttributeError):
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
    trace._check_encodable()
    key = _snapshot(tools)
    found = _ENCODED.get(key) if key is not None else None
    if found is None:
        found = _encode_tools(trace)
        if key is not None and _snapshot(tools) == key:  # (unchanged while it was encoded)
            if len(_ENCODED) >= _ENCODED_KEPT:
                _ENCODED.clear()
            _ENCODED[key] = found
    try:
        rest = _trace._adapter().dump_json(trace, exclude=_TOOLS, warnings="error")
    except ValueError as exc:
        raise TraceFormatError(f"trace {trace.id}: cannot be encoded: {_first(exc)}") from None
    if rest.count(_MODE_MEMBER) != 1:  # a key of that name in data before it: kept whole
        return trace._to_json_bytes(), None, None
    return rest, found[0], found[1]


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
    if at < 0 or payload.find(_MODE_MEMBER, at + 1) >= 0:
        return Unjoined("its tools cannot be placed: no single tool_mode member in its JSON")
    return payload[:at] + _TOOLS_MEMBER + tools_json + payload[at:]
