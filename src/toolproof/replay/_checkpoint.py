"""Checkpoints of a recorder's SQLite store, in a thread of their own.

In WAL mode SQLite copies the log back into the database file (a checkpoint, with two
``fsync`` calls) inside the commit that makes the log pass 1,000 pages: that commit then
waits for the disk, 30-60 ms every few batches. The recorder's writer turns those automatic
checkpoints off on the connection it owns and wakes this thread instead, which runs the same
passive checkpoint on its own connection while the writer goes on (SQLite lets a passive
checkpoint run beside a writer). Nothing else changes: the log holds every committed batch
until it is copied, and closing the store checkpoints what is left, as before.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from pathlib import Path

from toolproof.replay._fork import FORK_GUARD

logger = logging.getLogger("toolproof.replay")

#: About as much log as SQLite's automatic checkpoint lets grow (1,000 pages of 4 KB).
CHECKPOINT_BYTES = 4_000_000


class Checkpointer:
    """Runs ``PRAGMA wal_checkpoint(PASSIVE)`` on a SQLite file when told enough was written."""

    def __init__(self, path: Path, *, every: int = CHECKPOINT_BYTES) -> None:
        self.path = path
        self.every = every
        self.checkpoints = 0
        self._pending = 0
        self._wake = threading.Event()
        self._stop = False
        self._clock: int | None = None  # the thread's CPU clock, where the OS has one
        self._cpu = 0.0
        self._thread = threading.Thread(
            target=self._run, name="toolproof-recorder-checkpoint", daemon=True
        )
        self._thread.start()

    def written(self, size: int) -> None:
        """``size`` bytes were committed: wake the thread once enough has piled up."""
        self._pending += size
        if self._pending >= self.every:
            self._pending = 0
            self._wake.set()

    def cpu_time(self) -> float:
        """CPU seconds the thread has used so far (0 where the OS gives no thread clocks).

        The writer tells its own work apart from the agent's threads by their CPU time: the
        checkpoints are the writer's, not a sign that the agent is running.
        """
        clock = self._clock
        if clock is not None:
            try:
                self._cpu = time.clock_gettime(clock)
            except OSError:  # the thread has ended: its last reading stands
                self._clock = None
        return self._cpu

    def close(self, timeout: float | None = 30.0) -> None:
        """Stop the thread (a checkpoint under way finishes first)."""
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        clock_of = getattr(time, "pthread_getcpuclockid", None)
        if clock_of is not None:
            try:
                self._clock = clock_of(threading.get_ident())
            except OSError:  # pragma: no cover - no clock for this thread
                self._clock = None
        try:
            with FORK_GUARD:  # (a fork waits for it: see _fork.py)
                conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
        except sqlite3.Error as exc:  # pragma: no cover - the writer opened the same file
            logger.warning("trace store %s: no checkpoint thread (%s)", self.path, exc)
            return
        try:
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stop:
                    return
                try:
                    with FORK_GUARD:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error as exc:  # busy or failing disk: the next one retries
                    logger.debug("trace store %s: checkpoint failed (%s)", self.path, exc)
        finally:
            with FORK_GUARD:
                conn.close()
