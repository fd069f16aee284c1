"""The recorder: stores every finished run's trace without slowing the run down.

``Agent(..., recorder=Recorder())`` makes the agent call :meth:`Recorder.record` at the end
of every run, including runs that stopped on an error or were cancelled (their partial
traces are the most useful ones). ``record`` only samples and appends to a bounded
in-memory queue; a background thread redacts, serializes and writes the queued traces to
the store in batches. When the store is down or slow the queue fills up and new traces
are dropped and counted (``recorder.stats``) instead of blocking the agent: ``record`` never
waits for the writer, for redaction or for the store.

Every trace handed to ``record`` ends up counted once: written, sampled out, or dropped with
a reason (queue full, store failing, recorder closed, process exiting before it was written).

The writer's Python work holds the interpreter lock: it hands it to the agent's threads with
a real nap after every short slice of work (see ``Recorder._offer``), and does its one-time
set-up (the trace encoder, opening the store) when the recorder is made, not mid-write. It
uses only portable clocks and sleeps to do so: nothing of the interpreter's or the OS's
internals.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import logging
import os
import random
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolproof._trace import Trace
from toolproof.errors import UserError
from toolproof.replay._fork import FORK_GUARD
from toolproof.replay._redact import Redactor
from toolproof.replay._redact_trace import Unsupported, redact_trace_object
from toolproof.replay._store import (
    DEFAULT_STORE_PATH,
    TraceStore,
    is_store_url,
    resolve_store,
    store_label,
)
from toolproof.replay._store_rows import Row, row_from_dict, row_from_trace

if TYPE_CHECKING:
    from typing_extensions import Self

    from toolproof.replay._checkpoint import Checkpointer

__all__ = ["DropPolicy", "Recorder", "RecorderStats"]

logger = logging.getLogger("toolproof.replay")

DropPolicy = Literal["newest", "oldest"]

# The writer hands the interpreter over for real: it naps (a blocking sleep, so a thread
# waiting for the interpreter takes it) after every slice of its work. A zero-length sleep
# does not hand it over: a thread that lets the interpreter go and takes it straight back
# keeps it from a waiting thread.
_SLICE = 0.0002  # seconds of the writer's work between naps while other threads run
_SLICE_QUIET = 0.001  # ... while no other thread of the process has run for _QUIET_AFTER
_QUIET_AFTER = 0.01  # seconds without other threads' CPU time before the longer slices
_NAP = 1e-6  # the shortest sleep the OS gives (on Linux 50-100 µs: its timer slack)
_OTHERS_RAN = 2e-6  # CPU seconds of other threads since the last nap that count as running
_EXIT_PRIORITY = 10  # of the exit hook in a multiprocessing child (higher runs earlier)

# The Redactor methods the recorder's walk of trace objects stands for, or calls.
_WALKED = (
    "redact_data",
    "field_action",
    "replacement",
    "pseudonym",
    "static_spans",
    "static_text",
    "enabled",
)


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """What a recorder did so far.

    Attributes:
        received: Traces handed to ``record``.
        sampled_out: Traces skipped by sampling.
        written: Traces committed to the store.
        pending: Traces queued or being written now.
        dropped_full: Traces dropped because the queue was full (the store is slow or down).
        dropped_failed: Traces dropped because writing them failed after retries.
        dropped_closed: Traces handed over after :meth:`Recorder.close`.
        dropped_exit: Traces still queued (or being written) when the interpreter exited
            and the final write did not finish within ``exit_timeout``.
        write_errors: Failed write attempts (each retry counts).
        last_error: The last write error, as text.
    """

    received: int = 0
    sampled_out: int = 0
    written: int = 0
    pending: int = 0
    dropped_full: int = 0
    dropped_failed: int = 0
    dropped_closed: int = 0
    dropped_exit: int = 0
    write_errors: int = 0
    last_error: str | None = None

    @property
    def dropped(self) -> int:
        """Every trace that was meant to be stored and was not."""
        return self.dropped_full + self.dropped_failed + self.dropped_closed + self.dropped_exit


class Recorder:
    """Records agent runs into a trace store, off the request path.

    Args:
        store: A :class:`TraceStore`, or the path of its SQLite file (opened by the
            background thread as it starts; default ``.toolproof/traces.db``).
        redactor: Removes sensitive values before anything is written; the default
            masks credentials, e-mail addresses, phone and card numbers. Pass
            ``Redactor.none()`` to store traces as they are.
        sample_rate: The fraction of runs to record (0 to 1).
        keep_errors: Record every run that stopped with an error, whatever the sampling.
        tags: Tags added to every recorded trace (``"prod"``, ``"v2.3"``...).
        max_queue: Traces held in memory while waiting to be written.
        drop: Which trace to give up when the queue is full: the ``"newest"`` (the one
            being recorded) or the ``"oldest"`` queued one.
        batch_size: Traces written per transaction.
        flush_interval: Seconds a trace may wait in the queue before a write starts.
        retries: Extra attempts at writing a batch before its traces are dropped.
        on_written: Called from the background thread with the ids of each committed batch.
        seed: Seed of the sampling random generator (for reproducible sampling).
        exit_timeout: Seconds the interpreter's exit waits for queued traces to be written;
            traces still unwritten then are counted as ``dropped_exit`` and logged.

    The first recorder of a process builds the trace encoder (about 0.1 s with its imports)
    so that the writer never does it in the middle of the agent's work; the writer opens
    the store as it starts.

    Raises:
        UserError: An option is out of range.

    Example:
        ```python
        recorder = Recorder(".toolproof/traces.db", sample_rate=0.1, tags=["prod"])
        agent = Agent(model, tools, recorder=recorder)
        ...
        recorder.close()  # writes what is queued (also done at interpreter exit)
        print(recorder.stats)
        ```
    """

    def __init__(
        self,
        store: TraceStore | str | Path = DEFAULT_STORE_PATH,
        *,
        redactor: Redactor | None = None,
        sample_rate: float = 1.0,
        keep_errors: bool = True,
        tags: Sequence[str] = (),
        max_queue: int = 10_000,
        drop: DropPolicy = "newest",
        batch_size: int = 256,
        flush_interval: float = 0.2,
        retries: int = 2,
        on_written: Callable[[list[str]], None] | None = None,
        seed: int | None = None,
        exit_timeout: float = 5.0,
    ) -> None:
        if not 0.0 <= sample_rate <= 1.0:
            raise UserError(f"Recorder(sample_rate=...) must be between 0 and 1, got {sample_rate}")
        if max_queue < 1 or batch_size < 1:
            raise UserError("Recorder(max_queue=..., batch_size=...) must be at least 1")
        if drop not in ("newest", "oldest"):
            raise UserError(f"Recorder(drop=...) must be 'newest' or 'oldest', got {drop!r}")
        if flush_interval <= 0:
            raise UserError("Recorder(flush_interval=...) must be a positive number of seconds")
        self._store: TraceStore | None = store if isinstance(store, TraceStore) else None
        self._own_store = self._store is None
        if isinstance(store, TraceStore):
            self.store_path: str | Path = store.location
        else:  # resolved now: the writer opens it later, whatever the working directory then
            self.store_path = resolve_store(store)
        # A fork waits while the writer opens its store or is inside SQLite (see _fork.py); a
        # database server's writes are not SQLite's.
        self._fork_guard: contextlib.AbstractContextManager[None] = (
            contextlib.nullcontext() if is_store_url(self.store_path) else FORK_GUARD
        )
        self.redactor = redactor if redactor is not None else Redactor()
        # A Redactor subclass that changes how data is redacted gets its own redact_data.
        self._walk_objects = all(
            getattr(type(self.redactor), name) is getattr(Redactor, name) for name in _WALKED
        )
        self.sample_rate = sample_rate
        self.keep_errors = keep_errors
        self.tags = list(tags)
        self.max_queue = max_queue
        self.drop = drop
        self.batch_size = batch_size
        self.flush_interval = flush_interval
        self.retries = max(0, retries)
        self.on_written = on_written
        self._random = random.Random(seed)
        self.exit_timeout = exit_timeout

        self._closed = False
        self._checkpointer: Checkpointer | None = None
        self._unusable: str | None = None  # why the store cannot be opened (a forked child)
        # Built once per process: the trace encoder's set-up (~15 ms) is not left to the
        # writer's first batch, where it would hold the interpreter from the agent's threads.
        _warm_encoder()
        self._begin(start=True)
        _LIVE.add(self)
        self._atexit = _AtExit(self)
        atexit.register(self._atexit)
        self._mp_exit: Any = None  # multiprocessing's exit hook, where it runs
        self._hook_multiprocessing_exit()

    def _begin(self, *, start: bool) -> None:
        """Fresh queue, locks and counters, and a writer thread (at start, and after a fork).

        In a forked child the thread starts at the child's first ``record`` (a pool's
        workers that never record pay nothing).
        """
        self._queue: deque[Trace] = deque()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._done = threading.Condition(self._lock)
        self._received = 0
        self._sampled_out = 0
        self._written = 0
        self._dropped_full = 0
        self._dropped_failed = 0
        self._dropped_closed = 0
        self._dropped_exit = 0
        self._abandoned = False  # the interpreter is exiting: stop writing, count the rest
        self._reported_drops = 0  # drops already reported by flush()
        self._write_errors = 0
        self._last_error: str | None = None
        self._store_down = False  # the last batch failed every attempt
        self._settled = 0  # traces written or dropped by the writer so far
        self._enqueued = 0
        self._offered = 0.0  # when the writer last handed the interpreter over
        self._others = 0.0  # CPU time of the process's other threads at the last nap
        self._busy_until = 0.0  # short slices until then: other threads ran lately
        self._started = threading.Event()  # the writer's set-up is done
        self._thread = threading.Thread(target=self._run, name="toolproof-recorder", daemon=True)
        self._unstarted = not start
        if start and not self._closed:
            self._thread.start()

    def _forked(self) -> None:
        """In a forked child: a writer of its own, counting only the child's traces.

        The parent's queue, counts and writer stay the parent's (the child has no thread,
        and a lock the parent's writer held at the fork would stay held). Its store
        connection is not the child's to use or close: the child opens the store again
        from its location (a store handed over as an object too, when it is a plain
        ``TraceStore``; any other fails its writes, counted as ``dropped_failed``).
        """
        _INHERITED.extend(item for item in (self._store, self._checkpointer) if item is not None)
        store = self._store
        if (store is not None and not self._own_store) and (
            type(store) is not TraceStore or str(store.path) == ":memory:"
        ):
            self._unusable = (
                f"trace store {store_label(self.store_path)}: a store object cannot be used "
                "in a forked process; give the Recorder its path or URL instead"
            )
        self._store, self._own_store = None, True
        self._checkpointer = None
        self._begin(start=False)

    def _start_in_child(self) -> None:
        with self._lock:
            if not self._unstarted or self._closed:
                return
            self._unstarted = False
        self._thread.start()
        self._hook_multiprocessing_exit()

    def _hook_multiprocessing_exit(self) -> None:
        """Also flush at the exit of a multiprocessing child (where ``multiprocessing`` runs).

        A child forked by ``multiprocessing`` ends with ``os._exit``, after its own exit
        hooks but without the interpreter's (``atexit``): the queued traces are written, or
        counted, there too. (Elsewhere the hook runs at exit after ``atexit``'s: a no-op.)
        """
        util = sys.modules.get("multiprocessing.util")
        finalize = getattr(util, "Finalize", None)
        if finalize is None:
            return
        try:  # (record() never raises, whatever stands in for multiprocessing)
            self._mp_exit = finalize(None, self._atexit, exitpriority=_EXIT_PRIORITY)
        except Exception:
            logger.debug("multiprocessing's exit hook is not available", exc_info=True)

    # -- the hot path ------------------------------------------------------------------------

    def record(self, trace: Trace) -> None:
        """Queue one finished trace for writing; returns at once and never raises.

        It only samples and appends to the bounded queue: it never waits for redaction, for
        the store or for room in the queue (a full queue drops a trace and counts it, see
        ``drop``). The trace is read later by the background thread: do not change it
        afterwards.
        """
        if self._unstarted:  # the first record of a forked child
            self._start_in_child()
        rate = self.sample_rate
        with self._lock:
            self._received += 1
            if (
                rate < 1.0
                and self._random.random() >= rate
                and not (self.keep_errors and trace.stop_reason == "error")
            ):
                self._sampled_out += 1
                return
            if self._closed:
                self._dropped_closed += 1
                return
            queue = self._queue
            if len(queue) >= self.max_queue:
                self._dropped_full += 1
                if self.drop == "newest":
                    return
                queue.popleft()
                self._settled += 1
            queue.append(trace)
            self._enqueued += 1
            wake = len(queue) >= self.batch_size
        if wake:
            self._wake.set()

    # -- control -----------------------------------------------------------------------------

    @property
    def stats(self) -> RecorderStats:
        """A snapshot of the counters."""
        with self._lock:
            return RecorderStats(
                received=self._received,
                sampled_out=self._sampled_out,
                written=self._written,
                pending=self._enqueued - self._settled,
                dropped_full=self._dropped_full,
                dropped_failed=self._dropped_failed,
                dropped_closed=self._dropped_closed,
                dropped_exit=self._dropped_exit,
                write_errors=self._write_errors,
                last_error=self._last_error,
            )

    def flush(self, timeout: float | None = 30.0) -> bool:
        """Wait until every trace recorded so far is written or dropped.

        Returns:
            ``True`` when every trace recorded since the previous ``flush`` (or since the
            start) was written within ``timeout`` seconds; ``False`` when the timeout passed
            or any of them was dropped (queue full, store failing, recorder closed: see
            :attr:`stats` for which).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            target = self._enqueued
        self._wake.set()
        with self._done:
            while self._settled < target:
                if not self._thread.is_alive():
                    return False
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._done.wait(0.05 if remaining is None else min(remaining, 0.05))
                self._wake.set()
            return self._no_new_drops()

    def _no_new_drops(self) -> bool:
        """Whether nothing was dropped since the last call (the lock is held)."""
        drops = self._dropped_full + self._dropped_failed + self._dropped_closed
        drops += self._dropped_exit
        fresh = drops - self._reported_drops
        self._reported_drops = drops
        return fresh == 0

    def close(self, timeout: float | None = 30.0) -> bool:
        """Write what is queued, stop the background thread and close the store.

        Later ``record`` calls are counted as ``dropped_closed``. Idempotent.

        Returns:
            Whether every trace recorded since the previous ``flush`` (or since the start)
            was written within ``timeout``: ``False`` when one was dropped or the writer is
            still busy.
        """
        with self._lock:
            already = self._closed
            self._closed = True
        if already:
            return not self._thread.is_alive()
        atexit.unregister(self._atexit)
        if self._mp_exit is not None:
            self._mp_exit.cancel()
        self._wake.set()
        if self._thread.ident is not None:  # (a forked child's writer starts when needed)
            self._thread.join(timeout)
        finished = not self._thread.is_alive()
        if finished and self._checkpointer is not None:
            self._checkpointer.close(timeout)
        if finished and self._own_store and self._store is not None:
            self._store.close()
        with self._lock:
            return finished and self._no_new_drops()

    def _exit(self) -> None:
        """At interpreter exit: write what is queued, or count and report what is not."""
        finished = self.close(self.exit_timeout)
        if self._thread.is_alive():
            with self._lock:
                self._abandoned = True
                lost = self._enqueued - self._settled
                self._dropped_exit += lost
                self._settled += lost
                self._queue.clear()
            logger.warning(
                "trace store %s: %d traces had not been written when the interpreter exited "
                "(Recorder(exit_timeout=%s) passed); stats: %s",
                self.store_path,
                lost,
                self.exit_timeout,
                self.stats,
            )
        elif not finished:
            stats = self.stats
            if stats.dropped:
                logger.warning(
                    "trace store %s: %d traces were dropped (%s)",
                    self.store_path,
                    stats.dropped,
                    stats,
                )

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Recorder {store_label(self.store_path)} {self.stats}>"

    # -- the background thread ---------------------------------------------------------------

    def _run(self) -> None:
        self._start()
        while True:
            self._wake.wait(self.flush_interval)
            self._wake.clear()
            while True:
                with self._lock:
                    if self._abandoned:
                        return
                    closing = self._closed
                    batch = [
                        self._queue.popleft() for _ in range(min(self.batch_size, len(self._queue)))
                    ]
                if not batch:
                    break
                self._write(batch)
            if closing:
                with self._lock:
                    empty = not self._queue
                if empty:
                    return

    def _start(self) -> None:
        """Open the store before the first batch, while the agent is likely still starting.

        Opening it (creating the file, migrating its layout: a few milliseconds, in short
        statements the agent's threads wait through) would otherwise land in the middle of
        the first write. A store that cannot be opened now is tried again, and its errors
        counted, at the first write.
        """
        try:
            if self._store is None and not self._closed:
                with FORK_GUARD:
                    self._store = self._open_store()
        except Exception:
            logger.debug("trace store %s: not opened yet", self.store_path, exc_info=True)
        finally:
            self._started.set()

    def _write(self, batch: list[Trace]) -> None:
        rows: list[Row] = []
        offer = self._offer
        for trace in batch:
            try:
                rows.append(self._prepare(trace))
            except Exception as exc:  # a trace that cannot be serialized must not stop the rest
                self._failed(1, f"cannot serialize trace {trace.id}: {exc!r}")
            offer()
        attempt = 0
        while rows:
            if self._is_abandoned():  # the interpreter is exiting: counted as lost
                return
            try:
                # The store prepares the batch's rows in one piece before its statements
                # (which it runs in chunks, handing over between them): it starts afresh.
                self._nap()
                if self._store is None:
                    with FORK_GUARD:
                        self._store = self._open_store()
                with self._fork_guard:
                    self._store._write(rows)
            except Exception as exc:
                attempt += 1
                with self._lock:
                    self._write_errors += 1
                    self._last_error = (  # (toolproof's own errors say what to fix)
                        str(exc) if isinstance(exc, UserError) else f"{type(exc).__name__}: {exc}"
                    )
                if attempt > self.retries or (self._closed and self._store_down):
                    self._store_down = True
                    self._failed(len(rows), None)
                    logger.warning(
                        "trace store %s: dropped %d traces after %d failed writes (%s)",
                        store_label(self.store_path),
                        len(rows),
                        attempt,
                        self._last_error,
                    )
                    return
                time.sleep(min(0.05 * 4**attempt, 1.0))
                continue
            self._store_down = False
            if self._checkpointer is not None:
                self._checkpointer.written(sum(len(row.payload) for row in rows))
            ids = [row.id for row in rows]
            with self._done:
                self._written += len(rows)
                if self._abandoned:  # counted as lost at exit, and written after all
                    self._dropped_exit -= len(rows)
                else:
                    self._settled += len(rows)
                self._done.notify_all()
            if self.on_written is not None:
                try:
                    self.on_written(ids)
                except Exception:
                    logger.exception("Recorder(on_written=...) callback failed")
            return

    def _offer(self) -> None:
        """Hand the interpreter to the agent's threads after every slice of the writer's work.

        Called after every trace, between its redaction and its encoding, and between
        chunks of the store's statements. A real nap (not a zero-length sleep) is what lets
        a thread waiting for the interpreter take it. Slices are short (0.2 ms) while other
        threads of the process ran lately (their CPU time grew), longer (1 ms) once none
        has for 10 ms: a thread that wakes then waits at most one long slice, and ingest
        alone pays few naps.
        """
        now = time.perf_counter()
        if now - self._offered >= (_SLICE if now < self._busy_until else _SLICE_QUIET):
            self._nap()

    def _nap(self) -> None:
        """Hand the interpreter over now; note whether other threads ran since the last nap."""
        time.sleep(_NAP)
        others = self._others_cpu()
        self._offered = after = time.perf_counter()
        if others - self._others > _OTHERS_RAN:
            self._busy_until = after + _QUIET_AFTER
        self._others = others

    def _others_cpu(self) -> float:
        """CPU seconds the process's other threads used, the writer's checkpoints left out."""
        others = time.process_time() - time.thread_time()
        if self._checkpointer is not None:  # the writer's own thread, not the agent's
            others -= self._checkpointer.cpu_time()
        return others

    def _open_store(self) -> TraceStore:
        if self._unusable is not None:
            raise UserError(self._unusable)
        store = TraceStore(self.store_path)
        # The store is the recorder's own: its long statements also let the agent in.
        store._pause = self._offer
        if type(store) is TraceStore and str(store.path) != ":memory:":
            from toolproof.replay._checkpoint import Checkpointer

            # The store is the recorder's own: its commits leave checkpoints to a thread.
            store._exec("PRAGMA wal_autocheckpoint = 0")
            self._checkpointer = Checkpointer(store.path)
        return store

    def _is_abandoned(self) -> bool:
        return self._abandoned  # read afresh: the exit handler sets it from another thread

    def _failed(self, count: int, error: str | None) -> None:
        with self._done:
            self._dropped_failed += count
            if self._abandoned:  # counted as lost at exit: now counted as failed instead
                self._dropped_exit -= count
            else:
                self._settled += count
            if error is not None:
                self._write_errors += 1
                self._last_error = error
            self._done.notify_all()

    def _prepare(self, trace: Trace) -> Row:
        # Every trace is walked. Scanning text first for what the rules need (literals,
        # digit runs) and walking only on a hit was measured and does not pay: the encoded
        # trace always hits (usage keys hold "token", durations are long digit runs), and a
        # scan of the data alone (gathered, encoded, one pass for every literal) costs
        # more instructions than the walk, whose caches skip texts seen before.
        if self.tags:
            tags = list(dict.fromkeys([*trace.tags, *self.tags]))
            if tags != trace.tags:
                trace = _with_tags(trace, tags)
        if self.redactor.enabled:
            if not self._walk_objects:
                return self._prepare_plain(trace)
            try:
                trace = redact_trace_object(self.redactor, trace)
            except Unsupported:
                return self._prepare_plain(trace)
            self._offer()  # (between the walk and the encoding: shorter slices)
        # A trace built by the trace classes' constructors: the codec writes it so that it
        # reads back (the same guarantee as TraceStore.add), no decode needed to know it.
        return row_from_trace(trace)

    def _prepare_plain(self, trace: Trace) -> Row:
        """Redact the plain form of a trace whose objects were changed after construction."""
        from pydantic_core import to_json

        data = self.redactor.redact_data(trace.to_dict())
        return row_from_dict(data, to_json(data))


def _with_tags(trace: Trace, tags: list[str]) -> Trace:
    values = {item.name: getattr(trace, item.name) for item in dataclasses.fields(trace)}
    values["tags"] = tags
    return Trace(**values)


#: Every recorder of the process, restarted in a forked child.
_LIVE: weakref.WeakSet[Recorder] = weakref.WeakSet()
#: Stores and checkpoint threads a forked child inherited: never used or closed there.
_INHERITED: list[object] = []


def _restart_in_child() -> None:
    for recorder in list(_LIVE):
        recorder._forked()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_restart_in_child)


def _warm_encoder() -> None:
    from toolproof._trace import _adapter

    _adapter()


class _AtExit:
    """Flushes a recorder at interpreter exit without keeping it alive."""

    def __init__(self, recorder: Recorder) -> None:
        self._ref = weakref.ref(recorder)

    def __call__(self) -> None:
        recorder = self._ref()
        if recorder is not None:
            recorder._exit()
