"""The trace store: round trips, filters, migrations and refusals (SQLite and PostgreSQL)."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import replace
from pathlib import Path

import pytest
from replay_helpers import run_trace, user_trace

from toolproof import UserError
from toolproof.replay import TraceFilter, TraceStore
from toolproof.replay._store import MIGRATIONS, SCHEMA_VERSION
from toolproof.testing import call


def test_round_trip_keeps_the_trace_exactly(store_url: str) -> None:
    trace = user_trace(tags=["prod"], metadata={"team": "ops"})
    with TraceStore(store_url) as store:
        assert store.add(trace) is True
        assert store.add(trace) is False  # same id: ignored
        assert len(store) == 1
        assert store.get(trace.id) == trace
        assert store.get(trace.id[:6]) == trace
        assert store.get_json(trace.id) == trace.to_json()


def test_wal_mode_and_version_table(db_path: Path) -> None:
    TraceStore(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
    indexes = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert {"traces_ts", "traces_model", "traces_status", "trace_tools_trace"} <= indexes
    conn.close()


def test_filters_select_by_time_tool_model_tag_and_status(store_url: str) -> None:
    old = replace(user_trace(1, tags=["prod", "eu"]), started_at="2024-01-01T00:00:00Z")
    new = user_trace(2, tags=["prod"])
    other_model = replace(user_trace(3, tags=["staging"]), model="deepseek:deepseek-chat")
    no_tool = run_trace(["Hello!"], input="hi")
    failed = replace(user_trace(4), stop_reason="max_steps")
    with TraceStore(store_url) as store:
        store.add_many([old, new, other_model, no_tool, failed])

        def ids(**criteria: object) -> set[str]:
            return {t.id for t in store.query(TraceFilter(**criteria))}  # type: ignore[arg-type]

        assert ids() == {old.id, new.id, other_model.id, no_tool.id, failed.id}
        assert ids(since="2024-06-01") == {new.id, other_model.id, no_tool.id, failed.id}
        assert ids(until="2024-06-01") == {old.id}
        assert ids(since="1d") == {new.id, other_model.id, no_tool.id, failed.id}
        assert ids(tools=["query_users"]) == {old.id, new.id, other_model.id, failed.id}
        assert ids(tools=["nothing"]) == set()
        assert ids(model="deepseek:*") == {other_model.id}
        assert ids(model="scripted") == {old.id, new.id, no_tool.id, failed.id}
        assert ids(tags=["prod"]) == {old.id, new.id}
        assert ids(tags=["prod", "eu"]) == {old.id}
        assert ids(status="max_steps") == {failed.id}
        assert ids(status="failed") == {failed.id}
        assert ids(status="ok") == {old.id, new.id, other_model.id, no_tool.id}
        assert ids(ids=[new.id, no_tool.id]) == {new.id, no_tool.id}
        assert store.count(TraceFilter(tags=["prod"])) == 2
        # newest first, limit
        newest = list(store.query(TraceFilter(limit=1)))
        assert newest[0].id != old.id
        oldest_first = [t.id for t in store.query(newest_first=False)]
        assert oldest_first[0] == old.id
        assert oldest_first[-1] != old.id


def test_rows_list_without_decoding(store_url: str) -> None:
    trace = run_trace(
        [call("query_users", user_id=1), call("query_users", user_id=2), "Both found."],
        tags=["b", "a"],
    )
    with TraceStore(store_url) as store:
        store.add(trace)
        (row,) = store.rows()
        assert store.tools() == [("query_users", 2)]
    assert row.id == trace.id
    assert row.tools == {"query_users": 2}
    assert row.tool_calls == 2
    assert row.tags == ["a", "b"]
    assert row.input == trace.input
    assert row.status == "final"


def test_replace_and_delete(store_url: str) -> None:
    trace = user_trace(tags=["x"])
    changed = replace(trace, output="changed", tags=["y"])
    with TraceStore(store_url) as store:
        store.add(trace)
        assert store.add(changed, replace=True) is True
        assert store.get(trace.id).output == "changed"
        assert store.count(TraceFilter(tags=["x"])) == 0
        assert store.count(TraceFilter(tags=["y"])) == 1
        assert store.delete([trace.id, "missing"]) == 1
        assert len(store) == 0
        assert store.count(TraceFilter(tags=["y"])) == 0


def test_bad_filters_and_ids_say_what_to_fix(store_url: str) -> None:
    with TraceStore(store_url) as store:
        store.add_many([user_trace(1), user_trace(2)])
        with pytest.raises(UserError) as info:
            store.count(TraceFilter(status="done"))
        assert str(info.value) == (
            "unknown status 'done'; use one of: ok, failed, final, max_steps, budget, "
            "repeated_call, cancelled, error"
        )
        with pytest.raises(UserError, match="neither an age"):
            store.count(TraceFilter(since="last week"))
        with pytest.raises(UserError, match="no trace 'zzz' in"):
            store.get("zzz")
        with pytest.raises(UserError, match="ambiguous"):
            store.get("")


def test_missing_store_is_reported_not_created(tmp_path: Path) -> None:
    path = tmp_path / "nope" / "traces.db"
    with pytest.raises(UserError) as info:
        TraceStore(path, create=False)
    assert "no trace store at" in str(info.value)
    assert "toolproof traces import FILE" in str(info.value)
    assert not path.exists()


def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are not traces\n" * 100)
    with pytest.raises(UserError, match="is not a toolproof trace store"):
        TraceStore(path)


def test_a_newer_store_is_refused(store_url: str) -> None:
    with TraceStore(store_url) as store:
        store._exec("UPDATE schema_version SET version = 99")
    with pytest.raises(UserError) as info:
        TraceStore(store_url)
    understood = f"schema version 99, newer than this toolproof understands ({SCHEMA_VERSION})"
    assert understood in str(info.value)


def test_upgrade_from_version_1_backfills_the_tool_index(db_path: Path) -> None:
    """A store written by the first layout is migrated in place, its data kept."""
    trace = run_trace(
        [call("query_users", user_id=7), call("query_users", user_id=8), "Done."],
        tags=["legacy"],
    )
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    MIGRATIONS[0](conn)
    conn.execute("INSERT INTO schema_version VALUES (1)")
    conn.execute(
        "INSERT INTO traces (id, ts, started_at, model, status, payload) VALUES (?, ?, ?, ?, ?, ?)",
        (trace.id, time.time(), trace.started_at, trace.model, "final", trace.to_json().encode()),
    )
    conn.execute("INSERT INTO trace_tags VALUES ('legacy', ?)", (trace.id,))
    conn.close()

    with TraceStore(db_path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store.get(trace.id) == trace
        assert store.count(TraceFilter(tools=["query_users"], tags=["legacy"])) == 1
        (row,) = store.rows()
        assert row.tool_calls == 2
        assert row.input == trace.input
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
    conn.close()


def test_a_trace_of_an_unknown_format_version_gets_the_codec_message(store_url: str) -> None:
    trace = user_trace()
    with TraceStore(store_url) as store:
        store.add(trace)
        payload = trace.to_json().replace('"version":1', '"version":7', 1)
        store._exec("UPDATE traces SET payload = ?, format_version = 7", (payload.encode(),))
        with pytest.raises(UserError, match="trace format version 7 is newer"):
            store.get(trace.id)


def test_memory_store_for_quick_use() -> None:
    with TraceStore(":memory:") as store:
        store.add(user_trace())
        assert len(store) == 1
