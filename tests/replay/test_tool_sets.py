"""Each distinct tools array is stored once: every reader gives what the whole-JSON layout gave.

From layout version 3 a stored row holds its trace's JSON without the tools, and names its
tool set (``toolproof/replay/_tool_sets.py``). These tests store generated traces (hostile
tool schemas, keys named like the trace's own fields in free-form data, tools changed after
an encode) and compare every reader with the trace codec's own JSON and with a store of
the old layout, byte for byte and value for value; they migrate a version-2 store, replay
mixed stores, damage tool sets, and plant secrets in tools and data.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_helpers import query_users, run_trace, user_trace

from toolproof import Message, ToolCall, Trace
from toolproof._trace import ToolInfo
from toolproof.errors import TraceFormatError
from toolproof.replay import Recorder, Redactor, TraceFilter, TraceStore, replay
from toolproof.replay._migrations import MIGRATIONS, SCHEMA_VERSION
from toolproof.replay._redact_trace import redact_trace_object
from toolproof.replay._store_rows import row_from_trace
from toolproof.replay._tool_sets import digest_of, encode_parts, join
from toolproof.testing import call

NOW = 1_800_000_000.0

_keys = st.sampled_from(["tool_mode", "tools", "type", "properties", "x", "é", '"q', "a,b"])
_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
    | st.sampled_from([',"tool_mode":"real"', '"tools":[]', "\u0000", "✓"])
)
_json = st.recursive(
    _leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
_tool = st.builds(
    ToolInfo,
    name=st.sampled_from(["query_users", "get_status", "tool_mode", "x"]),
    description=st.text(max_size=20) | st.just("mail ann@corp.com, key sk-abcdefghijklmnop1234"),
    parameters=st.dictionaries(_keys, _json, max_size=3),
    schema_hash=st.sampled_from(["", "abc", "0123456789abcdef"]),
)
_tool_sets = st.lists(_tool, max_size=3)


@st.composite
def traces(draw: st.DrawFn) -> list[Trace]:
    """Traces of a few agents, some sharing a tools array, some with odd free-form data."""
    base = user_trace(123, tags=["t"])
    pool = draw(st.lists(_tool_sets, min_size=1, max_size=3))
    out = []
    for n in range(draw(st.integers(1, 6))):
        out.append(
            replace(
                base,
                id=f"trace-{n:02d}",
                started_at=f"2026-11-0{1 + n % 9}T10:00:00.000Z",
                tools=list(draw(st.sampled_from(pool))),
                settings=draw(st.dictionaries(_keys, _json, max_size=2)),
                metadata=draw(st.dictionaries(_keys, _json, max_size=2)),
                history=draw(st.sampled_from([[], _history(draw(_json))])),
            )
        )
    return out


def _history(arguments: Any) -> list[Message]:
    """Earlier turns whose call arguments hold keys named like the trace's own fields."""
    call_ = ToolCall("get_status", {"tool_mode": arguments, "tools": []}, id="c1")
    return [Message.user("before"), Message(role="assistant", tool_calls=[call_])]


def _old_layout(path: Path, rows: list[Trace]) -> None:
    """A store of the version-2 layout, rows as the earlier code wrote them (whole JSON)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    MIGRATIONS[0](conn)
    MIGRATIONS[1](conn)
    conn.execute("INSERT INTO schema_version VALUES (2)")
    for trace in rows:
        row = row_from_trace(trace)
        conn.execute(
            "INSERT INTO traces (id, ts, started_at, model, status, payload, format_version, "
            "input, tool_calls, duration_ms, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                row.id,
                row.ts,
                row.started_at,
                row.model,
                row.status,
                trace.to_json().encode(),  # the whole JSON, tools inline
                row.version,
                row.input,
                sum(row.tools.values()),
                row.duration_ms,
                row.ts,
            ),
        )
        conn.executemany(
            "INSERT INTO trace_tags (tag, trace_id) VALUES (?, ?)", [(t, row.id) for t in row.tags]
        )
        conn.executemany(
            "INSERT INTO trace_tools (tool, trace_id, calls) VALUES (?, ?, ?)",
            [(tool, row.id, n) for tool, n in row.tools.items()],
        )
    conn.close()


def _readings(store: TraceStore) -> dict[str, Any]:
    """What every reader of a store gives."""
    ids = [row.id for row in store.rows(newest_first=False)]
    return {
        "json": {trace_id: store.get_json(trace_id) for trace_id in ids},
        "get": {trace_id: store.get(trace_id) for trace_id in ids},
        "query": list(store.query(newest_first=False)),
        "with_time": list(store.query_with_time()),
        "payloads": [(ts, bytes(p), v) for ts, p, v in store.payloads(TraceFilter(tags=["t"]))],
        "rows": store.rows(check=True),
        "skipped": list(store.skipped),
    }


@pytest.mark.timeout(300)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(traces())
def test_every_reader_gives_the_old_layouts_json_and_traces(rows: list[Trace]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        old, new = Path(folder) / "old.db", Path(folder) / "new.db"
        _old_layout(old, rows)
        with TraceStore(new) as store:
            store.add_many(rows)
            fresh = _readings(store)
        with TraceStore(old) as store:  # migrated to version 3, its rows left as they were
            assert store.schema_version == SCHEMA_VERSION
            reference = _readings(store)
    assert fresh == reference
    for trace in rows:
        # byte for byte the codec's JSON of the whole trace, and the same values
        assert fresh["json"][trace.id] == trace.to_json()
        assert fresh["get"][trace.id] == Trace.from_json(trace.to_json())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_tool_sets, st.dictionaries(_keys, _json, max_size=2), st.data())
def test_the_cut_text_and_its_tool_set_join_into_the_codecs_json(
    tools: list[ToolInfo], data: dict[str, Any], draw: st.DataObject
) -> None:
    history = draw.draw(st.sampled_from([[], _history(data)]))
    trace = replace(user_trace(7), tools=tools, settings=data, history=history)
    for _ in range(2):  # the second encode takes the tools array from the cache
        payload, tools_json, digest = encode_parts(trace)
        if tools_json is None:  # no tools, or a "tool_mode" key in data before the member
            assert payload == trace._to_json_bytes()
            assert digest is None
            continue
        assert digest == digest_of(tools_json)
        assert join(payload, tools_json) == trace._to_json_bytes()
        assert Trace.from_json(join(payload, tools_json)) == Trace.from_json(trace.to_json())
    # a tools array changed after it was encoded is encoded again, never taken from the cache
    if trace.tools:
        info = trace.tools[0]
        for value in draw.draw(st.lists(st.sampled_from([1, 1.0, True, "1", [1], None]))):
            info.parameters["changed"] = value
            payload, tools_json, _ = encode_parts(trace)
            whole = payload if tools_json is None else join(payload, tools_json)
            assert whole == trace._to_json_bytes()
        info.description += " (changed)"
        payload, tools_json, _ = encode_parts(trace)
        assert (payload if tools_json is None else join(payload, tools_json)) == (
            trace._to_json_bytes()
        )


def test_rows_share_one_tool_set_and_a_store_shrinks(tmp_path: Path) -> None:
    traces = [replace(user_trace(100 + n), id=f"s-{n}") for n in range(20)]
    other = replace(traces[0], id="other", tools=[*traces[0].tools, ToolInfo("b", "", {}, "h")])
    with TraceStore(tmp_path / "t.db") as store:
        store.add_many([*traces, other])
        sets = store._exec("SELECT digest, payload FROM tool_sets").fetchall()
        named = store._exec("SELECT DISTINCT tool_set FROM traces").fetchall()
        stored = store._exec("SELECT SUM(LENGTH(payload)) FROM traces").fetchone()[0]
    assert len(sets) == 2
    assert {digest for digest, _ in sets} == {digest for (digest,) in named}
    assert all(digest == digest_of(payload) for digest, payload in sets)
    whole = sum(len(trace.to_json().encode()) for trace in [*traces, other])
    assert stored + sum(len(payload) for _, payload in sets) < whole * 0.9


def test_a_version_2_store_migrates_and_a_mixed_store_replays_as_its_old_copy(
    tmp_path: Path,
) -> None:
    old_rows = [replace(user_trace(100 + n % 3), id=f"old-{n}") for n in range(6)]
    new_rows = [
        user_trace(104),
        run_trace([call("query_users", user_id=900), "Done."], input="big id"),
        run_trace([call("query_users", user_id="x"), "Hm."], input="bad call"),
    ]
    new_rows = [replace(t, id=f"new-{n}") for n, t in enumerate(new_rows)]
    mixed, reference = tmp_path / "mixed.db", tmp_path / "reference.db"
    _old_layout(mixed, old_rows)
    _old_layout(reference, [*old_rows, *new_rows])
    with TraceStore(mixed) as store:
        assert store.schema_version == SCHEMA_VERSION == 3
        assert store.add_many(new_rows) == len(new_rows)
        layout = dict(store._exec("SELECT id, tool_set IS NOT NULL FROM traces").fetchall())
    # the rows written before keep their tools inline; the new ones name their tool set
    assert layout == {**{t.id: 0 for t in old_rows}, **{t.id: 1 for t in new_rows}}
    rules = {"tools": {"query_users": {"bounds": {"user_id": {"max": 500}}}}}

    def outcome(path: Path) -> Any:
        report = replay(path, tools=[query_users], rules=rules, now=NOW)
        samples = []
        for sample in report.samples:
            entry = sample.to_dict()
            del entry["duration_ms"]
            samples.append(entry)
        return samples, report.counts, report.summary().replace(str(path), "STORE")

    assert outcome(mixed) == outcome(reference)
    assert outcome(mixed)[1]["fail"] == 2
    with TraceStore(mixed) as a, TraceStore(reference) as b:
        assert _readings(a) == _readings(b)


@pytest.mark.parametrize(
    ("sql", "params", "says"),
    [
        ("DELETE FROM tool_sets", (), "is missing from the store"),
        ("UPDATE tool_sets SET payload = ?", (b"[]",), "is damaged"),
        ("UPDATE tool_sets SET payload = ?", (b"not json",), "is damaged"),
        ("UPDATE tool_sets SET payload = 42", (), "is damaged"),
        ("UPDATE traces SET payload = ?", (b'{"id":"x"}',), "has no tool_mode member"),
        ("UPDATE traces SET payload = ?", (b"[1, 2]",), "has no tool_mode member"),
        (
            "UPDATE traces SET payload = ?",
            (b'{"id":"x","tool_mode":"real","steps":[{"tool_mode":1}]}',),
            "not a toolproof trace",
        ),
    ],
)
def test_a_damaged_tool_set_is_skipped_with_a_clear_message(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, sql: str, params: Any, says: str
) -> None:
    path = tmp_path / "t.db"
    good = user_trace(5)
    with TraceStore(path) as store:
        store.add(good)
        store._exec("UPDATE traces SET id = 'broken'")
        store.add(good)  # a sound row beside it (its tool set is written again, kept once)
        where = " WHERE id = 'broken'" if sql.startswith("UPDATE traces") else ""
        store._exec(sql + where, params)
    caplog.set_level(logging.WARNING, "toolproof.replay")
    with TraceStore(path) as store:
        if "tool_sets" in sql:  # the sound row has lost its tool set too
            expected: list[str] = []
        else:
            expected = [good.id]
        with pytest.raises(TraceFormatError) as info:
            store.get("broken")
        assert str(info.value).startswith("stored trace broken cannot be decoded: ")
        assert says in str(info.value)
        assert [t.id for t in store.query()] == expected
        assert [row.id for row in store.rows(check=True)] == expected
        assert "broken" in store.skipped
    report = replay(path, tools=[query_users])
    assert [s.trace_id for s in report.samples] == expected
    assert any("stored trace broken cannot be decoded" in r.getMessage() for r in caplog.records)


def test_both_engines_store_each_tools_array_once_and_read_back_the_same(
    store_url: str,
) -> None:
    traces = [replace(user_trace(100 + n), id=f"e-{n}") for n in range(5)]
    plain = replace(traces[0], id="no-tools", tools=[])
    with TraceStore(store_url) as store:
        assert store.add_many([*traces, plain]) == 6
        assert store.add_many(traces[:2], replace=True) == 2
        assert store._exec("SELECT COUNT(*) FROM tool_sets").fetchone()[0] == 1
        for trace in [*traces, plain]:
            assert store.get_json(trace.id) == trace.to_json()
            assert store.get(trace.id) == trace
        assert sorted(bytes(p) for _, p, _ in store.payloads()) == sorted(
            t.to_json().encode() for t in [*traces, plain]
        )
        assert store.delete(["e-0"]) == 1
        assert store.delete_matching(TraceFilter(ids=["e-1"])) == 1
        # tool sets are kept when their traces go (tool definitions are code, not data of
        # a run; the next trace of the agent names the same set)
        assert store._exec("SELECT COUNT(*) FROM tool_sets").fetchone()[0] == 1
        report = replay(store, tools=[query_users], now=NOW)
        assert report.counts["pass"] == 4, report.summary()


def test_the_integrity_check_names_traces_whose_tool_set_is_gone(store_url: str) -> None:
    traces = [replace(user_trace(200 + n), id=f"i-{n}") for n in range(3)]
    with TraceStore(store_url) as store:
        store.add_many(traces)
        assert store.integrity_check() == "ok"
        store._exec("DELETE FROM tool_sets")
        assert store.integrity_check() == "3 traces name a tool set that is not stored"
        store.add(replace(traces[0], id="i-new"))  # writes the tool set again
        assert store.integrity_check() == "ok"


def test_tools_are_stored_exactly_as_redacting_them_inline_gives(tmp_path: Path) -> None:
    secret_tool = ToolInfo(
        "query_users",
        "Look up a user. Ops contact ann@corp.com, key sk-live-abcdefghijklmnopqrstuv",
        {
            "type": "object",
            "properties": {"user_id": {"type": "integer"}, "password": {"default": "hunter2"}},
            "x-owner": "phone +1 415 555 0100",
        },
        query_users.schema_hash,
    )
    traces = [
        replace(
            user_trace(100 + n, metadata={"api_key": "sk-abcdefghijklmnopqrstuvwx", "n": n}),
            id=f"r-{n}",
            tools=[secret_tool],
            input=f"Mail bob{n}@corp.com about user {100 + n}",
        )
        for n in range(6)
    ]
    with Recorder(tmp_path / "r.db", redactor=Redactor(), batch_size=3) as recorder:
        for trace in traces:
            recorder.record(trace)
    assert recorder.stats.written == len(traces)
    with TraceStore(tmp_path / "r.db") as store:
        assert store._exec("SELECT COUNT(*) FROM tool_sets").fetchone()[0] == 1
        for trace in traces:
            stored = store.get_json(trace.id)
            # the full path: the trace redacted inline, then written whole by the codec
            assert stored == redact_trace_object(Redactor(), trace).to_json()
            plain = Redactor().redact_data(trace.to_dict())
            assert json.loads(stored) == json.loads(json.dumps(plain))
            assert "bob" not in stored and "sk-abcdefghijklmnopqrstuvwx" not in stored


def test_export_and_import_give_the_old_layouts_file_and_traces(tmp_path: Path) -> None:
    from toolproof.cli import main

    traces = [replace(user_trace(100 + n), id=f"x-{n}") for n in range(4)]
    traces.append(replace(traces[0], id="x-plain", tools=[]))
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    _old_layout(old, traces)
    with TraceStore(new) as store:
        store.add_many(traces)
    files = []
    for path in (old, new):
        out = tmp_path / f"{path.stem}.jsonl"
        assert main(["traces", "export", "--store", str(path), "-o", str(out)]) == 0
        files.append(out.read_bytes())
    assert files[0] == files[1]  # byte for byte what the whole-JSON layout exported
    again = tmp_path / "again.db"
    assert main(["traces", "import", str(tmp_path / "new.jsonl"), "--store", str(again)]) == 0
    with TraceStore(again) as store:
        for trace in traces:
            assert store.get_json(trace.id) == trace.to_json()
