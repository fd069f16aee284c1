"""Reading whether a thread is runnable, against the real scheduler (Linux ``/proc``).

The recorder's writer asks this after a nap in which no other thread ran: a recording
thread still "runnable" is on its way to the interpreter, and the writer naps again.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
import time
from pathlib import Path

import pytest

from toolproof.replay._ready import _KEPT, ReadyThreads

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux /proc")


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _seen_ready(ready: ReadyThreads, native_id: int, seconds: float) -> int:
    """How many of the readings in ``seconds`` found the thread runnable."""
    hits = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        hits += ready.any_ready([native_id])
        time.sleep(0.001)
    return hits


@linux
def test_a_thread_working_without_the_interpreter_reads_as_ready() -> None:
    # hashlib releases the GIL on large buffers: the thread is on a core (or waiting for
    # one) nearly all the time, which is what "runnable" means to the scheduler.
    stop = threading.Event()
    started = threading.Event()
    ids: list[int] = []
    data = b"x" * 4_000_000

    def crunch() -> None:
        ids.append(threading.get_native_id())
        started.set()
        while not stop.is_set():
            hashlib.sha256(data).digest()

    worker = threading.Thread(target=crunch)
    worker.start()
    ready = ReadyThreads()
    try:
        assert started.wait(30)
        assert _seen_ready(ready, ids[0], 0.3) >= 10
    finally:
        stop.set()
        worker.join()
        ready.close()


@linux
def test_a_sleeping_thread_and_an_ended_one_read_as_not_ready() -> None:
    wake = threading.Event()
    started = threading.Event()
    ids: list[int] = []

    def wait() -> None:
        ids.append(threading.get_native_id())
        started.set()
        wake.wait(60)

    sleeper = threading.Thread(target=wait)
    sleeper.start()
    ready = ReadyThreads()
    try:
        assert started.wait(30)
        time.sleep(0.05)  # (blocked in its wait by now)
        assert _seen_ready(ready, ids[0], 0.2) == 0
        assert ready.open_files() == 1
        wake.set()
        sleeper.join()
        # (join returns before the OS thread has quite ended)
        deadline = time.monotonic() + 30
        while os.path.exists(f"/proc/self/task/{ids[0]}") and time.monotonic() < deadline:
            time.sleep(0.001)
        assert ready.any_ready(ids) is False  # its state file reads nothing now
        assert ready.open_files() == 0  # ... and is closed, not asked again
        assert ready.any_ready(ids) is False
    finally:
        wake.set()
        ready.close()


@linux
def test_files_stay_bounded_while_threads_come_and_go() -> None:
    ready = ReadyThreads()
    before = _open_fds()
    try:
        for _ in range(3 * _KEPT):
            ids: list[int] = []
            hold = threading.Event()

            def live(ids: list[int] = ids, hold: threading.Event = hold) -> None:
                ids.append(threading.get_native_id())
                hold.wait(30)

            thread = threading.Thread(target=live)
            thread.start()
            while not ids:
                time.sleep(0.001)
            ready.any_ready(ids)
            hold.set()
            thread.join()
        assert ready.open_files() <= _KEPT
        assert _open_fds() - before <= _KEPT
        # ids that are no thread of this process (another process's, or none at all)
        assert ready.any_ready([os.getppid(), 2**22 + 12345, -5]) is False
    finally:
        ready.close()
    assert _open_fds() == before


@linux
def test_a_state_file_closed_behind_its_back_leaves_the_file_reusing_its_number_open(
    tmp_path: Path,
) -> None:
    # Something else closes the descriptor (a daemonising library closing every file) and
    # the number is reused for one of the application's files: that file is not closed.
    ready = ReadyThreads()
    try:
        assert ready.any_ready([threading.get_native_id()]) in (True, False)
        ((fd, _, _),) = [entry for entry in ready._files.values() if isinstance(entry, tuple)]
        os.close(fd)
        (tmp_path / "app.txt").write_text("the application's data")
        reused = os.open(tmp_path / "app.txt", os.O_RDONLY)
        try:
            assert reused == fd  # (the lowest free number)
            assert ready.any_ready([threading.get_native_id()]) is False
            assert os.pread(reused, 100, 0) == b"the application's data"  # still open
            assert ready.open_files() == 0
        finally:
            os.close(reused)
    finally:
        ready.close()


@linux
def test_it_only_reads_this_processs_threads(tmp_path: Path) -> None:
    # Another process's busy thread is no thread of ours: /proc/self/task does not list it.
    import subprocess

    child = subprocess.Popen(
        [sys.executable, "-c", "import hashlib\nwhile True: hashlib.sha256(b'x' * 10**6).digest()"]
    )
    ready = ReadyThreads()
    try:
        time.sleep(0.2)
        assert _seen_ready(ready, child.pid, 0.2) == 0
    finally:
        child.kill()
        child.wait()
        ready.close()


def test_without_proc_nothing_is_ever_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os.path, "isdir", lambda path: False)
    ready = ReadyThreads()
    assert ready.any_ready([threading.get_native_id()]) is False
    assert ready.open_files() == 0
