"""The trace store: recorded runs in one SQLite file, queryable by time, tool, model and tag.

Layout (schema version 3):

- ``traces``: one row per run. ``payload`` is the trace's JSON exactly as the trace codec
  writes it (``Trace.to_json``; redacted before it gets here), without its tools array when
  ``tool_set`` names the row's tool set; the other columns are copies of trace fields kept
  for filtering and listing without decoding the payload.
- ``tool_sets``: each distinct tools array once, as the codec writes it, keyed by the
  SHA-256 of its bytes (``_tool_sets.py``). Every reader joins it back: ``get_json`` and
  ``payloads`` return the whole trace JSON byte for byte. Rows written before version 3
  keep their tools inline; tool sets stay when their traces are deleted (tool definitions
  are code, not data of a run, and the agent's next trace names the same set).
- ``trace_tags`` and ``trace_tools``: one row per (tag, trace) and (tool, trace), indexed
  by tag and tool.
- ``schema_version``: the version of this layout. Opening a store migrates it forward
  inside one ``BEGIN IMMEDIATE`` transaction, so several processes opening an old store at
  once migrate it once. A store written by a newer toolproof is refused with a clear error.

The file runs in WAL mode with ``synchronous=NORMAL``: a committed batch survives the
process being killed, readers never block the writer, and writers from several processes
queue on a busy timeout instead of failing.

Nothing is written that cannot be read back: a ``Trace`` is written by the trace codec, whose
round trip holds for every trace the trace classes build (the recorder's redacted copies
included), and plain data (``row_from_dict``: imports) is decoded before it is stored
(``TraceFormatError`` otherwise). A row that cannot be decoded all the same (written by
hand, by an older toolproof, or damaged) never breaks a reader: iteration, listing with
checks and export skip it with a warning on the ``toolproof.replay`` logger that names its
id, and record it in ``TraceStore.skipped``; ``get`` of that id raises a
``TraceFormatError`` that says why.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import operator
import os
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolproof._trace import Trace
from toolproof.errors import TraceFormatError, UserError
from toolproof.replay._migrations import MIGRATIONS, SCHEMA_VERSION
from toolproof.replay._store_rows import (
    SQLITE,
    STATUSES,
    Dialect,
    Row,
    StoreRow,
    TraceFilter,
    chunks,
    payload_text,
    row_from_trace,
)
from toolproof.replay._store_rows import _decode as _decode
from toolproof.replay._store_rows import row_from_dict as row_from_dict
from toolproof.replay._tool_sets import Unjoined, digest_of, join

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = [
    "DEFAULT_STORE_PATH",
    "SCHEMA_VERSION",
    "STATUSES",
    "StoreRow",
    "TraceFilter",
    "TraceStore",
    "open_store",
]

#: Where traces are stored unless told otherwise (relative to the current directory).
DEFAULT_STORE_PATH = Path(".toolproof") / "traces.db"

logger = logging.getLogger("toolproof.replay")


# -- the store -----------------------------------------------------------------------------


class TraceStore:
    """Recorded traces in a SQLite file (WAL mode, safe for several writing processes).

    Given a ``postgresql://`` URL instead of a path, the store lives in that PostgreSQL
    database (needs ``pip install 'toolproof[postgres]'``): the same layout, queries and
    guarantees, for many machines writing and reading at once.

    Args:
        path: The database file; its folder is created when needed. ``":memory:"`` keeps
            the store in memory (tests). A ``postgresql://user:password@host:port/db`` URL
            selects a PostgreSQL store; ``sqlite:///path`` is a file too.
        create: Create the store when it does not exist; with ``False`` a missing store
            raises ``UserError`` (commands that only read use this).
        timeout: Seconds to wait for another process's write lock (or, for PostgreSQL, for
            the connection) before failing.

    Raises:
        UserError: The store is missing (with ``create=False``), is not a toolproof store,
            cannot be reached, or was written by a newer toolproof.

    Attributes:
        location: Where the store is, for messages (a URL's password is masked).
        skipped: Ids of stored rows that readers skipped because they cannot be decoded
            (each also logged as a warning on the ``toolproof.replay`` logger).

    Example:
        ```python
        with TraceStore(".toolproof/traces.db") as store:
            store.add(result.trace)
            for trace in store.query(TraceFilter(tools=["query_users"], since="7d")):
                print(trace.summary())
        ```
    """

    _dialect: Dialect = SQLITE
    #: Called between chunks of a large write's rows (the recorder sets it on the store it
    #: opened, to let the agent's threads in); ``None``: each statement runs all its rows.
    _pause: Callable[[], object] | None = None

    def __new__(cls, path: str | Path = DEFAULT_STORE_PATH, **_: Any) -> Self:
        if cls is TraceStore and is_store_url(path):
            from toolproof.replay._postgres import PostgresTraceStore

            return super().__new__(PostgresTraceStore)  # type: ignore[return-value]
        return super().__new__(cls)

    def __init__(
        self,
        path: str | Path = DEFAULT_STORE_PATH,
        *,
        create: bool = True,
        timeout: float = 30.0,
    ) -> None:
        path = _sqlite_path(path)
        self.path = Path(path) if str(path) != ":memory:" else Path(":memory:")
        self.location = str(self.path)
        memory = str(path) == ":memory:"
        if not memory:
            if not self.path.exists():
                if not create:
                    raise UserError(
                        f"no trace store at {self.path}: record runs with "
                        "Agent(recorder=Recorder(...)) or import them with "
                        "`toolproof traces import FILE`"
                    )
                self.path.parent.mkdir(parents=True, exist_ok=True)
            elif self.path.is_dir():
                raise UserError(f"trace store path {self.path} is a directory, not a file")
        self._lock = threading.RLock()
        self.skipped: list[str] = []
        self._tool_sets: dict[str, bytes] = {}
        try:
            self._conn = sqlite3.connect(
                str(path) if memory else str(self.path),
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            raise UserError(f"cannot open trace store {self.path}: {exc}") from exc
        self._closed = False
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            if not memory:
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":  # pragma: no cover - file systems without WAL
                    raise UserError(f"trace store {self.path}: cannot enable WAL mode ({mode})")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            # Index pages of large batches stay in memory (32 MB at most, per connection).
            self._conn.execute("PRAGMA cache_size = -32000")
            self.schema_version = self._migrate()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise UserError(
                f"{self.path} is not a toolproof trace store ({exc}); point --store at the "
                "right file or move this one away"
            ) from exc
        except BaseException:
            self._conn.close()
            raise

    # -- what each engine provides (SQLite here; see _postgres.py) ----------------------------

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders); returns a cursor."""
        return self._conn.execute(sql, params)

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        """Run one statement per parameter row; returns how many rows it changed."""
        pause = self._pause
        if pause is None or len(rows) <= _PAUSE_ROWS:
            return int(self._conn.executemany(sql, rows).rowcount) if rows else 0
        changed = 0
        for start in range(0, len(rows), _PAUSE_ROWS):
            changed += int(self._conn.executemany(sql, rows[start : start + _PAUSE_ROWS]).rowcount)
            pause()
        return changed

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """A write transaction: other writers wait for it, readers do not.

        Raises:
            UserError: The disk refused the write (full, or past the file size limit): the
                message names the cause and the store; nothing of the transaction is kept.
        """
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield
                    self._conn.execute("COMMIT")
                except BaseException:
                    # SQLite may have rolled back already (a full disk does): the error
                    # that ended the transaction is the one to report, not the rollback's.
                    if self._conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            self._conn.execute("ROLLBACK")
                    raise
            except sqlite3.OperationalError as exc:
                failure = _write_failure(self, exc)
                if failure is None:
                    raise
                raise failure from exc

    def _lock_layout(self) -> None:
        """Inside the migration's transaction: one process at a time migrates."""

    def _insert(self, values: list[tuple[Any, ...]], *, replace: bool) -> set[str]:
        """Insert trace rows (the ``traces`` columns in order); returns the ids written."""
        columns = ", ".join(TRACE_COLUMNS)
        marks = ", ".join("?" for _ in TRACE_COLUMNS)
        ids = {value[0] for value in values}
        if replace:
            self._exec_many(f"INSERT OR REPLACE INTO traces ({columns}) VALUES ({marks})", values)
            return ids
        existing = self._existing_ids(list(ids))
        self._exec_many(f"INSERT OR IGNORE INTO traces ({columns}) VALUES ({marks})", values)
        return ids - existing

    def _stream(self, sql: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        """The rows of a query, fetched in chunks while the caller reads them."""
        with self._lock:
            cursor = self._conn.cursor()
            cursor.execute(sql, params)
        try:
            while True:
                with self._lock:
                    chunk = cursor.fetchmany(256)
                if not chunk:
                    return
                yield from chunk
        finally:
            cursor.close()

    def _scan_only(self) -> None:
        """This connection only reads the store through once (a replay's own connection).

        A page cache larger than the scan needs only costs: every page read lands in
        newly allocated memory (cold in the processor's caches) instead of a recycled page.
        """
        if self._dialect is SQLITE:
            with self._lock:
                self._exec("PRAGMA cache_size = -2000")

    def integrity_check(self) -> str:
        """The engine's consistency check: ``"ok"`` for a sound store.

        For SQLite, ``PRAGMA integrity_check``; for PostgreSQL, that no tag or tool row
        outlived its trace. On both, that every trace naming a tool set has it.
        """
        with self._lock:
            verdict = str(self._exec("PRAGMA integrity_check").fetchone()[0])
            return verdict if verdict != "ok" else missing_tool_sets(self)

    def _close_connection(self) -> None:
        self._conn.close()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database connection (idempotent)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close_connection()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.location}>"

    def _migrate(self) -> int:
        with self._transaction():
            self._lock_layout()
            self._exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = self._exec("SELECT version FROM schema_version").fetchone()
            version = int(row[0]) if row else 0
            if row is None:
                self._exec("INSERT INTO schema_version (version) VALUES (0)")
            if version > SCHEMA_VERSION:
                raise UserError(
                    f"trace store {self.location} has schema version {version}, newer than "
                    f"this toolproof understands ({SCHEMA_VERSION}); upgrade toolproof to use it"
                )
            for number in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[number - 1](self)
                self._exec("UPDATE schema_version SET version = ?", (number,))
        return SCHEMA_VERSION

    # -- writing -----------------------------------------------------------------------------

    def add(self, trace: Trace, *, replace: bool = False) -> bool:
        """Store one trace (as is: redact it first, or record through a ``Recorder``).

        Returns:
            Whether it was stored (``False`` when a trace with this id exists and
            ``replace`` is false).
        """
        return self.add_many([trace], replace=replace) == 1

    def add_many(self, traces: Iterable[Trace], *, replace: bool = False) -> int:
        """Store traces in one transaction; returns how many were new (or replaced)."""
        rows = [row_from_trace(trace) for trace in traces]
        return self._write(rows, replace=replace)

    def _write(self, rows: Sequence[Row], *, replace: bool = False) -> int:
        """Store prepared rows in one transaction (``Recorder`` and imports use this)."""
        if not rows:
            return 0
        now = time.time()
        # One order for every writer: concurrent batches never wait on each other in a cycle.
        rows = sorted(rows, key=_BY_ID)
        pause = self._pause
        # (a recorder's batch is built in parts, handing over between them: 500 rows take
        # about 0.3 ms, which an agent's thread waking meanwhile would wait through)
        step = len(rows) if pause is None else 2 * _PAUSE_ROWS
        values: list[tuple[Any, ...]] = []
        for start in range(0, len(rows), step):
            values += [
                (
                    row.id,
                    row.ts if row.ts is not None else now,
                    row.started_at,
                    row.model,
                    row.status,
                    row.payload,
                    row.version,
                    row.input,
                    sum(row.tools.values()),
                    row.duration_ms,
                    now,
                    row.tool_set,
                )
                for row in rows[start : start + step]
            ]
            if pause is not None:
                pause()
        tool_sets = {row.tool_set: row.tool_set_json for row in rows if row.tool_set is not None}
        with self._transaction():
            # (before the rows that name them: a reader never meets a row without its set)
            self._exec_many(
                self._dialect.ignore("INSERT INTO tool_sets (digest, payload) VALUES (?, ?)"),
                sorted(tool_sets.items()),
            )
            if replace:
                ids = [(row.id,) for row in rows]
                self._exec_many("DELETE FROM trace_tags WHERE trace_id = ?", ids)
                self._exec_many("DELETE FROM trace_tools WHERE trace_id = ?", ids)
            written = self._insert(values, replace=replace)
            fresh = [row for row in rows if row.id in written]
            self._exec_many(
                self._dialect.ignore("INSERT INTO trace_tags (tag, trace_id) VALUES (?, ?)"),
                [(tag, row.id) for row in fresh for tag in sorted(row.tags)],
            )
            self._exec_many(
                self._dialect.ignore(
                    "INSERT INTO trace_tools (tool, trace_id, calls) VALUES (?, ?, ?)"
                ),
                [
                    (tool, row.id, count)
                    for row in fresh
                    for tool, count in sorted(row.tools.items())
                ],
            )
        return len(written)

    def delete(self, ids: Iterable[str]) -> int:
        """Delete traces by id; returns how many existed."""
        keys = [(trace_id,) for trace_id in sorted(set(ids))]
        with self._transaction():
            deleted = self._exec_many("DELETE FROM traces WHERE id = ?", keys)
            self._exec_many("DELETE FROM trace_tags WHERE trace_id = ?", keys)
            self._exec_many("DELETE FROM trace_tools WHERE trace_id = ?", keys)
        return deleted

    def delete_matching(self, filter: TraceFilter) -> int:
        """Delete the traces ``filter`` selects (its ``limit`` is ignored); returns how many.

        One statement per table, in one transaction (``toolproof traces prune`` uses this).
        """
        where, params = self._where(filter)
        chosen = f"SELECT t.id FROM traces t WHERE {where}"
        with self._transaction():
            self._exec(f"DELETE FROM trace_tags WHERE trace_id IN ({chosen})", params)
            self._exec(f"DELETE FROM trace_tools WHERE trace_id IN ({chosen})", params)
            cursor = self._exec(f"DELETE FROM traces WHERE id IN ({chosen})", params)
            return int(cursor.rowcount)

    # -- reading -----------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.count()

    def count(self, filter: TraceFilter | None = None) -> int:
        """How many stored traces match ``filter`` (its ``limit`` is ignored)."""
        where, params = self._where(filter or TraceFilter())
        with self._lock:
            row = self._exec(f"SELECT COUNT(*) FROM traces t WHERE {where}", params).fetchone()
        return int(row[0])

    def get(self, trace_id: str) -> Trace:
        """The trace with this id, or the only one whose id starts with it.

        Raises:
            UserError: No trace matches, or the prefix is ambiguous.
            TraceFormatError: The stored row cannot be decoded (the message says why).
        """
        found, payload, version = self._payload(trace_id)
        return _decode(payload, version, found)

    def get_json(self, trace_id: str) -> str:
        """The stored JSON of one trace (id or unique prefix), exactly as written.

        Raises:
            UserError: No trace matches, or the prefix is ambiguous.
            TraceFormatError: The stored row cannot be decoded (the message says why).
        """
        found, payload, version = self._payload(trace_id)
        _decode(payload, version, found)
        return payload_text(payload)

    def _where(self, filter: TraceFilter) -> tuple[str, list[Any]]:
        """``filter``'s SQL, its ids resolved: a unique prefix stands for its id.

        Raises:
            UserError: A prefix starts several ids (the message lists some of them).
        """
        if filter.ids:
            filter = dataclasses.replace(filter, ids=[self._full_id(i) for i in filter.ids])
        return filter.where(dialect=self._dialect)

    def _full_id(self, text: str) -> str:
        """The id ``text`` names: itself, or the one id it is a prefix of (else itself)."""
        prefix, param = self._dialect.prefix("id", text)
        with self._lock:
            rows = self._exec(
                "SELECT id FROM traces WHERE id = ? UNION ALL SELECT id FROM traces "
                f"WHERE {prefix} AND id != ? LIMIT 6",
                (text, param, text),
            ).fetchall()
        found = [str(row[0]) for row in rows]
        if text in found or not found:
            return text
        if len(found) > 1:
            shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
            raise UserError(
                f"trace id prefix {text!r} is ambiguous: it starts {shown}; give more of it"
            )
        return found[0]

    def _payload(self, trace_id: str) -> tuple[str, Any, int]:
        prefix, param = self._dialect.prefix("id", trace_id)
        with self._lock:
            rows = self._exec(
                "SELECT id, payload, format_version, tool_set FROM traces WHERE id = ? "
                "UNION ALL SELECT id, payload, format_version, tool_set FROM traces "
                f"WHERE {prefix} AND id != ? LIMIT 3",
                (trace_id, param, trace_id),
            ).fetchall()
        exact = [row for row in rows if row[0] == trace_id]
        if exact:
            return str(exact[0][0]), self._joined(exact[0][1], exact[0][3]), int(exact[0][2])
        if not rows:
            raise UserError(
                f"no trace {trace_id!r} in {self.location}; `toolproof traces list` shows the ids"
            )
        if len(rows) > 1:
            shown = ", ".join(row[0] for row in rows[:2])
            raise UserError(
                f"trace id prefix {trace_id!r} is ambiguous ({shown}, ...); give more of it"
            )
        return str(rows[0][0]), self._joined(rows[0][1], rows[0][3]), int(rows[0][2])

    def rows(
        self,
        filter: TraceFilter | None = None,
        *,
        newest_first: bool = True,
        check: bool = False,
    ) -> list[StoreRow]:
        """The listing columns of matching traces, with their tools and tags.

        Args:
            filter: Which traces.
            newest_first: The order.
            check: Also decode each row's payload and leave out (with a warning) those
                that cannot be decoded, as the other readers do. Without it nothing but
                the listing columns is read, so rows that cannot be decoded are listed
                (``prune`` uses this to delete them).
        """
        filter = filter or TraceFilter()
        where, params = self._where(filter)
        order = "DESC" if newest_first else "ASC"
        limit = f" LIMIT {int(filter.limit)}" if filter.limit else ""
        extra = ", payload, format_version, tool_set" if check else ""
        with self._lock:
            found = self._exec(
                "SELECT id, ts, started_at, model, status, input, tool_calls, duration_ms"
                f"{extra} FROM traces t WHERE {where} ORDER BY t.ts {order}, t.id{limit}",
                params,
            ).fetchall()
        if check:
            found = [
                row[:8]
                for row in found
                if self._readable(row[0], self._joined(row[8], row[10]), row[9])
            ]
        with self._lock:
            out = [StoreRow(*row) for row in found]
            by_id = {row.id: row for row in out}
            for chunk in chunks(list(by_id), 500):
                marks = ", ".join("?" for _ in chunk)
                for tool, trace_id, calls in self._exec(
                    f"SELECT tool, trace_id, calls FROM trace_tools WHERE trace_id IN ({marks})",
                    chunk,
                ).fetchall():
                    by_id[trace_id].tools[tool] = calls
                for tag, trace_id in self._exec(
                    f"SELECT tag, trace_id FROM trace_tags WHERE trace_id IN ({marks})", chunk
                ).fetchall():
                    by_id[trace_id].tags.append(tag)
        for row in out:
            row.tags.sort()
        return out

    def query(
        self, filter: TraceFilter | None = None, *, newest_first: bool = True
    ) -> Iterator[Trace]:
        """Decode matching traces, most recent first (read lazily, in chunks).

        Rows that cannot be decoded are skipped with a warning (see :attr:`skipped`).
        """
        for _, _, trace in self._decoded(filter, newest_first=newest_first):
            yield trace

    def query_with_time(
        self, filter: TraceFilter | None = None, *, newest_first: bool = True
    ) -> Iterator[tuple[Trace, float]]:
        """Like :meth:`query`, with each trace's stored time (epoch seconds)."""
        for ts, _, trace in self._decoded(filter, newest_first=newest_first):
            yield trace, ts

    def payloads(
        self, filter: TraceFilter | None = None, *, newest_first: bool = True
    ) -> Iterator[tuple[float, bytes, int]]:
        """The stored JSON of matching traces: ``(ts, payload, format_version)`` tuples.

        Each payload is decoded first: rows that cannot be decoded are skipped with a
        warning (see :attr:`skipped`), so every payload returned is a readable trace.
        """
        for ts, (payload, version), _ in self._decoded(filter, newest_first=newest_first):
            yield ts, payload, version

    def _decoded(
        self, filter: TraceFilter | None, *, newest_first: bool
    ) -> Iterator[tuple[float, tuple[bytes, int], Trace]]:
        for trace_id, ts, payload, version in self._raw(filter, newest_first=newest_first):
            try:
                trace = _decode(payload, version, trace_id)
            except TraceFormatError as exc:
                self._skip(trace_id, exc)
                continue
            yield ts, (payload, version), trace

    def _readable(self, trace_id: str, payload: Any, version: int) -> bool:
        try:
            _decode(payload, version, trace_id)
        except TraceFormatError as exc:
            self._skip(trace_id, exc)
            return False
        return True

    def _skip(self, trace_id: str, exc: TraceFormatError) -> None:
        self.skipped.append(trace_id)
        logger.warning("%s; skipped", exc)

    def _raw(
        self, filter: TraceFilter | None = None, *, newest_first: bool = True
    ) -> Iterator[tuple[str, float, Any, int]]:
        """``(id, ts, payload, format_version)`` of matching rows, tools joined back.

        A payload whose tool set cannot be joined is an ``Unjoined`` (``_decode`` raises
        its reason as a ``TraceFormatError``, so readers skip the row with a warning).
        """
        joined = self._joined
        for trace_id, ts, payload, version, digest in self._raw_parts(
            filter, newest_first=newest_first
        ):
            yield trace_id, ts, payload if digest is None else joined(payload, digest), version

    def _raw_parts(
        self, filter: TraceFilter | None = None, *, newest_first: bool = True
    ) -> Iterator[tuple[str, float, Any, int, str | None]]:
        """``(id, ts, payload, format_version, tool_set)``: payloads as stored."""
        filter = filter or TraceFilter()
        where, params = self._where(filter)
        order = "DESC" if newest_first else "ASC"
        limit = f" LIMIT {int(filter.limit)}" if filter.limit else ""
        yield from self._stream(
            f"SELECT id, ts, payload, format_version, tool_set FROM traces t WHERE {where} "
            f"ORDER BY t.ts {order}, t.id{limit}",
            params,
        )

    def _joined(self, payload: Any, digest: str | None) -> Any:
        """A stored payload with its tool set joined back (as it is without one)."""
        if digest is None:
            return payload
        try:
            tools = self._tool_set(digest)
        except TraceFormatError as exc:
            return Unjoined(str(exc))
        if not isinstance(payload, (bytes, memoryview)):
            return Unjoined(f"its payload is {type(payload).__name__}, not JSON bytes")
        return join(bytes(payload), tools)

    def _tool_set(self, digest: str) -> bytes:
        """The bytes of a tool set, checked against its digest (kept: they never change).

        Raises:
            TraceFormatError: The tool set is missing or does not match its digest.
        """
        found = self._tool_sets.get(digest)
        if found is not None:
            return found
        with self._lock:
            row = self._exec("SELECT payload FROM tool_sets WHERE digest = ?", (digest,)).fetchone()
        if row is None:
            raise TraceFormatError(f"its tool set {str(digest)[:16]} is missing from the store")
        payload = row[0]
        if not isinstance(payload, (bytes, memoryview)) or digest_of(bytes(payload)) != digest:
            raise TraceFormatError(
                f"its tool set {str(digest)[:16]} is damaged (its bytes do not match its digest)"
            )
        found = bytes(payload)
        if len(self._tool_sets) >= _TOOL_SETS_KEPT:
            self._tool_sets.clear()
        self._tool_sets[digest] = found
        return found

    def models(self) -> list[tuple[str, int]]:
        """Model names in the store with their trace counts."""
        return self._counts("SELECT model, COUNT(*) FROM traces GROUP BY model ORDER BY model")

    def tools(self) -> list[tuple[str, int]]:
        """Tool names in the store with how many calls were recorded."""
        return self._counts("SELECT tool, SUM(calls) FROM trace_tools GROUP BY tool ORDER BY tool")

    def _counts(self, sql: str) -> list[tuple[str, int]]:
        with self._lock:
            return [(str(name), int(n)) for name, n in self._exec(sql).fetchall()]

    def _existing_ids(self, ids: list[str]) -> set[str]:
        found: set[str] = set()
        for chunk in chunks(ids, 500):
            marks = ", ".join("?" for _ in chunk)
            found.update(
                row[0]
                for row in self._exec(
                    f"SELECT id FROM traces WHERE id IN ({marks})", chunk
                ).fetchall()
            )
        return found


#: SQLite's result codes for a full disk and for a failed read or write (its extended
#: codes keep this one in their low byte).
_SQLITE_FULL = 13
_SQLITE_IOERR = 10
#: How close to a limit a file or the free space must be to name it as the cause.
_NEAR_LIMIT = 1 << 20


def _write_failure(store: TraceStore, exc: sqlite3.OperationalError) -> UserError | None:
    """A clear error for a write the disk refused, naming the cause; ``None`` otherwise."""
    code = getattr(exc, "sqlite_errorcode", None)  # (Python 3.11+; the text before)
    if code is not None:
        full, failed = code == _SQLITE_FULL, code & 0xFF == _SQLITE_IOERR
    else:  # pragma: no cover - Python 3.10
        full, failed = "disk is full" in str(exc), "I/O error" in str(exc)
    if not (full or failed) or store.location == ":memory:":
        return None
    largest = 0
    for suffix in ("", "-wal", "-journal"):
        with contextlib.suppress(OSError):
            largest = max(largest, os.stat(f"{store.path}{suffix}").st_size)
    try:
        free: int | None = shutil.disk_usage(store.path.parent).free
    except OSError:
        free = None
    limit = _file_size_limit()
    if limit is not None and largest + _NEAR_LIMIT >= limit:
        cause = (
            f"file too large: its files reached this process's file size limit of "
            f"{limit:,} bytes (`ulimit -f`)"
        )
    elif full or (free is not None and free < _NEAR_LIMIT):
        cause = "the disk is full" + (f" ({free:,} bytes free)" if free is not None else "")
    else:
        cause = "the disk failed to write"
    return UserError(
        f"cannot write to trace store {store.location}: {cause}; nothing of this write was "
        f"stored (SQLite: {exc})"
    )


def _file_size_limit() -> int | None:
    """The largest file this process may write, in bytes (``None``: no limit, or unknown)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return None
    soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    return None if soft == resource.RLIM_INFINITY else soft


#: Rows of one statement between two calls of ``TraceStore._pause``.
_PAUSE_ROWS = 32
_BY_ID = operator.attrgetter("id")
#: Tool sets a store object keeps read (each checked against its digest once).
_TOOL_SETS_KEPT = 256

TRACE_COLUMNS = (
    "id",
    "ts",
    "started_at",
    "model",
    "status",
    "payload",
    "format_version",
    "input",
    "tool_calls",
    "duration_ms",
    "recorded_at",
    "tool_set",
)


def is_store_url(location: str | Path) -> bool:
    """Whether ``location`` names a database server (``postgresql://...``), not a file."""
    text = str(location)
    if isinstance(location, Path) or "://" not in text:
        return False
    scheme = text.split("://", 1)[0].lower()
    if not re.fullmatch(r"[a-z][a-z0-9+.-]*", scheme):
        return False  # a file path that happens to hold "://"
    if scheme in ("postgresql", "postgres"):
        return True
    if scheme == "sqlite":
        return False
    raise UserError(
        f"unsupported trace store URL {text.split('://', 1)[0]}://...: use a file path, "
        "sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
    )


def _sqlite_path(location: str | Path) -> str | Path:
    text = str(location)
    # sqlite:///relative.db and sqlite:////absolute.db, as SQLAlchemy spells them
    if not isinstance(location, Path) and text.lower().startswith("sqlite://"):
        return text[len("sqlite:///") :] or ":memory:"
    return location


def resolve_store(location: str | Path) -> str | Path:
    """Where a store is, fixed now: a relative file path made absolute, a URL as it is."""
    if is_store_url(location):
        return str(location)
    path = _sqlite_path(location)
    return Path(path) if str(path) == ":memory:" else Path(path).resolve()


def store_label(location: str | Path) -> str:
    """``location`` for messages: a URL with its password masked, a path as it is."""
    if is_store_url(location):
        from toolproof.replay._postgres import mask_url

        return mask_url(str(location))
    return str(location)


def open_store(path: str | Path | None = None, *, create: bool = False) -> TraceStore:
    """Open the store at ``path`` (default ``.toolproof/traces.db``) for the CLI.

    ``path`` is a file, or a ``postgresql://`` URL for a PostgreSQL store.
    """
    return TraceStore(path or DEFAULT_STORE_PATH, create=create)


#: Traces naming a tool set the store does not hold (a row a reader would have to skip).
_MISSING_TOOL_SETS = (
    "SELECT COUNT(*) FROM traces t WHERE t.tool_set IS NOT NULL AND NOT EXISTS "
    "(SELECT 1 FROM tool_sets s WHERE s.digest = t.tool_set)"
)


def missing_tool_sets(store: TraceStore) -> str:
    """``"ok"``, or how many traces name a tool set that is not stored."""
    missing = int(store._exec(_MISSING_TOOL_SETS).fetchone()[0])
    return "ok" if missing == 0 else f"{missing} traces name a tool set that is not stored"
