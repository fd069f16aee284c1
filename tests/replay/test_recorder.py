"""The recorder: every run recorded off the request path, drops counted, never blocking."""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import query_users, user_trace

from toolproof import Agent, tool
from toolproof.errors import ToolCrashed, UserError
from toolproof.replay import Recorder, Redactor, TraceFilter, TraceStore
from toolproof.testing import ScriptedModel, call


@tool
def flaky(x: int) -> int:
    """A tool with a bug.

    Args:
        x: A number.
    """
    raise RuntimeError("boom")


def test_agent_runs_are_recorded_including_crashed_and_cancelled(db_path: Path) -> None:
    recorder = Recorder(db_path, tags=["prod"])
    ok = Agent(
        ScriptedModel([call("query_users", user_id=5), "User 5 is user5."]),
        [query_users],
        recorder=recorder,
    )
    ok_trace = ok.run_sync("who is 5?").trace

    crashing = Agent(ScriptedModel([call("flaky", x=1), "never"]), [flaky], recorder=recorder)
    with pytest.raises(ToolCrashed) as info:
        crashing.run_sync("crash please")
    crashed = info.value.trace
    assert crashed is not None

    async def cancelled_run() -> str:
        started = asyncio.Event()

        async def slow(messages: Any, info: Any) -> str:
            started.set()
            await asyncio.sleep(30)
            return "late"

        from toolproof.testing import FunctionModel

        agent = Agent(FunctionModel(slow), [], recorder=recorder)
        task = asyncio.ensure_future(agent.run("wait"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return "cancelled"

    asyncio.run(cancelled_run())
    assert recorder.close()
    assert recorder.stats.written == 3

    with TraceStore(db_path) as store:
        stored_ok = store.get(ok_trace.id)
        stored_crash = store.get(crashed.id)
        (stored_cancel,) = store.query(TraceFilter(status="cancelled"))
    assert stored_ok.tags == ["prod"]
    assert stored_ok.output == "User 5 is user5."
    assert stored_ok.tools[0].schema_hash == query_users.schema_hash
    assert stored_ok.system_prompt_hash is None
    assert stored_crash.stop_reason == "error"
    assert stored_crash.error is not None and stored_crash.error.type == "RuntimeError"
    assert stored_crash.tool_calls[0].name == "flaky"  # the partial trace, up to the crash
    assert stored_cancel.input == "wait"


def test_sampling_keeps_a_fraction_and_every_error(db_path: Path) -> None:
    recorder = Recorder(db_path, sample_rate=0.25, seed=7)
    for _ in range(400):
        recorder.record(user_trace())
    failing = user_trace()
    failing.stop_reason = "error"
    never = Recorder(db_path, sample_rate=0.0)
    never.record(failing)
    never.record(user_trace())
    assert recorder.close() and never.close()
    stats = recorder.stats
    assert stats.received == 400
    assert stats.written + stats.sampled_out == 400
    assert 60 <= stats.written <= 140
    assert never.stats.written == 1 and never.stats.sampled_out == 1
    with TraceStore(db_path) as store:
        assert store.count() == stats.written + 1
        assert store.count(TraceFilter(status="error")) == 1


def test_a_store_that_is_down_drops_and_counts_but_runs_succeed(tmp_path: Path) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the store's folder should be")
    recorder = Recorder(blocked / "traces.db", retries=1)
    agent = Agent(
        ScriptedModel([call("query_users", user_id=1), "ok"] * 5), [query_users], recorder=recorder
    )
    outputs = [agent.run_sync("who?").output for _ in range(5)]
    assert outputs == ["ok"] * 5
    assert recorder.flush(10) is False  # settled, but nothing was written
    stats = recorder.stats
    assert stats.written == 0
    assert stats.dropped_failed == 5
    assert stats.dropped == 5
    assert stats.write_errors >= 2
    assert stats.last_error is not None and "blocked" in stats.last_error
    recorder.close()


def test_a_locked_store_fills_the_bounded_queue_without_blocking(db_path: Path) -> None:
    store = TraceStore(db_path, timeout=0.2)
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")  # another process holds the write lock
    recorder = Recorder(store, max_queue=10, batch_size=100, flush_interval=60, retries=0)
    traces = [user_trace(i) for i in range(30)]
    for trace in traces:
        recorder.record(trace)
    stats = recorder.stats
    assert stats.dropped_full == 20
    assert stats.pending == 10
    assert recorder.flush(0.1) is False  # still waiting on the lock
    locker.execute("ROLLBACK")
    locker.close()
    recorder.close()
    # the batch attempted under the lock failed (retries=0); nothing half-written
    assert recorder.stats.dropped_failed + recorder.stats.written == 10
    store.close()


def test_drop_oldest_keeps_the_newest_traces(db_path: Path) -> None:
    recorder = Recorder(db_path, max_queue=5, batch_size=100, flush_interval=60, drop="oldest")
    traces = [user_trace(i) for i in range(12)]
    for trace in traces:
        recorder.record(trace)
    assert recorder.stats.dropped_full == 7
    assert recorder.close() is False  # seven traces were dropped
    with TraceStore(db_path) as store:
        assert {t.id for t in store.query()} == {t.id for t in traces[-5:]}


def test_flush_close_and_recording_after_close(db_path: Path) -> None:
    written: list[str] = []
    recorder = Recorder(db_path, on_written=written.extend, flush_interval=30)
    first = user_trace()
    recorder.record(first)
    assert recorder.flush(5)  # flush does not wait for the interval
    assert written == [first.id]
    assert recorder.close()
    assert recorder.close()  # idempotent
    recorder.record(user_trace())
    assert recorder.stats.dropped_closed == 1
    assert recorder.stats.written == 1


def test_default_redaction_applies_before_writing(db_path: Path) -> None:
    with Recorder(db_path) as recorder:
        recorder.record(user_trace(metadata={"contact": "ann@corp.com", "api_key": "k-1"}))
    with TraceStore(db_path) as store:
        (trace,) = store.query()
    assert trace.metadata == {"contact": "***", "api_key": "***"}
    with Recorder(db_path, redactor=Redactor.none()) as raw:
        kept = user_trace(metadata={"contact": "ann@corp.com"})
        raw.record(kept)
    with TraceStore(db_path) as store:
        assert store.get(kept.id).metadata == {"contact": "ann@corp.com"}


def test_bad_options_are_refused() -> None:
    with pytest.raises(UserError) as info:
        Recorder(":memory:", sample_rate=2)
    assert str(info.value) == "Recorder(sample_rate=...) must be between 0 and 1, got 2"
    with pytest.raises(UserError) as info:
        Recorder(":memory:", drop="random")  # type: ignore[arg-type]
    assert str(info.value) == "Recorder(drop=...) must be 'newest' or 'oldest', got 'random'"


class SlowRedactor(Redactor):
    """Redaction that burns CPU (holding the interpreter) for a while on every trace."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def redact_data(self, data: dict[str, Any]) -> dict[str, Any]:
        end = time.perf_counter() + self.seconds
        while time.perf_counter() < end:
            sum(range(1000))
        return super().redact_data(data)


def test_record_returns_in_bounded_time_under_slow_redaction_and_a_full_queue(
    db_path: Path,
) -> None:
    recorder = Recorder(db_path, redactor=SlowRedactor(0.05), max_queue=20, batch_size=1)
    traces = [user_trace(i) for i in range(200)]
    latencies = []
    for trace in traces:
        begin = time.perf_counter()
        recorder.record(trace)
        latencies.append(time.perf_counter() - begin)
    stats = recorder.stats
    assert stats.dropped_full > 0  # the queue filled: traces dropped and counted...
    assert max(latencies) < 0.5  # ...while record() never waited for the writer
    assert recorder.flush(30) is False  # and flush says not everything was written
    assert recorder.flush(30) is True  # nothing new since: everything recorded was settled
    recorder.close()
    stats = recorder.stats
    assert stats.written + stats.dropped_full == 200


def test_flush_is_true_only_when_every_trace_was_written(db_path: Path) -> None:
    import threading

    entered, gate = threading.Event(), threading.Event()
    gate.set()

    class Gated(Redactor):
        """Holds the writer inside redaction while the gate is shut, so the queue fills."""

        def redact_data(self, data: Any) -> Any:
            entered.set()
            assert gate.wait(10)
            return super().redact_data(data)

    recorder = Recorder(db_path, redactor=Gated(), max_queue=2, batch_size=100, flush_interval=60)
    for i in range(2):
        recorder.record(user_trace(i))
    assert recorder.flush(10) is True
    gate.clear()
    entered.clear()
    recorder.record(user_trace(9))
    assert recorder.flush(0.01) is False  # wakes the writer: it takes the trace, waits at the gate
    assert entered.wait(10)
    for i in range(5):
        recorder.record(user_trace(10 + i))  # two fit the queue, three find it full
    gate.set()
    assert recorder.flush(10) is False
    assert recorder.stats.dropped_full == 3
    recorder.record(user_trace(99))
    assert recorder.close() is True
    assert recorder.stats.written == 6


def test_traces_unwritten_at_exit_are_counted_and_reported(tmp_path: Path) -> None:
    script = tmp_path / "exit.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys, time
            sys.path.insert(0, sys.argv[2])
            from replay_helpers import user_trace
            from toolproof.replay import Recorder, Redactor

            class Slow(Redactor):
                def redact_data(self, data):
                    time.sleep(0.4)
                    return super().redact_data(data)

            recorder = Recorder(sys.argv[1], redactor=Slow(), batch_size=1, exit_timeout=0.5)
            for i in range(6):
                recorder.record(user_trace(i))
            print("recorded", flush=True)
            """
        )
    )
    db = tmp_path / "traces.db"
    done = subprocess.run(
        [sys.executable, str(script), str(db), str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "recorded\n"
    found = re.search(r"(\d+) traces had not been written when the interpreter exited", done.stderr)
    assert found is not None, done.stderr
    lost = int(found.group(1))
    written = TraceStore(db).count() if db.exists() else 0
    assert lost >= 1
    assert written + lost == 6
