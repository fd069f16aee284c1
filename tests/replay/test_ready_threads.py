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


# -- waiting for the interpreter lock ------------------------------------------------------

futex = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"),
    reason="reads Linux /proc on a machine whose futex call is known",
)


class _Waiter:
    """A thread that waits on an event, then, woken, needs the interpreter lock."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.done = threading.Event()
        started = threading.Event()
        ids: list[int] = []

        def run() -> None:
            ids.append(threading.get_native_id())
            started.set()
            self.go.wait(60)
            self.done.set()  # (Python code: it runs once it has the lock)

        self.thread = threading.Thread(target=run)
        self.thread.start()
        assert started.wait(30)
        self.id = ids[0]


def _spin_until_waiting(ready: ReadyThreads, native_id: int, seconds: float) -> bool:
    """Ask while this thread keeps the interpreter lock (pure Python, no blocking calls)."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        if ready.any_waiting([native_id]):
            return True
    return False


@futex
def test_a_thread_woken_while_the_lock_is_held_reads_as_waiting_for_it() -> None:
    ready = ReadyThreads()
    assert ready.watches_lock()
    seen = 0
    try:
        for _ in range(20):
            waiter = _Waiter()
            try:
                time.sleep(0.002)  # (blocked on its event by now)
                # On its event it waits for something else: not the lock.
                assert ready.any_waiting([waiter.id]) is False
                waiter.go.set()
                # CPython asks for the lock back after 5 ms: look for 4 ms at most.
                seen += _spin_until_waiting(ready, waiter.id, 0.004)
                assert not waiter.done.is_set()  # it never had the lock meanwhile
            finally:
                waiter.go.set()
                waiter.thread.join()
            assert waiter.done.is_set()
    finally:
        ready.close()
    # 199 of 200 on a 2-core machine (found within 30 µs at the median)
    assert seen >= 15, seen


@futex
def test_threads_blocked_on_anything_else_never_read_as_waiting_for_the_lock() -> None:
    import queue
    import select
    import socket

    stop = threading.Event()
    lock = threading.Lock()
    lock.acquire()
    condition = threading.Condition()
    jobs: queue.Queue[int] = queue.Queue()
    left, right = socket.socketpair()
    ids: list[int] = []

    def blocked(wait: object) -> None:
        ids.append(threading.get_native_id())
        assert callable(wait)
        wait()

    def on_condition() -> None:
        with condition:
            condition.wait(60)

    waits = [
        lambda: stop.wait(60),
        lambda: lock.acquire(timeout=60),
        lambda: time.sleep(0.5),
        lambda: right.recv(1),
        lambda: select.select([right], [], [], 60),
        on_condition,
        lambda: jobs.get(timeout=60),
    ]
    threads = [threading.Thread(target=blocked, args=(wait,)) for wait in waits]
    for thread in threads:
        thread.start()
    ready = ReadyThreads()
    try:
        assert ready.watches_lock()
        time.sleep(0.05)  # (each blocked in its wait by now)
        assert len(ids) == len(waits)
        for _ in range(200):
            assert ready.any_waiting(ids) is False
            time.sleep(0.001)
    finally:
        stop.set()
        lock.release()
        left.send(b"x")
        with condition:
            condition.notify_all()
        for _ in range(len(waits)):
            jobs.put(1)
        for thread in threads:
            thread.join(30)
        left.close()
        right.close()
        ready.close()


@futex
def test_the_lock_is_found_once_and_a_forked_child_keeps_it() -> None:
    from toolproof.replay import _ready

    first = _ready.lock_watch()
    assert first is not None and first is _ready.lock_watch()
    reading, writing = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            found = _ready.lock_watch()
            os.write(writing, b"same" if found is first else b"other")
        finally:
            os._exit(0)
    os.close(writing)
    try:
        assert os.read(reading, 10) == b"same"
    finally:
        os.close(reading)
        os.waitpid(pid, 0)


@futex
def test_a_child_forked_during_the_search_searches_again(monkeypatch: pytest.MonkeyPatch) -> None:
    # The parent's search holds a lock the child's copy would keep held for ever.
    from toolproof.replay import _ready

    monkeypatch.setattr(_ready, "_found", [])
    _ready._search.acquire()  # as a search under way in another thread
    try:
        reading, writing = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                answer: list[object] = []
                searcher = threading.Thread(target=lambda: answer.append(_ready.lock_watch()))
                searcher.start()
                searcher.join(10)
                ok = not searcher.is_alive() and answer and answer[0] is not None
                os.write(writing, b"found" if ok else b"stuck")
            finally:
                os._exit(0)
    finally:
        _ready._search.release()
    os.close(writing)
    try:
        assert os.read(reading, 10) == b"found"
    finally:
        os.close(reading)
        os.waitpid(pid, 0)


def test_where_the_lock_cannot_be_seen_no_thread_is_ever_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolproof.replay import _ready

    monkeypatch.setattr(_ready, "_found", [None])  # (another platform, another interpreter)
    ready = ReadyThreads()
    assert ready.watches_lock() is False
    assert ready.any_waiting([threading.get_native_id()]) is False
    assert ready.open_files() == 0


def test_a_search_that_fails_in_any_way_gives_no_watch(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolproof.replay import _ready

    def broken() -> None:
        raise OSError("no ctypes here")

    monkeypatch.setattr(_ready, "_found", [])
    monkeypatch.setattr(_ready, "_probe", broken)
    assert _ready.lock_watch() is None
    assert ReadyThreads().watches_lock() is False


def _slack_of_this_thread() -> int:
    import ctypes

    return int(ctypes.CDLL(None).prctl(30, 0, 0, 0, 0))  # PR_GET_TIMERSLACK


@linux
def test_naps_are_shortened_for_the_calling_thread_only() -> None:
    from toolproof.replay._ready import NAP_SLACK_NS, shorten_naps

    mine = _slack_of_this_thread()
    seen: list[tuple[bool, int]] = []

    def writer() -> None:
        seen.append((shorten_naps(), _slack_of_this_thread()))

    thread = threading.Thread(target=writer)
    thread.start()
    thread.join()
    assert seen == [(True, NAP_SLACK_NS)]
    assert _slack_of_this_thread() == mine  # (50 µs unless set otherwise)


def test_the_recorders_writer_shortens_its_own_naps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolproof.replay._recorder as recorder_module
    from toolproof.replay import Recorder

    callers: list[int] = []
    monkeypatch.setattr(
        recorder_module, "shorten_naps", lambda: callers.append(threading.get_native_id())
    )
    recorder = Recorder(tmp_path / "r.db", flush_interval=3600)
    assert recorder._started.wait(60)
    assert callers == [recorder._thread.native_id]
    assert recorder.close(60)


def test_elsewhere_naps_are_left_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    from toolproof.replay._ready import shorten_naps

    monkeypatch.setattr(sys, "platform", "darwin")
    assert shorten_naps() is False
