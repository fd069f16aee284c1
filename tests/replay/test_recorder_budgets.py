"""Work budgets of the recorder's writer: SQL statements per batch, and offers of the interpreter.

Counted, not timed. A batch is one transaction whose statements each run once for all the
batch's rows (no statement per trace beyond one row each); the writer lets the agent's
threads in between traces and between chunks of the store's long statements.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from replay_helpers import user_trace

import toolproof.replay._recorder as recorder_module
import toolproof.replay._store as store_module
from toolproof import Trace
from toolproof.replay import Recorder, TraceStore

TRACES = 40


def _traces(count: int = TRACES) -> list[Trace]:
    base = user_trace(123, tags=["budget", "prod"])
    return [replace(base, id=f"budget-{n:04d}") for n in range(count)]


def _kind(sql: str) -> str:
    words = sql.split()
    if words[0] == "INSERT":
        return "INSERT " + words[words.index("INTO") + 1]
    return " ".join(words[:2]) if words[0] == "BEGIN" else words[0]


def test_one_transaction_and_one_row_per_stored_row_per_batch(tmp_path: Path) -> None:
    traces = _traces()
    store = TraceStore(tmp_path / "t.db")
    statements: Counter[str] = Counter()
    store._conn.set_trace_callback(lambda sql: statements.update([_kind(sql)]))
    with Recorder(store, batch_size=TRACES, flush_interval=3600) as recorder:
        for trace in traces:
            recorder.record(trace)
        assert recorder.flush(60)
    store._conn.set_trace_callback(None)
    assert recorder.stats.written == TRACES
    tools = sum(len({call.name for call in trace.tool_calls}) for trace in traces)
    assert statements == Counter(
        {
            "BEGIN IMMEDIATE": 1,
            "SELECT": 1,  # the ids already stored, for the whole batch
            "INSERT tool_sets": 1,  # the batch's one distinct tools array
            "INSERT traces": TRACES,
            "INSERT trace_tags": 2 * TRACES,
            "INSERT trace_tools": tools,
            "COMMIT": 1,
        }
    ), statements
    store.close()


def test_the_writer_hands_the_interpreter_over_between_traces_and_statement_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Each handoff is a real nap: a zero-length sleep lets the writer take the interpreter
    # back before a waiting thread can, so it is never used.
    naps: list[float] = []
    real_sleep = recorder_module.time.sleep

    class _Time:
        perf_counter = staticmethod(recorder_module.time.perf_counter)
        monotonic = staticmethod(recorder_module.time.monotonic)
        process_time = staticmethod(recorder_module.time.process_time)
        thread_time = staticmethod(recorder_module.time.thread_time)

        @staticmethod
        def sleep(seconds: float) -> None:
            if threading.current_thread().name == "toolproof-recorder" and seconds < 0.01:
                naps.append(seconds)
            real_sleep(seconds)

    monkeypatch.setattr(recorder_module, "_SLICE", 0.0)  # hand over at every chance
    monkeypatch.setattr(recorder_module, "_SLICE_QUIET", 0.0)
    monkeypatch.setattr(recorder_module, "time", _Time)
    traces = _traces(100)
    recorder = Recorder(tmp_path / "r.db", batch_size=100, flush_interval=3600)
    recorder.record(traces[0])  # opens the store
    assert recorder.flush(60)
    naps.clear()
    for trace in traces[1:]:
        recorder.record(trace)
    assert recorder.flush(60)
    assert recorder.close(60)
    assert recorder.stats.written == 100
    chunk = store_module._PAUSE_ROWS
    rows = 99 + 2 * 99 + 99  # trace, tag and tool rows of the 99 traces of the batch
    chunks = -(-99 // chunk) + -(-2 * 99 // chunk) + -(-99 // chunk)
    builds = -(-99 // (2 * chunk))  # the statements' parameters, built in parts
    assert rows > 3 * chunk and builds > 1
    # after each trace's redaction walk and after its encoding, before the store's write,
    # after each part of its parameters and after each chunk of its rows
    assert len(naps) == 2 * 99 + 1 + builds + chunks
    assert set(naps) == {recorder_module._NAP} and recorder_module._NAP > 0


def test_a_store_handed_to_the_recorder_runs_its_statements_whole(tmp_path: Path) -> None:
    # another thread may use it: the recorder pauses only the store it opened itself
    store = TraceStore(tmp_path / "t.db")
    with Recorder(store, batch_size=TRACES) as recorder:
        for trace in _traces():
            recorder.record(trace)
    assert store._pause is None
    assert len(store) == TRACES
    store.close()
    own = Recorder(tmp_path / "own.db")
    own.record(_traces(1)[0])
    assert own.flush(60)
    assert own._store is not None and own._store._pause is not None
    assert own.close(60)


def test_chunked_statements_store_every_row(tmp_path: Path) -> None:
    traces = _traces(3 * store_module._PAUSE_ROWS + 5)
    pauses: list[int] = []
    with TraceStore(tmp_path / "t.db") as store:
        store._pause = lambda: pauses.append(1)
        assert store.add_many(traces) == len(traces)
        assert store.add_many(traces) == 0  # the same ids again: nothing new
        assert sorted(trace.id for trace in store.query()) == [trace.id for trace in traces]
        assert store.tools() == [("query_users", len(traces))]
    assert pauses
    conn = sqlite3.connect(tmp_path / "t.db")
    assert conn.execute("SELECT COUNT(*) FROM trace_tags").fetchone() == (2 * len(traces),)
    conn.close()
