"""How the recorder's writer hands the interpreter to the agent's threads.

Counted with fake clocks, not timed: the writer naps for real (a zero-length sleep lets
it take the interpreter straight back) after every slice of its work, short slices while
other threads of the process run, longer ones once none has for a while; it reads nothing
but portable clocks to tell. How late an agent's loop wakes while the writer works is
measured by ``bench/bench_replay.py --stall``, not here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from replay_helpers import user_trace

import toolproof.replay._recorder as recorder_module
from toolproof._trace import _adapter
from toolproof.replay import Recorder, TraceStore


class _Clocks:
    """A stand-in for the recorder module's ``time``: clocks that move when told to."""

    def __init__(self) -> None:
        self.wall = 100.0
        self.others = 0.0  # CPU time of the process's other threads
        self.naps: list[float] = []

    def perf_counter(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.wall

    def process_time(self) -> float:
        return self.others + 5.0

    def thread_time(self) -> float:
        return 5.0

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.wall += 60e-6  # what a 1 µs sleep takes on Linux (the timer slack)


@pytest.fixture
def clocks(monkeypatch: pytest.MonkeyPatch) -> _Clocks:
    fake = _Clocks()
    monkeypatch.setattr(recorder_module, "time", fake)
    return fake


@pytest.fixture
def recorder(tmp_path: Path, clocks: _Clocks) -> Iterator[Recorder]:
    """A started recorder whose writer reads the fake clocks; closed (nothing lost) after."""
    recorder = Recorder(tmp_path / "r.db", flush_interval=3600)
    assert recorder._started.wait(60)
    yield recorder
    assert recorder.close(60)


def _work(recorder: Recorder, clocks: _Clocks, seconds: float, *, others: float = 0.0) -> int:
    """The writer works ``seconds`` in steps of 10 µs, offering after each; returns naps."""
    before = len(clocks.naps)
    for _ in range(round(seconds / 10e-6)):
        clocks.wall += 10e-6
        clocks.others += others
        recorder._offer()
    return len(clocks.naps) - before


def test_naps_are_real_sleeps_after_every_slice_of_work(
    recorder: Recorder, clocks: _Clocks
) -> None:
    naps = _work(recorder, clocks, 0.1)  # 100 ms, no other thread running
    assert set(clocks.naps) == {recorder_module._NAP} and recorder_module._NAP > 0
    # one nap per long slice (1 ms of work) at least, none closer than a slice apart
    assert 0.1 / (recorder_module._SLICE_QUIET + 70e-6) <= naps <= 0.1 / 0.001 + 1


def test_slices_are_short_while_another_thread_runs(recorder: Recorder, clocks: _Clocks) -> None:
    quiet = _work(recorder, clocks, 0.05)
    busy = _work(recorder, clocks, 0.05, others=1e-6)  # another thread keeps running
    assert busy >= 0.05 / (recorder_module._SLICE + 70e-6) - 1
    assert busy >= 4 * quiet
    # after that thread stops, short slices last _QUIET_AFTER, then long ones again
    settling = _work(recorder, clocks, recorder_module._QUIET_AFTER)
    assert settling >= 0.8 * recorder_module._QUIET_AFTER / (recorder_module._SLICE + 70e-6)
    assert _work(recorder, clocks, 0.05) <= quiet + 1


def test_a_thread_that_ran_once_gets_short_slices_at_once(
    recorder: Recorder, clocks: _Clocks
) -> None:
    _work(recorder, clocks, 0.05)  # long slices
    clocks.others += 30e-6  # the agent's loop woke once and took the interpreter
    _work(recorder, clocks, recorder_module._SLICE_QUIET + 80e-6)  # the next nap sees it
    gaps = []
    last = clocks.wall
    for _ in range(400):  # 4 ms of work: every nap within one short slice of the last
        before = len(clocks.naps)
        clocks.wall += 10e-6
        recorder._offer()
        if len(clocks.naps) > before:
            gaps.append(clocks.wall - last)
            last = clocks.wall
    assert gaps and max(gaps) <= recorder_module._SLICE + 80e-6, gaps


class _Checkpoints:
    """A checkpoint thread's CPU reading: the fake clock's other threads, until it stops."""

    def __init__(self, clocks: _Clocks) -> None:
        self.clocks = clocks
        self.stopped_at: float | None = None

    def cpu_time(self) -> float:
        return self.clocks.others if self.stopped_at is None else self.stopped_at

    def close(self, timeout: float | None = None) -> None:
        pass


def test_the_writers_own_checkpoints_do_not_count_as_the_agent_running(
    tmp_path: Path, clocks: _Clocks
) -> None:
    recorder = Recorder(tmp_path / "r.db", flush_interval=3600)
    assert recorder._started.wait(60)
    real = recorder._checkpointer
    checkpoints = _Checkpoints(clocks)
    recorder._checkpointer = checkpoints  # type: ignore[assignment]
    try:
        quiet = _work(recorder, clocks, 0.05)
        # all the other CPU time is the checkpoint thread's: the slices stay long
        assert _work(recorder, clocks, 0.05, others=1e-6) <= quiet + 1
        checkpoints.stopped_at = clocks.others  # the checkpoints end; another thread runs
        assert (
            _work(recorder, clocks, 0.01, others=1e-6)
            >= 0.01 / (recorder_module._SLICE + 70e-6) - 1
        )
    finally:
        recorder._checkpointer = real
        assert recorder.close(60)


def test_a_checkpoint_thread_reports_the_cpu_time_it_used(tmp_path: Path) -> None:
    import sqlite3

    from toolproof.replay._checkpoint import Checkpointer

    path = tmp_path / "wal.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (v BLOB)")
    conn.executemany("INSERT INTO t VALUES (?)", [(b"x" * 4000,) for _ in range(3000)])
    checkpoints = Checkpointer(path, every=1)
    try:
        deadline = time.monotonic() + 30
        while checkpoints._clock is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if not hasattr(time, "pthread_getcpuclockid"):  # no thread clocks: nothing counted
            assert checkpoints.cpu_time() == 0.0
            return
        before = checkpoints.cpu_time()
        checkpoints.written(1)  # 12 MB of log to copy back
        while checkpoints.checkpoints == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert checkpoints.checkpoints == 1
        assert checkpoints.cpu_time() > before
    finally:
        checkpoints.close(30)
        conn.close()
    assert checkpoints.cpu_time() >= before  # the thread has ended: its last reading stands


def test_the_trace_encoder_is_built_when_the_recorder_is_made(tmp_path: Path) -> None:
    # Its set-up (~15 ms in one call) would otherwise hold the interpreter in the writer's
    # first batch, while the agent's threads wait.
    _adapter.cache_clear()
    recorder = Recorder(tmp_path / "r.db", flush_interval=3600)
    try:
        assert _adapter.cache_info().currsize == 1
    finally:
        assert recorder.close(60)


def test_every_trace_is_counted_once_while_a_busy_thread_competes(tmp_path: Path) -> None:
    # The writer naps more while another thread runs; nothing is lost or counted twice.
    stop = threading.Event()

    def spin() -> None:
        count = 0
        while not stop.is_set():
            count += 1

    spinner = threading.Thread(target=spin)
    spinner.start()
    base = user_trace(7, tags=["busy"])
    try:
        recorder = Recorder(tmp_path / "r.db", max_queue=300, batch_size=64, flush_interval=0.01)
        for n in range(1500):
            recorder.record(replace(base, id=f"busy-{n:05d}"))
        recorder.close(120)
    finally:
        stop.set()
        spinner.join()
    stats = recorder.stats
    assert stats.received == 1500
    assert stats.pending == 0
    assert stats.written + stats.dropped == 1500, stats
    assert stats.written >= 300  # the first queue-full of traces, at least
    with TraceStore(tmp_path / "r.db") as store:
        assert store.count() == stats.written


def test_the_store_is_opened_as_the_writer_starts(tmp_path: Path) -> None:
    # Opening it (file, layout) would otherwise hold the interpreter in the first write.
    opened: list[str] = []
    recorder = Recorder(tmp_path / "r.db", flush_interval=3600)
    assert recorder._started.wait(60)
    assert recorder._store is not None and (tmp_path / "r.db").exists()
    real_open = recorder._open_store

    def open_again() -> TraceStore:
        opened.append("again")
        return real_open()

    recorder._open_store = open_again  # type: ignore[method-assign]
    recorder.record(user_trace(1))
    assert recorder.flush(60)
    assert opened == [] and recorder.stats.written == 1
    assert recorder.close(60)


def test_a_store_that_cannot_be_opened_at_start_is_counted_at_the_first_write(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "a-folder"
    folder.mkdir()
    recorder = Recorder(folder, retries=0, flush_interval=0.01)
    assert recorder._started.wait(60)
    assert recorder.stats.write_errors == 0  # the attempt at start is no write
    base = user_trace(2)
    for n in range(3):
        recorder.record(replace(base, id=f"nowhere-{n}"))
    assert recorder.close(60) is False
    stats = recorder.stats
    assert (stats.received, stats.written, stats.dropped_failed, stats.pending) == (3, 0, 3, 0)
    assert stats.write_errors >= 1 and "is a directory" in (stats.last_error or "")
