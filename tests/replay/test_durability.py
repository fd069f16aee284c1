"""Durability with real processes: SIGKILL mid-burst, concurrent writers (SQLite and PostgreSQL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import _processes as processes
from toolproof.replay import TraceFilter, TraceStore
from toolproof.replay._store import SCHEMA_VERSION

RECORDING_PROCESS = textwrap.dedent(
    """
    import sys
    from toolproof import Message, ToolCall, ToolResult, Trace
    from toolproof._trace import RequestSummary, Step
    from toolproof.replay import Recorder, Redactor

    path, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

    def acknowledge(ids):
        # called after each batch is committed: these traces are durable
        sys.stdout.write("".join(f"{trace_id}\\n" for trace_id in ids))
        sys.stdout.flush()

    recorder = Recorder(
        path, on_written=acknowledge, batch_size=25, flush_interval=0.01,
        redactor=Redactor.none(), max_queue=20_000,
    )
    call = ToolCall("query_users", {"user_id": 7}, "c1")
    result = ToolResult("c1", "query_users", "ok", '{"name": "x"}', {"name": "x"})
    step = Step(1, RequestSummary(2), Message.assistant(None, [call]), tool_results=[result])
    for n in range(count):
        recorder.record(Trace(id=f"{prefix}-{n}", input=f"question {n}", model="m",
                              steps=[step], output="ok", tags=[prefix]))
    assert recorder.close(60)
    stats = recorder.stats
    print(f"DONE written={stats.written} dropped={stats.dropped}", flush=True)
    """
)


_started: list[subprocess.Popen[str]] = []


def start(path: Path | str, prefix: str, count: int) -> subprocess.Popen[str]:
    process = processes.start(
        [sys.executable, "-c", RECORDING_PROCESS, str(path), prefix, str(count)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _started.append(process)
    return process


@pytest.fixture(autouse=True)
def _stop_recording_processes() -> Iterator[None]:
    """Each test's recording processes are stopped when it ends, however it ends."""
    yield
    while _started:
        processes.stop(_started.pop())


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
def test_sigkill_mid_burst_keeps_every_acknowledged_trace(store_url: str) -> None:
    db_path = store_url
    process = start(db_path, "burst", 10_000_000)  # far more than it can write before the kill
    acknowledged: list[str] = []
    assert process.stdout is not None
    while len(acknowledged) < 500:
        line = process.stdout.readline()
        assert line, process.stderr.read() if process.stderr else "the recorder died"
        acknowledged.append(line.strip())
    os.kill(process.pid, signal.SIGKILL)
    rest, _ = process.communicate(timeout=30)
    acknowledged += [line for line in rest.splitlines() if line.startswith("burst-")]
    assert process.returncode == -signal.SIGKILL

    with TraceStore(db_path) as store:
        assert store.integrity_check() == "ok"
        stored = {row.id for row in store.rows(TraceFilter(tags=["burst"]))}
        assert set(acknowledged) <= stored
        sample = store.get(acknowledged[-1])
    assert sample.tool_calls[0].arguments == {"user_id": 7}
    assert len(stored) >= len(acknowledged) >= 500


def test_four_processes_recording_at_once_lose_nothing(store_url: str) -> None:
    db_path = store_url
    TraceStore(db_path).close()  # the layout exists; the writers race on data, not on DDL
    processes = [start(db_path, f"p{n}", 400) for n in range(4)]
    outputs = [p.communicate(timeout=120) for p in processes]
    for process, (out, err) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, err
        assert out.splitlines()[-1] == "DONE written=400 dropped=0"
    with TraceStore(db_path) as store:
        assert store.integrity_check() == "ok"
        assert store.count() == 1600
        for n in range(4):
            ids = {row.id for row in store.rows(TraceFilter(tags=[f"p{n}"]))}
            assert ids == {f"p{n}-{i}" for i in range(400)}


def test_processes_creating_a_new_store_at_once_migrate_it_once(
    store_url: str, tmp_path: Path
) -> None:
    # a folder that does not exist yet, or an empty PostgreSQL schema
    path = store_url if "://" in store_url else str(tmp_path / "fresh" / "traces.db")
    processes = [start(path, f"q{n}", 50) for n in range(4)]
    for process in processes:
        out, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
        assert out.splitlines()[-1] == "DONE written=50 dropped=0"
    with TraceStore(path) as store:
        assert store.count() == 200
        assert store.schema_version == SCHEMA_VERSION


def test_a_recorder_never_closed_is_flushed_at_interpreter_exit(store_url: str) -> None:
    db_path = store_url
    script = textwrap.dedent(
        """
        import sys
        from toolproof import Trace
        from toolproof.replay import Recorder

        recorder = Recorder(sys.argv[1], flush_interval=3600, batch_size=10**6)
        for n in range(300):
            recorder.record(Trace(id=f"exit-{n}", input="q", model="m"))
        print(recorder.stats.written)  # nothing written yet: the writer waits an hour
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(db_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
    with TraceStore(db_path) as store:
        assert store.count() == 300
