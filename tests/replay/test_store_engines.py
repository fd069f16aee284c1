"""What the PostgreSQL store must do exactly like the SQLite one, tried against both engines.

A real PostgreSQL server (see tests/_postgres.py) and real SQLite files: globs select the same
names, hostile text round-trips, readers read while other processes write, URLs never leak
their password, and the CLI runs on a URL as on a path.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_helpers import user_trace

import _processes as processes
from toolproof import Trace, UserError
from toolproof.replay import TraceFilter, TraceStore
from toolproof.replay._postgres import glob_to_regex, mask_url
from toolproof.replay._store import open_store

ROOT = Path(__file__).resolve().parents[2]

GLOB_TEXT = st.text(alphabet="ab-]^[*?\\_%.:\n", max_size=6)


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=GLOB_TEXT, pattern=GLOB_TEXT)
def test_a_glob_selects_the_same_names_on_both_engines(
    postgres_server: str, name: str, pattern: str
) -> None:
    import psycopg

    lite = sqlite3.connect(":memory:")
    expected = bool(lite.execute("SELECT ? GLOB ?", (name, pattern)).fetchone()[0])
    lite.close()
    with psycopg.connect(postgres_server) as conn:
        got = conn.execute("SELECT %s ~ %s", (name, glob_to_regex(pattern))).fetchone()
    assert got is not None and bool(got[0]) == expected, (name, pattern, glob_to_regex(pattern))


HOSTILE = st.text(max_size=12)  # NUL, control characters, quotes, %s, ?, emoji...


@settings(max_examples=15, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=HOSTILE, tag=HOSTILE, text=HOSTILE)
def test_hostile_text_round_trips_and_filters_on_both_engines(
    store_url: str, model: str, tag: str, text: str
) -> None:
    trace = replace(user_trace(1, tags=[tag]), model=model, input=text, output=text)
    with TraceStore(store_url) as store:
        store.delete_matching(TraceFilter())
        assert store.add(trace)
        assert store.get(trace.id) == trace  # the payload is kept exactly, NUL included
        if "\x00" not in model + tag:  # PostgreSQL text columns hold NUL as U+FFFD
            exact = not any(ch in model for ch in "*?[")  # else the filter is a glob
            assert store.count(TraceFilter(model=model if exact else None, tags=[tag])) == 1
        (row,) = store.rows(check=True)
        assert row.id == trace.id


def test_prune_and_aging_select_in_sql_on_both_engines(store_url: str) -> None:
    old = [replace(user_trace(n), started_at="2020-01-01T00:00:00Z") for n in range(30)]
    new = [user_trace(100 + n) for n in range(20)]
    with TraceStore(store_url) as store:
        store.add_many(old + new)
        assert store.count(TraceFilter(until="30d")) == 30
        assert store.delete_matching(TraceFilter(until="30d")) == 30
        assert store.count() == 20
        assert store.tools() == [("query_users", 20)]  # their tool rows went with them
        assert store.integrity_check() == "ok"


READER_WRITER = textwrap.dedent(
    """
    import sys
    from toolproof import Trace
    from toolproof.replay import TraceStore
    url, prefix = sys.argv[1], sys.argv[2]
    with TraceStore(url) as store:
        for batch in range(40):
            store.add_many([Trace(id=f"{prefix}-{batch}-{n}", input="q", model="m", tags=[prefix])
                            for n in range(25)])
    print("ok")
    """
)


def test_readers_read_whole_traces_while_processes_write(store_url: str) -> None:
    with TraceStore(store_url) as store:
        store.add_many([user_trace(n) for n in range(200)])
    writers = [
        processes.start(
            [sys.executable, "-c", READER_WRITER, store_url, f"w{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        )
        for n in range(3)
    ]
    seen: list[int] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            with TraceStore(store_url) as store:
                while any(w.poll() is None for w in writers):
                    traces = list(store.query())
                    assert all(isinstance(t, Trace) for t in traces)
                    seen.append(len(traces))
        except BaseException as exc:  # reported below
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        outputs = [w.communicate(timeout=120) for w in writers]
    finally:  # a failure or the test's timeout: the writers are stopped, and the reader ends
        for writer in writers:
            processes.stop(writer)
    reader.join(60)
    assert not errors, errors
    for writer, (out, err) in zip(writers, outputs, strict=True):
        assert writer.returncode == 0, err
        assert out.strip() == "ok"
    assert seen and min(seen) >= 200
    with TraceStore(store_url) as store:
        assert store.count() == 200 + 3 * 40 * 25
        assert store.integrity_check() == "ok"


def test_urls_never_show_their_password() -> None:
    url = "postgresql://ops:s3cr%21t@db.internal:5432/traces?sslmode=require"
    assert mask_url(url) == "postgresql://ops:***@db.internal:5432/traces?sslmode=require"
    assert mask_url("postgresql://ops@db/traces") == "postgresql://ops@db/traces"


@pytest.mark.timeout(120)
def test_an_unreachable_server_is_one_clear_error_without_the_password(
    postgres_server: str,
) -> None:
    url = "postgresql://ops:hunter2@127.0.0.1:1/traces"
    with pytest.raises(UserError) as info:
        TraceStore(url, timeout=5)
    message = str(info.value)
    assert message.startswith("cannot open trace store postgresql://ops:***@127.0.0.1:1/traces")
    assert "hunter2" not in message


def test_an_empty_database_is_not_created_by_readers(pg_url: str) -> None:
    with pytest.raises(UserError, match="no trace store in postgresql://"):
        open_store(pg_url)
    with pytest.raises(UserError, match="no trace store in"):
        TraceStore(pg_url, create=False)
    TraceStore(pg_url).close()
    with open_store(pg_url) as store:
        assert store.count() == 0


def test_unknown_url_schemes_say_what_is_supported(tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        TraceStore("mysql://u@h/db")
    assert str(info.value) == (
        "unsupported trace store URL mysql://...: use a file path, sqlite:///PATH or "
        "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
    )
    odd = f"{tmp_path}/a://b/t.db"  # a path holding "://" is still a path
    with TraceStore(odd) as store:
        assert store.location == str(tmp_path / "a:" / "b" / "t.db")
    with TraceStore(f"sqlite:///{tmp_path}/x.db") as store:
        assert store.location == f"{tmp_path}/x.db"
    assert (tmp_path / "x.db").exists()


def cli(*argv: str, cwd: Path, store: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests" / "replay")]),
    }
    env.pop("TOOLPROOF_STORE", None)
    if store:
        env["TOOLPROOF_STORE"] = store
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def test_the_cli_on_a_postgresql_url(pg_url: str, tmp_path: Path) -> None:
    traces = [user_trace(n, tags=["prod"]) for n in range(3)]
    old = replace(user_trace(9), started_at="2020-01-01T00:00:00Z")
    runs = tmp_path / "runs.jsonl"
    runs.write_text("".join(t.to_json() + "\n" for t in [*traces, old]))
    secret_url = pg_url.replace("toolproof@", "toolproof:pw-not-shown@", 1)

    done = cli("traces", "import", str(runs), "--store", secret_url, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("imported 4 of 4 traces into postgresql://toolproof:***@")
    assert "pw-not-shown" not in done.stdout + done.stderr

    listing = cli("traces", "list", "--tag", "prod", cwd=tmp_path, store=pg_url)  # env var
    assert listing.returncode == 0, listing.stderr
    assert sum("query_users" in line for line in listing.stdout.splitlines()) == 3

    shown = cli("traces", "show", traces[0].id[:8], "--json", cwd=tmp_path, store=pg_url)
    assert shown.returncode == 0, shown.stderr
    assert Trace.from_json(shown.stdout) == traces[0]

    replayed = cli(
        "replay", "--store", pg_url, "--tools", "replay_helpers:query_users", cwd=tmp_path
    )
    assert replayed.returncode == 0, replayed.stderr
    assert "4 samples" in replayed.stdout

    schema = tmp_path / "tools.json"
    snapshot = cli("schema", "snapshot", "replay_helpers", "-o", str(schema), cwd=tmp_path)
    assert snapshot.returncode == 0, snapshot.stderr
    diff = cli("schema", "diff", str(schema), str(schema), "--store", pg_url, cwd=tmp_path)
    assert diff.returncode == 0, diff.stderr
    assert "0 of 4 would be rejected" in diff.stdout

    pruned = cli("traces", "prune", "--older-than", "30d", cwd=tmp_path, store=pg_url)
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.strip() == "deleted 1 traces older than 30d"

    missing = cli("traces", "list", "--store", "postgresql://x:pw@127.0.0.1:1/db", cwd=tmp_path)
    assert missing.returncode == 2
    assert "Traceback" not in missing.stderr
    assert "pw@" not in missing.stderr
    assert missing.stderr.startswith(
        "toolproof: error: cannot open trace store postgresql://x:***@"
    )


def test_a_version_1_layout_is_migrated_and_backfilled_on_both_engines(store_url: str) -> None:
    from replay_helpers import run_trace

    from toolproof.replay._store import MIGRATIONS, SCHEMA_VERSION
    from toolproof.testing import call

    trace = run_trace([call("query_users", user_id=7), call("query_users", user_id=8), "Done."])
    with TraceStore(store_url) as store, store._transaction():  # rebuilt as version 1 wrote it
        store._exec("DROP TABLE traces")
        store._exec("DROP TABLE trace_tags")
        store._exec("DROP TABLE trace_tools")
        MIGRATIONS[0](store)
        store._exec("UPDATE schema_version SET version = 1")
        store._exec(
            "INSERT INTO traces (id, ts, started_at, model, status, payload) "
            "VALUES (?, ?, ?, ?, 'final', ?)",
            (trace.id, time.time(), trace.started_at, trace.model, trace.to_json().encode()),
        )
        store._exec("INSERT INTO traces (id, ts, payload) VALUES ('bad', 1, ?)", (b"garbage{",))
    with TraceStore(store_url) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert store._exec("SELECT version FROM schema_version").fetchall() == [(SCHEMA_VERSION,)]
        assert store.get(trace.id) == trace
        (row,) = store.rows(TraceFilter(tools=["query_users"]))
        assert (row.tool_calls, row.tools) == (2, {"query_users": 2})
        assert [t.id for t in store.query()] == [trace.id]
        assert store.skipped == ["bad"]


def test_a_recorder_never_shows_the_password_of_its_store(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from toolproof.replay import Recorder

    recorder = Recorder("postgresql://ops:hunter2@127.0.0.1:1/traces", retries=0)
    recorder.record(user_trace(1))
    with caplog.at_level(logging.WARNING, logger="toolproof.replay"):
        recorder.close(30)
    assert recorder.stats.dropped == 1
    assert recorder.stats.last_error is not None
    shown = [repr(recorder), recorder.stats.last_error, *(r.getMessage() for r in caplog.records)]
    assert any("postgresql://ops:***@127.0.0.1:1/traces" in text for text in shown)
    assert not any("hunter2" in text for text in shown), shown
