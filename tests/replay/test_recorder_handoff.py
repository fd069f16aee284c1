"""How the recorder's writer hands the interpreter to the agent's threads.

Counted with fake clocks, not timed: the writer naps for real (a zero-length sleep lets
it take the interpreter straight back, CPython 3.11's GIL) after every slice of its work,
short slices while other threads of the process run, longer ones once none has for a
while. How late an agent's loop wakes while the writer works is measured by
``bench/bench_replay.py --stall``, not here.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
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
    import time

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


class _Ready:
    """A stand-in for the writer's reading of the scheduler: "ready" a set number of times."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.asked: list[list[int]] = []

    def any_ready(self, threads: list[int]) -> bool:
        self.asked.append(list(threads))
        if self.times > 0:
            self.times -= 1
            return True
        return False

    def any_waiting(self, threads: list[int]) -> bool:
        return False

    def close(self) -> None:
        pass


def _recorded_from(recorder: Recorder, native_ids: list[int]) -> None:
    """As if each of ``native_ids`` called ``record`` (the last one most recently)."""
    for native_id in native_ids:
        recorder._note_caller(native_id)


def test_the_writer_naps_again_while_a_recording_thread_is_still_waking(
    recorder: Recorder, clocks: _Clocks
) -> None:
    _recorded_from(recorder, [4242])
    recorder._ready = _Ready(times=1)  # type: ignore[assignment]
    recorder._nap()
    assert len(clocks.naps) == 2  # the nap, and one more while 4242 was still waking
    # never more than _RENAPS more, however long a thread stays ready
    clocks.naps.clear()
    recorder._ready = ready = _Ready(times=100)  # type: ignore[assignment]
    recorder._nap()
    assert len(clocks.naps) == 1 + recorder_module._RENAPS
    assert ready.asked == [[4242]] * recorder_module._RENAPS


def test_no_second_nap_once_another_thread_ran_or_none_is_waking(
    recorder: Recorder, clocks: _Clocks
) -> None:
    recorder._ready = ready = _Ready(times=100)  # type: ignore[assignment]
    recorder._nap()  # no thread has recorded: none is asked about
    assert len(clocks.naps) == 1 and ready.asked == []
    _recorded_from(recorder, [4242])
    real_sleep = clocks.sleep

    def handed_over(seconds: float) -> None:
        real_sleep(seconds)
        clocks.others += 30e-6  # a thread took the interpreter during the nap

    clocks.sleep = handed_over  # type: ignore[method-assign]
    clocks.naps.clear()
    recorder._nap()
    assert len(clocks.naps) == 1 and ready.asked == []
    clocks.sleep = real_sleep  # type: ignore[method-assign]
    recorder._ready = ready = _Ready(times=0)  # type: ignore[assignment]
    clocks.naps.clear()
    recorder._nap()
    assert len(clocks.naps) == 1 and ready.asked == [[4242]]


def test_the_threads_asked_about_are_the_last_few_that_recorded(
    recorder: Recorder, clocks: _Clocks
) -> None:
    _recorded_from(recorder, list(range(1, 21)))
    _recorded_from(recorder, [5])  # recorded again: first, and listed once
    recorder._ready = ready = _Ready(times=0)  # type: ignore[assignment]
    recorder._nap()
    expected = [5, 20, 19, 18, 17, 16, 15, 14][: recorder_module._CALLERS]
    assert ready.asked == [expected]
    # the thread that naps is never waited for (here the test's own thread records)
    recorder.record(user_trace(3))
    recorder._ready = ready = _Ready(times=0)  # type: ignore[assignment]
    clocks.naps.clear()
    recorder._nap()
    assert ready.asked == [expected[: recorder_module._CALLERS - 1]]
    assert recorder._callers[0] == threading.get_native_id()


class _Waiting(_Ready):
    """A stand-in whose recording threads wait for the interpreter lock when told to."""

    def __init__(self) -> None:
        super().__init__(times=0)
        self.waiting = False
        self.looks: list[list[int]] = []

    def any_waiting(self, threads: list[int]) -> bool:
        self.looks.append(list(threads))
        return self.waiting


def _watching(recorder: Recorder, ready: _Ready) -> None:
    assert recorder._started.wait(60)
    recorder._ready = ready  # type: ignore[assignment]
    recorder._watching = True


def test_a_recording_thread_waiting_for_the_lock_gets_it_at_once(
    recorder: Recorder, clocks: _Clocks
) -> None:
    ready = _Waiting()
    _watching(recorder, ready)
    assert _work(recorder, clocks, 0.01) <= 0.01 / recorder_module._SLICE_QUIET + 1
    _recorded_from(recorder, [4242])
    _work(recorder, clocks, 0.01)
    ready.waiting = True  # its model answered: it waits for the writer to let go
    clocks.naps.clear()
    clocks.wall += recorder_module._LOOK_QUIET
    recorder._offer()
    assert len(clocks.naps) == 1  # at once, long before the end of the slice
    assert ready.looks[-1] == [4242]


def test_the_writer_looks_at_most_every_so_often_and_never_at_itself(
    recorder: Recorder, clocks: _Clocks
) -> None:
    ready = _Waiting()
    _watching(recorder, ready)
    _work(recorder, clocks, 0.01)
    assert ready.looks == []  # no thread has recorded: nobody to look at
    _recorded_from(recorder, [4242, 77])
    _work(recorder, clocks, 0.01)  # quiet: other threads' CPU time did not grow
    quiet = len(ready.looks)
    assert quiet >= 0.01 / (recorder_module._LOOK_QUIET + 10e-6) - 1
    assert quiet <= 0.01 / recorder_module._LOOK_QUIET + 1
    ready.looks.clear()
    _work(recorder, clocks, 0.01, others=1e-6)  # another thread runs: closer looks
    busy = len(ready.looks)
    assert busy >= 0.8 * 0.01 / (recorder_module._LOOK + 10e-6)
    assert busy <= 0.01 / recorder_module._LOOK + 1
    assert all(look == [77, 4242] for look in ready.looks)
    _recorded_from(recorder, [threading.get_native_id()])  # (as if the writer recorded)
    ready.looks.clear()
    real = recorder_module._native_id
    recorder_module._native_id = threading.get_native_id  # the offer runs here
    try:
        _work(recorder, clocks, 0.001)
    finally:
        recorder_module._native_id = real
    assert ready.looks and all(threading.get_native_id() not in look for look in ready.looks)


def test_a_look_that_fails_stops_the_looking_and_loses_no_trace(tmp_path: Path) -> None:
    class Broken(_Ready):
        def any_waiting(self, threads: list[int]) -> bool:
            raise OSError("the kernel said no")

    recorder = Recorder(tmp_path / "r.db", batch_size=8, flush_interval=0.01)
    _watching(recorder, Broken(times=0))
    base = user_trace(4)
    for n in range(50):
        recorder.record(replace(base, id=f"broken-look-{n:03d}"))
    assert recorder.flush(60)
    assert recorder._watching is False
    assert recorder.stats.written == 50 and recorder.stats.write_errors == 0
    assert recorder.close(60)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"),
    reason="reads Linux /proc on a machine whose futex call is known",
)
def test_the_real_writer_sees_a_recording_thread_wait_for_the_lock(tmp_path: Path) -> None:
    # No stand-ins: a thread records a large batch, then wakes every millisecond (as an
    # agent's loop does) while the writer redacts and stores it; the writer's looks find
    # it waiting for the interpreter and hand it over.
    recorder = Recorder(tmp_path / "r.db", max_queue=5000, batch_size=500, flush_interval=0.01)
    assert recorder._started.wait(60)
    assert recorder._watching  # (found the lock's address as it started)
    ready = recorder._ready
    seen: list[bool] = []
    real_look = ready.any_waiting

    def counted(threads: Iterable[int]) -> bool:
        found = real_look(threads)
        seen.append(found)
        return found

    ready.any_waiting = counted  # type: ignore[method-assign]
    base = user_trace(5, tags=["waits"])
    for n in range(3000):
        recorder.record(replace(base, id=f"waits-{n:05d}"))
    deadline = time.monotonic() + 120
    while recorder.stats.pending and time.monotonic() < deadline:
        time.sleep(0.001)
    assert recorder.close(60)
    assert recorder.stats.written == 3000
    assert seen and any(seen), f"{len(seen)} looks, none found the thread waiting"
