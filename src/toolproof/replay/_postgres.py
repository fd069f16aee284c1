"""The trace store in PostgreSQL: the SQLite store's layout and queries on a database server.

Everything but the connection is shared with the SQLite store (``_store.py``): the schema
version and migrations, the filters, validation before write and the skipping of rows that
cannot be decoded. What differs is small and lives here or in the dialect:

- Autocommit connection for short statements; every write is one transaction, retried when
  PostgreSQL picks it as a deadlock or serialization victim (the batch is then rolled back
  whole, so a retry never writes twice).
- ``INSERT ... ON CONFLICT DO NOTHING RETURNING id`` tells exactly which traces a batch
  added, even with other processes writing the same ids at once.
- Migrations take a transaction-level advisory lock: processes opening a new database at
  once create the layout once.
- Long reads use a server-side cursor on their own connection, in one snapshot: a replay
  reads a consistent set of traces while recorders keep writing.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from toolproof.errors import UserError
from toolproof.replay._store import DEFAULT_STORE_PATH, TraceStore, missing_tool_sets
from toolproof.replay._store import TRACE_COLUMNS as _COLUMNS
from toolproof.replay._store_rows import Dialect

__all__ = ["PostgresTraceStore", "mask_url"]

#: Key of the advisory lock held while the layout is created or migrated.
_LAYOUT_LOCK = 0x746F6F6C  # "tool"

_RETRIES = 5


def _glob(column: str, pattern: str) -> tuple[str, str]:
    return f"{column} ~ ?", glob_to_regex(pattern)


def _prefix(column: str, text: str) -> tuple[str, str]:
    return f"starts_with({column}, ?)", text


POSTGRES = Dialect(
    blob="BYTEA",
    real="DOUBLE PRECISION",
    without_rowid="",
    glob=_glob,
    prefix=_prefix,
    on_conflict_ignore="ON CONFLICT DO NOTHING",
)


def glob_to_regex(pattern: str) -> str:
    """A SQLite ``GLOB`` pattern as an anchored PostgreSQL regular expression.

    Follows SQLite's own reading of the pattern (``*``, ``?``, ``[...]`` with ``^``, a
    leading ``]`` and ranges; a set that is never closed matches nothing), so a model filter
    selects the same names on both stores.
    """
    out = ["^"]
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "*":
            out.append(".*")
        elif ch == "?":
            out.append(".")
        elif ch == "[":
            j = i + 1
            negate = j < n and pattern[j] == "^"
            j += negate
            members: list[str] = []
            prior: str | None = None
            if j < n and pattern[j] == "]":
                members.append(_escape("]"))
                j += 1
            while j < n and pattern[j] != "]":
                c = pattern[j]
                if c == "-" and prior is not None and j + 1 < n and pattern[j + 1] != "]":
                    high = pattern[j + 1]
                    if prior <= high:
                        members.append(f"{_escape(prior)}-{_escape(high)}")
                    prior = None
                    j += 2
                    continue
                members.append(_escape(c))
                prior = c
                j += 1
            if j >= n:
                return _NEVER  # SQLite: a set without its closing ] matches nothing
            out.append("[" + ("^" if negate else "") + "".join(members) + "]")
            i = j
        else:
            out.append(_escape(ch))
        i += 1
    out.append("$")
    return "".join(out)


#: A regular expression that matches no text.
_NEVER = "^(?!)"


def _escape(ch: str) -> str:
    return ch if ch.isalnum() else "\\" + ch


def _text(value: Any) -> Any:
    # PostgreSQL text cannot hold NUL; SQLite can. The payload (bytea) keeps it exactly.
    return value.replace("\x00", "\ufffd") if isinstance(value, str) else value


def _texts(params: Sequence[Any]) -> list[Any]:
    return [_text(value) for value in params]


def mask_url(url: str) -> str:
    """The URL with its password replaced by ``***`` (for messages and reports)."""
    from toolproof._text import mask_urls

    return mask_urls(url)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise UserError(
            "a postgresql:// trace store needs psycopg: pip install 'toolproof[postgres]'"
        ) from exc
    return psycopg


class PostgresTraceStore(TraceStore):
    """A :class:`TraceStore` in a PostgreSQL database (``TraceStore("postgresql://...")``).

    Args:
        path: The ``postgresql://`` URL (libpq's form: user, password, host, port, database
            and ``?option=value`` parameters such as ``sslmode``).
        create: Create the tables when the database has none; with ``False`` a database
            without a toolproof layout raises ``UserError``.
        timeout: Seconds to wait for the server when connecting.
    """

    _dialect = POSTGRES

    def __init__(
        self,
        path: str | Path = DEFAULT_STORE_PATH,
        *,
        create: bool = True,
        timeout: float = 30.0,
    ) -> None:
        psycopg = _psycopg()
        self._url = str(path)
        self.location = mask_url(self._url)
        self.path = Path(self.location)
        self._timeout = timeout
        self._lock = threading.RLock()
        self.skipped: list[str] = []
        self._tool_sets: dict[str, bytes] = {}
        self._closed = False
        self._pg = self._connect(autocommit=True)
        try:
            if not create and not self._has_layout():
                raise UserError(
                    f"no trace store in {self.location}: record runs with "
                    "Agent(recorder=Recorder(...)) or import them with "
                    "`toolproof traces import FILE --store URL`"
                )
            self.schema_version = self._migrate()
        except psycopg.Error as exc:
            self._pg.close()
            raise UserError(
                f"{self.location} is not usable as a toolproof trace store ({exc}); check "
                "the URL and the user's rights on the database"
            ) from exc
        except BaseException:
            self._pg.close()
            raise

    def _connect(self, *, autocommit: bool) -> Any:
        psycopg = _psycopg()
        try:
            return psycopg.connect(
                self._url,
                autocommit=autocommit,
                connect_timeout=max(1, int(self._timeout)),
                application_name="toolproof",
            )
        except psycopg.Error as exc:
            raise UserError(f"cannot open trace store {self.location}: {exc}") from exc

    def _close_connection(self) -> None:
        self._pg.close()

    def _has_layout(self) -> bool:
        row = self._pg.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()
        return bool(row[0])

    # -- the engine's part ----------------------------------------------------------------------

    def _exec(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._pg.execute(sql.replace("?", "%s"), _texts(params) or None)

    def _exec_many(self, sql: str, rows: Sequence[Sequence[Any]]) -> int:
        if not rows:
            return 0
        with self._pg.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), [_texts(row) for row in rows])
            return int(cursor.rowcount)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        with self._lock, self._pg.transaction():
            yield

    def _lock_layout(self) -> None:
        self._exec("SELECT pg_advisory_xact_lock(?)", (_LAYOUT_LOCK,))

    def _write(self, rows: Sequence[Any], *, replace: bool = False) -> int:
        psycopg = _psycopg()
        retryable = (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure)
        for attempt in range(_RETRIES + 1):
            try:
                return super()._write(rows, replace=replace)
            except retryable:  # rolled back whole: nothing of this batch was written
                if attempt == _RETRIES:
                    raise
                time.sleep(0.01 * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _insert(self, values: list[tuple[Any, ...]], *, replace: bool) -> set[str]:
        columns = ", ".join(_COLUMNS)
        marks = ", ".join("%s" for _ in _COLUMNS)
        if replace:
            updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in _COLUMNS[1:])
            conflict = f"ON CONFLICT (id) DO UPDATE SET {updates}"
        else:
            conflict = "ON CONFLICT DO NOTHING"
        given = {_text(value[0]): value[0] for value in values}
        written: set[str] = set()
        with self._pg.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO traces ({columns}) VALUES ({marks}) {conflict} RETURNING id",
                [_texts(value) for value in values],
                returning=True,
            )
            while True:
                written.update(given.get(row[0], row[0]) for row in cursor.fetchall())
                if not cursor.nextset():
                    break
        return written

    def _stream(self, sql: str, params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        conn = self._connect(autocommit=False)
        try:
            with conn.transaction(), conn.cursor(name=f"toolproof_{uuid.uuid4().hex}") as cursor:
                cursor.execute(sql.replace("?", "%s"), _texts(params) or None)
                while True:
                    chunk = cursor.fetchmany(256)
                    if not chunk:
                        return
                    yield from chunk
        finally:
            conn.close()

    def integrity_check(self) -> str:
        """``"ok"`` when no tag or tool row outlived its trace and no trace lacks its tool set."""
        with self._lock:
            orphans = self._exec(
                "SELECT (SELECT COUNT(*) FROM trace_tags g WHERE NOT EXISTS "
                "(SELECT 1 FROM traces t WHERE t.id = g.trace_id)) + "
                "(SELECT COUNT(*) FROM trace_tools x WHERE NOT EXISTS "
                "(SELECT 1 FROM traces t WHERE t.id = x.trace_id))"
            ).fetchone()[0]
            if int(orphans) != 0:
                return f"{orphans} tag or tool rows without their trace"
            return missing_tool_sets(self)
