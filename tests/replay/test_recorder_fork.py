"""A forked child of a recording process gets a writer of its own, and counts only its traces.

The parent's writer thread does not exist in a child, and a lock it held at the fork would
stay held: the child starts over with its own queue, counters and store connection (the
parent's is never used there), from its first ``record``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from replay_helpers import user_trace

from toolproof.replay import Recorder, TraceStore

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")


def _in_child(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``work`` in a forked child; returns what it returned (or raises what it raised)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read)
            try:
                out = work()
            except BaseException as exc:
                out = {"error": repr(exc)}
            with os.fdopen(write, "w") as pipe:
                json.dump(out, pipe)
        except BaseException:
            code = 1
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, text
    result: dict[str, Any] = json.loads(text)
    assert "error" not in result, result["error"]
    return result


def _ids(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT id FROM traces ORDER BY id")]
    finally:
        conn.close()


def _stats(recorder: Recorder) -> dict[str, Any]:
    stats = recorder.stats
    return {
        "received": stats.received,
        "written": stats.written,
        "dropped": stats.dropped,
        "dropped_failed": stats.dropped_failed,
        "pending": stats.pending,
        "last_error": stats.last_error,
    }


def test_a_forked_child_writes_and_counts_its_own_traces(tmp_path: Path) -> None:
    base = user_trace(3, tags=["fork"])
    path = tmp_path / "t.db"
    recorder = Recorder(path, batch_size=8, flush_interval=0.01)
    for n in range(5):
        recorder.record(replace(base, id=f"parent-a-{n:03d}"))
    assert recorder.flush(60)
    for n in range(40):  # queued or being written at the fork: the parent's to write
        recorder.record(replace(base, id=f"parent-b-{n:03d}"))

    def child() -> dict[str, Any]:
        for n in range(7):
            recorder.record(replace(base, id=f"child-{n:03d}"))
        closed = recorder.close(60)
        return {"closed": closed, **_stats(recorder)}

    got = _in_child(child)
    assert got["closed"] is True
    assert (got["received"], got["written"], got["dropped"], got["pending"]) == (7, 7, 0, 0)
    assert recorder.close(60)
    assert recorder.stats.received == 45 and recorder.stats.written == 45
    ids = _ids(path)
    assert len(ids) == len(set(ids)) == 52
    assert sum(trace_id.startswith("child-") for trace_id in ids) == 7


def test_a_store_object_is_opened_again_in_the_child(tmp_path: Path) -> None:
    base = user_trace(4)
    store = TraceStore(tmp_path / "t.db")
    recorder = Recorder(store, flush_interval=0.01)
    recorder.record(replace(base, id="parent-000"))
    assert recorder.flush(60)

    def child() -> dict[str, Any]:
        for n in range(3):
            recorder.record(replace(base, id=f"child-{n:03d}"))
        return {"closed": recorder.close(60), **_stats(recorder)}

    got = _in_child(child)
    assert got["closed"] is True and got["written"] == 3
    recorder.record(replace(base, id="parent-001"))
    assert recorder.close(60)
    assert len(store) == 5  # the parent's store object still works
    store.close()


def test_a_store_subclass_in_a_child_fails_its_writes_and_counts_them(tmp_path: Path) -> None:
    class Audited(TraceStore):
        pass

    base = user_trace(5)
    store = Audited(tmp_path / "t.db")
    recorder = Recorder(store, retries=0, flush_interval=0.01)

    def child() -> dict[str, Any]:
        for n in range(4):
            recorder.record(replace(base, id=f"child-{n:03d}"))
        return {"closed": recorder.close(60), **_stats(recorder)}

    got = _in_child(child)
    assert got["closed"] is False
    assert (got["received"], got["written"], got["dropped_failed"]) == (4, 0, 4)
    assert "cannot be used in a forked process" in got["last_error"]
    assert recorder.close(60)
    assert len(store) == 0
    store.close()


def test_a_child_that_never_records_starts_no_writer(tmp_path: Path) -> None:
    recorder = Recorder(tmp_path / "t.db", flush_interval=0.01)
    recorder.record(user_trace(6))
    assert recorder.flush(60)

    def child() -> dict[str, Any]:
        flushed = recorder.flush(5)
        return {
            "started": recorder._thread.ident is not None,
            "flushed": flushed,
            "closed": recorder.close(5),
            **_stats(recorder),
        }

    got = _in_child(child)
    assert got == {
        "started": False,
        "flushed": True,
        "closed": True,
        "received": 0,
        "written": 0,
        "dropped": 0,
        "dropped_failed": 0,
        "pending": 0,
        "last_error": None,
    }
    assert recorder.close(60) and recorder.stats.written == 1


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_fork_at_any_moment_of_the_writers_work_gives_a_child_that_writes(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    # Forked while the writer opens its store or writes a batch, or while its checkpoint
    # thread copies the log back: a child that inherited one of SQLite's own locks held
    # would hang at its first write (a pre-forking server forks right after start-up).
    import random

    chance = random.Random(11)
    base = user_trace(9)
    for attempt in range(12):
        where: str | Path = (
            tmp_path / f"f{attempt}.db" if engine == "sqlite" else request.getfixturevalue("pg_url")
        )
        recorder = Recorder(where, batch_size=40, flush_interval=0.001)
        if attempt % 3:  # (a third fork at once, as the writer opens its store)
            assert recorder._started.wait(60)
            if recorder._checkpointer is not None:
                recorder._checkpointer.every = 50_000  # checkpoints every few batches
            for n in range(chance.randrange(50, 400)):
                recorder.record(replace(base, id=f"p{attempt}-{n}"))
            time.sleep(chance.random() * 0.02)

        def child(attempt: int = attempt, recorder: Recorder = recorder) -> dict[str, Any]:
            recorder.record(replace(base, id=f"child-{attempt}"))
            return {"flushed": recorder.flush(20), **_stats(recorder)}

        got = _in_child(child)
        assert (got["flushed"], got["written"], got["pending"]) == (True, 1, 0), (attempt, got)
        assert recorder.close(60)
        if engine == "sqlite":
            assert f"child-{attempt}" in _ids(tmp_path / f"f{attempt}.db")
        else:
            with TraceStore(where) as store:
                assert store.get(f"child-{attempt}") is not None


def test_a_forked_child_writes_to_postgresql_through_a_connection_of_its_own(
    pg_url: str,
) -> None:
    base = user_trace(8, tags=["fork"])
    recorder = Recorder(pg_url, batch_size=4, flush_interval=0.01)
    for n in range(6):
        recorder.record(replace(base, id=f"parent-{n:03d}"))
    assert recorder.flush(60)

    def child() -> dict[str, Any]:
        for n in range(5):
            recorder.record(replace(base, id=f"child-{n:03d}"))
        return {"closed": recorder.close(60), **_stats(recorder)}

    got = _in_child(child)
    assert got["closed"] is True and (got["received"], got["written"]) == (5, 5)
    recorder.record(replace(base, id="parent-after"))  # the parent's connection still works
    assert recorder.close(60)
    assert recorder.stats.written == 7
    with TraceStore(pg_url) as store:
        ids = sorted(trace.id for trace in store.query())
    assert len(ids) == len(set(ids)) == 12
    assert sum(trace_id.startswith("child-") for trace_id in ids) == 5


def _hold_guard(inside: threading.Event, leave: threading.Event, left: list[float]) -> None:
    from toolproof.replay._fork import FORK_GUARD

    with FORK_GUARD:
        inside.set()
        leave.wait(60)
        left.append(time.monotonic())


def test_the_writer_and_its_checkpoints_are_never_kept_waiting_by_each_other() -> None:
    from toolproof.replay._fork import FORK_GUARD

    inside, leave, left = threading.Event(), threading.Event(), []
    holder = threading.Thread(target=_hold_guard, args=(inside, leave, left))
    holder.start()
    try:
        assert inside.wait(30)
        entered = threading.Event()

        def enter() -> None:
            with FORK_GUARD:
                entered.set()

        other = threading.Thread(target=enter)
        other.start()
        assert entered.wait(10)  # while the first thread is still inside
        other.join()
    finally:
        leave.set()
        holder.join()


def test_a_fork_waits_until_no_thread_is_inside_sqlite() -> None:
    inside, leave, left = threading.Event(), threading.Event(), []
    holder = threading.Thread(target=_hold_guard, args=(inside, leave, left))
    holder.start()
    assert inside.wait(30)
    threading.Timer(0.3, leave.set).start()
    got = _in_child(lambda: {"forked_at": time.monotonic()})
    holder.join()
    assert left and got["forked_at"] >= left[0]


@pytest.mark.timeout(60)
def test_a_fork_waits_a_bounded_time_for_a_thread_stuck_in_sqlite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import toolproof.replay._fork as fork_module

    monkeypatch.setattr(fork_module, "_FORK_WAIT", 0.3)
    inside, leave, left = threading.Event(), threading.Event(), []
    holder = threading.Thread(target=_hold_guard, args=(inside, leave, left))
    holder.start()
    try:
        assert inside.wait(30)
        began = time.monotonic()

        def child() -> dict[str, Any]:
            with fork_module.FORK_GUARD:  # free in the child: its holder is not there
                return {"entered": True}

        assert _in_child(child) == {"entered": True}
        # forked while it was in, after waiting its 0.3 s (a fork that waits for ever fails by
        # the test's timeout)
        assert time.monotonic() - began >= 0.25 and not left
    finally:
        leave.set()
        holder.join()


_FORK_AT_ONCE = """
import os, sys
sys.path.insert(0, sys.argv[2])
from dataclasses import replace
from replay_helpers import user_trace
from toolproof.replay import Recorder

assert "toolproof.replay._postgres" not in sys.modules
recorder = Recorder(sys.argv[1], batch_size=4, flush_interval=0.001)
pid = os.fork()  # while the writer imports the PostgreSQL store and connects
if pid == 0:
    recorder.record(replace(user_trace(3), id=f"at-once-{os.getpid()}"))
    ok = recorder.flush(20) and recorder.stats.written == 1
    print(recorder.stats, flush=True)
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
recorder.close(30)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_a_fork_as_a_fresh_process_opens_a_postgresql_store_gives_a_child_that_writes(
    pg_url: str,
) -> None:
    # The writer imports the PostgreSQL store's module as it starts: a child forked in the
    # middle of that import would inherit the module half made and fail every write.
    import subprocess
    import sys

    helpers = str(Path(__file__).parent)
    for _ in range(4):
        done = subprocess.run(
            [sys.executable, "-c", _FORK_AT_ONCE, pg_url, helpers],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr


#: The recorder the multiprocessing workers below record with (inherited by the fork).
_SHARED: list[Recorder] = []


def _record_fifty(task: int, flush: bool = False) -> int:
    base = user_trace(4)
    recorder = _SHARED[0]
    for n in range(50):
        recorder.record(replace(base, id=f"task-{task}-{n:02d}"))
    if flush:
        assert recorder.flush(30)
    return task


def _record_fifty_and_flush(task: int) -> int:
    return _record_fifty(task, flush=True)


def _record_fifty_with_own_recorder(path: str) -> None:
    _SHARED[:] = [Recorder(path, flush_interval=0.2)]  # made in the child
    _record_fifty(40)


def test_multiprocessing_children_write_every_trace_before_they_exit(tmp_path: Path) -> None:
    # A multiprocessing child ends with os._exit: no atexit hooks, only multiprocessing's.
    # Before the recorder registered one there, every trace still queued was lost, uncounted.
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    fork = multiprocessing.get_context("fork")
    recorder = Recorder(tmp_path / "mp.db", flush_interval=0.2)
    _SHARED[:] = [recorder]
    try:
        workers = [fork.Process(target=_record_fifty, args=(task,)) for task in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        assert [worker.exitcode for worker in workers] == [0, 0, 0]
        pool = fork.Pool(2)
        assert pool.map(_record_fifty, range(10, 14)) == [10, 11, 12, 13]
        pool.close()
        pool.join()
        with ProcessPoolExecutor(2, mp_context=fork) as executor:
            assert list(executor.map(_record_fifty, range(20, 23))) == [20, 21, 22]
        # A pool left by `with` is terminated (SIGTERM): workers flush at the end of a task.
        with fork.Pool(2) as pool:
            assert pool.map(_record_fifty_and_flush, range(30, 32)) == [30, 31]
        # and a recorder made in the child (its own file)
        own = fork.Process(target=_record_fifty_with_own_recorder, args=(str(tmp_path / "own.db"),))
        own.start()
        own.join(120)
        assert own.exitcode == 0
        assert len(_ids(tmp_path / "own.db")) == 50
    finally:
        _SHARED.clear()
        assert recorder.close(60)
    tasks = {trace_id.rsplit("-", 1)[0] for trace_id in _ids(tmp_path / "mp.db")}
    assert len(_ids(tmp_path / "mp.db")) == 50 * 12
    assert tasks == {f"task-{n}" for n in [0, 1, 2, 10, 11, 12, 13, 20, 21, 22, 30, 31]}
