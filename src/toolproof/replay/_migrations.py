"""The trace store's layout migrations: each brings a store one version forward.

``TraceStore`` runs the migrations a store needs when it opens it, inside one
``BEGIN IMMEDIATE`` transaction (``_store.py``); tests run them on a bare SQLite
connection to build old layouts. Migration ``n`` brings a store from version ``n - 1`` to
``n``; they are appended, never edited.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from toolproof.replay._store_rows import INPUT_PREVIEW, SQLITE, Dialect, tool_counts

__all__ = ["SCHEMA_VERSION"]

#: Version of the store layout this code writes (see ``MIGRATIONS``).
SCHEMA_VERSION = 3


class _Plain:
    """A bare SQLite connection seen as a store by the migrations (tests build old layouts)."""

    _dialect = SQLITE

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._conn.execute(sql, params)

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        return int(self._conn.executemany(sql, rows).rowcount)


class _Store(Protocol):
    """What a migration uses of a store (``TraceStore``, the PostgreSQL store, ``_Plain``)."""

    _dialect: Dialect

    def _exec(self, sql: str, params: Sequence[Any] = ...) -> Any: ...

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> int: ...


_Migratable = _Store | sqlite3.Connection


def _runner(store: _Migratable) -> _Store:
    return _Plain(store) if isinstance(store, sqlite3.Connection) else store


def _script(store: _Store, sql: str) -> None:
    # Not `executescript`: it commits first, and migrations run inside one transaction.
    d = store._dialect
    sql = sql.format(blob=d.blob, real=d.real, without_rowid=d.without_rowid)
    for statement in sql.split(";"):
        if statement.strip():
            store._exec(statement)


def _migrate_1(conn: _Migratable) -> None:
    """Version 1: traces with time, model and status columns, and tags."""
    store = _runner(conn)
    _script(
        store,
        """
        CREATE TABLE traces (
            id TEXT PRIMARY KEY,
            ts {real} NOT NULL,
            started_at TEXT NOT NULL DEFAULT '',
            model TEXT NOT NULL DEFAULT '',
            status TEXT NOT NULL DEFAULT '',
            payload {blob} NOT NULL
        );
        CREATE INDEX traces_ts ON traces (ts);
        CREATE INDEX traces_model ON traces (model, ts);
        CREATE TABLE trace_tags (
            tag TEXT NOT NULL,
            trace_id TEXT NOT NULL,
            PRIMARY KEY (tag, trace_id)
        ) {without_rowid};
        CREATE INDEX trace_tags_trace ON trace_tags (trace_id);
        """,
    )


def _migrate_2(conn: _Migratable) -> None:
    """Version 2: tool index, status index and listing columns, backfilled from payloads."""
    store = _runner(conn)
    _script(
        store,
        """
        ALTER TABLE traces ADD COLUMN format_version INTEGER NOT NULL DEFAULT 1;
        ALTER TABLE traces ADD COLUMN input TEXT NOT NULL DEFAULT '';
        ALTER TABLE traces ADD COLUMN tool_calls INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE traces ADD COLUMN duration_ms {real} NOT NULL DEFAULT 0;
        ALTER TABLE traces ADD COLUMN recorded_at {real} NOT NULL DEFAULT 0;
        CREATE INDEX traces_status ON traces (status, ts);
        CREATE TABLE trace_tools (
            tool TEXT NOT NULL,
            trace_id TEXT NOT NULL,
            calls INTEGER NOT NULL DEFAULT 1,
            PRIMARY KEY (tool, trace_id)
        ) {without_rowid};
        CREATE INDEX trace_tools_trace ON trace_tools (trace_id);
        """,
    )
    from pydantic_core import from_json

    rows = store._exec("SELECT id, payload, ts FROM traces").fetchall()
    for trace_id, payload, ts in rows:
        try:
            data = from_json(bytes(payload) if isinstance(payload, memoryview) else payload)
            tools = tool_counts(
                str(call.get("name", ""))
                for step in data.get("steps", ())
                for call in step.get("response", {}).get("tool_calls", ())
            )
            values = (
                int(data.get("version", 1)),
                str(data.get("input", ""))[:INPUT_PREVIEW],
                sum(tools.values()),
                float(data.get("duration_ms", 0.0)),
            )
        except (ValueError, TypeError, AttributeError, OverflowError):
            continue  # an undecodable row keeps the defaults; readers skip it with a warning
        store._exec(
            "UPDATE traces SET format_version = ?, input = ?, tool_calls = ?, duration_ms = ?, "
            "recorded_at = ? WHERE id = ?",
            (*values, ts, trace_id),
        )
        store._exec_many(
            store._dialect.ignore(
                "INSERT INTO trace_tools (tool, trace_id, calls) VALUES (?, ?, ?)"
            ),
            [(name, trace_id, count) for name, count in tools.items()],
        )


def _migrate_3(conn: _Migratable) -> None:
    """Version 3: each distinct tools array stored once, in ``tool_sets``.

    A row that names a tool set holds its trace's JSON without the tools (see
    ``_tool_sets.py``). Rows written before keep their tools inline, as they are: readers
    take both, and the migration stays one quick statement per table however large the
    store (rewriting every row would hold the write lock for as long).
    """
    store = _runner(conn)
    _script(
        store,
        """
        CREATE TABLE IF NOT EXISTS tool_sets (
            digest TEXT PRIMARY KEY,
            payload {blob} NOT NULL
        ) {without_rowid};
        ALTER TABLE traces ADD COLUMN tool_set TEXT;
        """,
    )


#: Migration ``n`` brings a store from version ``n - 1`` to ``n``. Append, never edit.
MIGRATIONS: list[Callable[[_Migratable], None]] = [_migrate_1, _migrate_2, _migrate_3]
assert len(MIGRATIONS) == SCHEMA_VERSION
