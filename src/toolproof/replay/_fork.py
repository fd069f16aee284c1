"""A fork waits while the recorder's own threads do work a child must not inherit half done.

SQLite keeps process-wide mutexes (opening a file takes one). A child forked while another
thread held one inherits it held by a thread the child does not have, and blocks forever at
its first use of SQLite: a pre-forking server that made a recorder at start-up would get
workers whose traces are never written. Likewise a child forked while the writer imported
the PostgreSQL store's module inherits it half initialised, and its first write fails.
The recorder's writer and checkpoint threads hold :data:`FORK_GUARD` around their SQLite
calls and around opening a store (imports and connections included); ``os.fork`` waits
until neither is inside (at most ``_FORK_WAIT`` seconds, then it forks anyway), and the
child starts with it free.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType

__all__ = ["FORK_GUARD"]

#: The longest a fork waits for the recorder's threads (opening a store, a SQLite call; a checkpoint
#: waiting for the disk takes tens of milliseconds; a store on a stalled disk may never end).
_FORK_WAIT = 5.0


class _ForkGuard:
    """Entered around that work by background threads; ``os.fork`` waits until none is in.

    Several threads may be inside at once (the writer's batch beside a checkpoint: they never
    wait for each other). While a fork waits, no thread enters.
    """

    def __init__(self) -> None:
        self._state = threading.Condition(threading.Lock())
        self._inside = 0
        self._forking = False

    def __enter__(self) -> None:
        with self._state:
            while self._forking:
                self._state.wait()
            self._inside += 1

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        with self._state:
            self._inside -= 1
            if self._inside == 0:
                self._state.notify_all()

    def _before_fork(self) -> None:
        # (held through the fork: a thread that would enter now waits for the parent's end)
        self._state.acquire()
        self._forking = True
        self._state.wait_for(lambda: self._inside == 0, timeout=_FORK_WAIT)

    def _after_in_parent(self) -> None:
        self._forking = False
        self._state.notify_all()
        self._state.release()

    def _after_in_child(self) -> None:
        # (the threads that were inside are the parent's: the child has none of them)
        self._state = threading.Condition(threading.Lock())
        self._inside = 0
        self._forking = False


FORK_GUARD = _ForkGuard()

if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(
        before=FORK_GUARD._before_fork,
        after_in_parent=FORK_GUARD._after_in_parent,
        after_in_child=FORK_GUARD._after_in_child,
    )
