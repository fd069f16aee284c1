"""Stored rows that cannot be decoded never break a reader: skipped with a warning naming the
id by every reader (Python API and CLI), and ``traces show BADID`` says why, exit 2. The rows
are planted in a SQLite file and in a PostgreSQL schema."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from replay_helpers import user_trace

from toolproof import Trace
from toolproof.errors import TraceFormatError
from toolproof.replay import TraceFilter, TraceStore, count_schema_rejections, replay
from toolproof.replay._store import row_from_dict

ROOT = Path(__file__).resolve().parents[2]

#: id -> (payload, format_version column): every way a row can be unreadable.
BAD_ROWS: dict[str, tuple[object, int]] = {
    "bad-garbage": (b"garbage{", 1),
    "bad-newer": (b'{"version": 7, "id": "bad-newer", "input": "x"}', 1),
    "bad-fields": (b'{"version": 1, "id": "bad-fields", "input": "x", "steps": [{"a": 1}]}', 1),
    "bad-negative": (
        b'{"version": 1, "id": "bad-negative", "input": "x", "usage": {"input_tokens": -3}}',
        1,
    ),
    "bad-column": (Trace(id="bad-column", input="x").to_json().encode(), 3),
    "bad-deep": (b'{"version": 1, "id": "bad-deep", "input": "", "metadata": ' + b"[" * 400, 1),
    "bad-utf8": (b'{"version": 1, "id": "\xff", "input": ""}', 1),
    "bad-number": (b"12", 1),
}


def plant(traces: TraceStore) -> None:
    """Write the unreadable rows with plain SQL, as a damaged or foreign store has them."""
    with traces._transaction():
        for n, (trace_id, (payload, version)) in enumerate(BAD_ROWS.items()):
            traces._exec(
                "INSERT INTO traces (id, ts, model, status, payload, format_version, tool_calls) "
                "VALUES (?, ?, 'scripted', 'final', ?, ?, 1)",
                (trace_id, 2_000_000_000 + n, payload, version),
            )
            traces._exec("INSERT INTO trace_tools VALUES ('query_users', ?, 1)", (trace_id,))


@pytest.fixture
def store(store_url: str) -> str:
    """Two good traces and every kind of bad row, in a SQLite file or a PostgreSQL schema."""
    with TraceStore(store_url) as traces:
        traces.add_many([user_trace(1, tags=["prod"]), user_trace(2, tags=["prod"])])
        plant(traces)
    return store_url


def skipped_ids(caplog: pytest.LogCaptureFixture) -> set[str]:
    found = set()
    for record in caplog.records:
        if record.name == "toolproof.replay" and record.levelno == logging.WARNING:
            message = record.getMessage()
            found |= {trace_id for trace_id in BAD_ROWS if f"trace {trace_id} " in message}
    return found


def test_python_readers_skip_bad_rows_with_a_warning(
    store: str, caplog: pytest.LogCaptureFixture
) -> None:
    with TraceStore(store) as traces:
        assert len(traces) == 2 + len(BAD_ROWS)
        caplog.clear()
        assert len(list(traces.query())) == 2
        assert skipped_ids(caplog) == set(BAD_ROWS)
        assert sorted(traces.skipped) == sorted(BAD_ROWS)
        caplog.clear()
        assert len(list(traces.query_with_time(TraceFilter(tools=["query_users"])))) == 2
        assert len(list(traces.payloads())) == 2
        assert {row.id for row in traces.rows(check=True)} == {t.id for t in traces.query()}
        assert skipped_ids(caplog) == set(BAD_ROWS)
        # without check, listing columns only: prune can still find and delete them
        assert len(traces.rows()) == 2 + len(BAD_ROWS)


def test_get_of_a_bad_row_says_why(store: str) -> None:
    with TraceStore(store) as traces:
        with pytest.raises(TraceFormatError, match="stored trace bad-garbage cannot be decoded"):
            traces.get("bad-garbage")
        with pytest.raises(TraceFormatError, match="version 7 is newer") as info:
            traces.get_json("bad-newer")
        assert info.value.trace_id == "bad-newer"
        with pytest.raises(TraceFormatError, match="format_version column"):
            traces.get("bad-column")


def test_replay_and_schema_check_skip_bad_rows(
    store: str, caplog: pytest.LogCaptureFixture
) -> None:
    from replay_helpers import query_users

    report = replay(str(store), tools=[query_users])
    assert len(report.samples) == 2
    assert skipped_ids(caplog) == set(BAD_ROWS)
    caplog.clear()
    (entry,) = count_schema_rejections(store, {"query_users": {"type": "object"}})
    assert (entry.checked, entry.rejected) == (2, 0)
    assert skipped_ids(caplog) == set(BAD_ROWS)


def test_payloads_that_would_not_read_back_are_refused_before_writing(db_path: Path) -> None:
    data = user_trace(1).to_dict()
    data["steps"][0]["usage"]["input_tokens"] = -1
    with pytest.raises(TraceFormatError, match="cannot be stored: it would not read back"):
        row_from_dict(data, json.dumps(data).encode())
    data = user_trace(1).to_dict()
    with pytest.raises(TraceFormatError, match="its JSON holds the id 'other'"):
        row_from_dict(data, json.dumps({**data, "id": "other"}).encode())


def test_a_store_migrated_from_version_1_keeps_bad_rows_and_skips_them(db_path: Path) -> None:
    from toolproof.replay._store import MIGRATIONS

    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    conn.execute("INSERT INTO schema_version VALUES (1)")
    MIGRATIONS[0](conn)
    good = user_trace(1)
    conn.execute("INSERT INTO traces (id, ts, payload) VALUES (?, 1, ?)", (good.id, good.to_json()))
    conn.execute("INSERT INTO traces (id, ts, payload) VALUES ('bad', 2, 'garbage{')")
    conn.close()
    with TraceStore(db_path) as traces:
        assert [t.id for t in traces.query()] == [good.id]
        assert traces.skipped == ["bad"]


# -- the CLI, as a user runs it -------------------------------------------------------------


def cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests" / "replay")]),
    }
    env.pop("TOOLPROOF_STORE", None)
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )


def assert_warned_once_each(stderr: str) -> None:
    assert "Traceback" not in stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    for trace_id in BAD_ROWS:
        assert sum(f"stored trace {trace_id} cannot be decoded" in line for line in lines) == 1, (
            trace_id,
            stderr,
        )


def test_cli_readers_skip_bad_rows_and_show_says_why(store: str, tmp_path: Path) -> None:
    listing = cli("traces", "list", "--store", str(store), cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert_warned_once_each(listing.stderr)
    assert len([line for line in listing.stdout.splitlines() if "query_users" in line]) == 2
    assert "bad-" not in listing.stdout

    export = cli("traces", "export", "--store", str(store), cwd=tmp_path)
    assert export.returncode == 0, export.stderr
    assert_warned_once_each(export.stderr)
    # Both good rows, whatever order equal timestamps give them.
    assert sorted(Trace.from_json(line).input for line in export.stdout.splitlines()) == [
        "Who is user 1?",
        "Who is user 2?",
    ]

    for trace_id, extra in (("bad-garbage", ()), ("bad-fields", ("--json",))):
        shown = cli("traces", "show", trace_id, "--store", str(store), *extra, cwd=tmp_path)
        assert shown.returncode == 2, shown
        assert "Traceback" not in shown.stderr
        (line,) = shown.stderr.splitlines()
        assert line.startswith(f"toolproof: error: stored trace {trace_id} cannot be decoded: ")


def test_cli_show_of_every_kind_of_bad_row(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    from toolproof.cli import main

    for trace_id in BAD_ROWS:
        for extra in ((), ("--json",)):
            assert main(["traces", "show", trace_id, "--store", str(store), *extra]) == 2
            captured = capsys.readouterr()
            (line,) = captured.err.splitlines()
            assert line.startswith(f"toolproof: error: stored trace {trace_id} cannot be decoded: ")
            assert captured.out == ""


def test_cli_replay_and_schema_diff_skip_bad_rows(store: str, tmp_path: Path) -> None:
    done = cli(
        "replay", "--store", str(store), "--tools", "replay_helpers:query_users", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "2 samples" in done.stdout
    assert_warned_once_each(done.stderr)

    schema = tmp_path / "tools.json"
    snapshot = cli("schema", "snapshot", "replay_helpers", "-o", str(schema), cwd=tmp_path)
    assert snapshot.returncode == 0, snapshot.stderr
    diff = cli("schema", "diff", str(schema), str(schema), "--store", str(store), cwd=tmp_path)
    assert "Traceback" not in diff.stderr
    assert diff.returncode == 0, diff.stderr
    assert "0 of 2 would be rejected" in diff.stdout
    assert_warned_once_each(diff.stderr)
