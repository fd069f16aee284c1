"""What the trace store reads and writes besides SQL: filters, listing rows, payload rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from toolproof._trace import TRACE_VERSION, Trace
from toolproof.errors import TraceFormatError, UserError
from toolproof.replay._time import parse_time, parse_timestamp
from toolproof.replay._tool_sets import Unjoined, encode_parts

if TYPE_CHECKING:
    pass

#: Values accepted by the ``status`` filter: a stop reason, or ``ok`` / ``failed``.
STATUSES = (
    "ok",
    "failed",
    "final",
    "max_steps",
    "budget",
    "repeated_call",
    "cancelled",
    "error",
)

INPUT_PREVIEW = 200


# -- dialects ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the SQL engines a store runs on (the rest of the SQL is shared)."""

    blob: str = "BLOB"
    real: str = "REAL"
    without_rowid: str = "WITHOUT ROWID"
    #: ``(column, glob) -> (SQL, parameter)``: the column matches a ``*``/``?``/``[...]`` glob.
    glob: Callable[[str, str], tuple[str, str]] = lambda column, pattern: (
        f"{column} GLOB ?",
        pattern,
    )
    #: ``(column, text) -> (SQL, parameter)``: the column starts with the text.
    prefix: Callable[[str, str], tuple[str, str]] = lambda column, text: (
        f"{column} GLOB ?",
        glob_escape(text) + "*",
    )
    #: Appended to an ``INSERT`` that leaves existing rows alone (else ``OR IGNORE`` is used).
    on_conflict_ignore: str = ""

    def ignore(self, insert: str) -> str:
        """``insert`` (an ``INSERT INTO ...`` statement) made to skip rows that exist."""
        if self.on_conflict_ignore:
            return f"{insert} {self.on_conflict_ignore}"
        return insert.replace("INSERT INTO", "INSERT OR IGNORE INTO", 1)


SQLITE = Dialect()


# -- filters -------------------------------------------------------------------------------


@dataclass(slots=True)
class TraceFilter:
    """Which stored traces to select. Every set criterion must hold.

    Attributes:
        since: Only traces that started at or after this time: a datetime, epoch seconds,
            an ISO date or time, or an age such as ``"7d"``.
        until: Only traces that started before this time (same forms).
        tools: Only traces that called at least one of these tools.
        model: Only traces of this model; ``*`` and ``?`` are wildcards
            (``"deepseek:*"``).
        tags: Only traces that carry every one of these tags.
        status: Only traces with this outcome: a stop reason (``"final"``, ``"error"``...),
            ``"ok"`` (final) or ``"failed"`` (anything else).
        ids: Only these trace ids.
        limit: At most this many traces (the most recent ones first).
    """

    since: str | float | datetime | None = None
    until: str | float | datetime | None = None
    tools: Sequence[str] = ()
    model: str | None = None
    tags: Sequence[str] = ()
    status: str | None = None
    ids: Sequence[str] = ()
    limit: int | None = None

    def where(
        self, now: float | None = None, *, dialect: Dialect = SQLITE
    ) -> tuple[str, list[Any]]:
        """The SQL ``WHERE`` clause (without the keyword) and its parameters.

        Raises:
            UserError: A criterion is malformed (bad time, unknown status, bad limit).
        """
        clauses: list[str] = []
        params: list[Any] = []
        if self.since is not None:
            clauses.append("t.ts >= ?")
            params.append(parse_time(self.since, where="since", now=now))
        if self.until is not None:
            clauses.append("t.ts < ?")
            params.append(parse_time(self.until, where="until", now=now))
        if self.model:
            if any(ch in self.model for ch in "*?["):
                clause, param = dialect.glob("t.model", self.model)
                clauses.append(clause)
                params.append(param)
            else:
                clauses.append("t.model = ?")
                params.append(self.model)
        if self.status:
            if self.status not in STATUSES:
                raise UserError(
                    f"unknown status {self.status!r}; use one of: {', '.join(STATUSES)}"
                )
            if self.status == "ok":
                clauses.append("t.status = 'final'")
            elif self.status == "failed":
                clauses.append("t.status != 'final'")
            else:
                clauses.append("t.status = ?")
                params.append(self.status)
        if self.tools:
            marks = ", ".join("?" for _ in self.tools)
            clauses.append(
                "EXISTS (SELECT 1 FROM trace_tools x "
                f"WHERE x.trace_id = t.id AND x.tool IN ({marks}))"
            )
            params.extend(self.tools)
        for tag in self.tags:
            clauses.append(
                "EXISTS (SELECT 1 FROM trace_tags g WHERE g.trace_id = t.id AND g.tag = ?)"
            )
            params.append(tag)
        if self.ids:
            marks = ", ".join("?" for _ in self.ids)
            clauses.append(f"t.id IN ({marks})")
            params.extend(self.ids)
        if self.limit is not None and self.limit < 1:
            raise UserError(f"limit must be at least 1, got {self.limit}")
        return (" AND ".join(clauses) or "1 = 1"), params


@dataclass(slots=True)
class StoreRow:
    """A stored trace's listing columns (read without decoding the payload).

    Attributes:
        id: The trace id.
        ts: When the run started (epoch seconds; the time it was stored if unknown).
        started_at: The trace's own ISO start time (``""`` for imports without one).
        model: The model name.
        status: The stop reason.
        input: The start of the user input (redacted, as stored).
        tool_calls: How many tool calls the run made.
        duration_ms: The run's wall time.
        tools: Tool names called, with call counts.
        tags: The trace's tags.
    """

    id: str
    ts: float
    started_at: str
    model: str
    status: str
    input: str
    tool_calls: int
    duration_ms: float
    tools: dict[str, int] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)


# -- rows ----------------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    id: str
    ts: float | None
    started_at: str
    model: str
    status: str
    payload: bytes
    version: int
    input: str
    duration_ms: float
    tools: dict[str, int]
    tags: list[str]
    #: The digest of the row's tool set and its bytes (``payload`` then holds the trace's
    #: JSON without its tools, see ``_tool_sets.py``); ``None``: the tools are inline.
    tool_set: str | None = None
    tool_set_json: bytes = b""


def row_from_trace(trace: Trace) -> Row:
    # The encoder refuses what it cannot write so that it reads back (see _trace.py).
    payload, tools_json, digest = encode_parts(trace)
    return Row(
        id=trace.id,
        ts=parse_timestamp(trace.started_at),
        started_at=trace.started_at,
        model=trace.model,
        status=trace.stop_reason,
        payload=payload,
        version=trace.version,
        input=trace.input[:INPUT_PREVIEW],
        duration_ms=trace.duration_ms,
        tools=tool_counts(call.name for call in trace.tool_calls),
        tags=list(dict.fromkeys(trace.tags)),
        tool_set=digest,
        tool_set_json=tools_json or b"",
    )


def row_from_dict(data: dict[str, Any], payload: bytes) -> Row:
    """A row from a trace's plain data (``Trace.to_dict`` form) and its JSON payload.

    Raises:
        TraceFormatError: The payload does not decode as a trace, or not as this one
            (data changed after ``to_dict`` into something that cannot be read back).
    """
    trace_id = str(data.get("id", ""))
    trace = _decode(payload, TRACE_VERSION, trace_id, writing=True)
    if trace.id != trace_id:
        raise TraceFormatError(
            f"trace {trace_id} cannot be stored: its JSON holds the id {trace.id!r}",
            trace_id=trace_id,
        )
    started_at = str(data.get("started_at") or "")
    return Row(
        id=trace_id,
        ts=parse_timestamp(started_at),
        started_at=started_at,
        model=str(data.get("model") or ""),
        status=str(data.get("stop_reason") or "final"),
        payload=payload,
        version=int(data.get("version", TRACE_VERSION)),
        input=str(data.get("input") or "")[:INPUT_PREVIEW],
        duration_ms=float(data.get("duration_ms") or 0.0),
        tools=tool_counts(
            str(call.get("name", ""))
            for step in data.get("steps") or ()
            for call in (step.get("response") or {}).get("tool_calls") or ()
        ),
        tags=list(dict.fromkeys(str(tag) for tag in data.get("tags") or ())),
    )


def tool_counts(names: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


def _decode(payload: Any, version: Any, trace_id: str, *, writing: bool = False) -> Trace:
    """Decode a stored payload; ``TraceFormatError`` naming the id and the reason if not."""
    try:
        if type(payload) is Unjoined:
            raise TraceFormatError(payload.reason)
        if not isinstance(payload, (bytes, str)):
            raise TraceFormatError(f"the payload is {type(payload).__name__}, not JSON text")
        trace = Trace.from_json(payload)
        if version != trace.version:
            raise TraceFormatError(
                f"its format_version column ({version!r}) does not match the payload's "
                f"version ({trace.version})"
            )
    except TraceFormatError as exc:
        if writing:
            message = f"trace {trace_id} cannot be stored: it would not read back ({exc})"
        else:
            message = f"stored trace {trace_id} cannot be decoded: {exc}"
        raise TraceFormatError(message, trace_id=trace_id) from None
    return trace


def payload_text(payload: bytes | str) -> str:
    return payload.decode() if isinstance(payload, bytes) else str(payload)


def chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def glob_escape(text: str) -> str:
    return "".join(f"[{ch}]" if ch in "*?[" else ch for ch in text)
