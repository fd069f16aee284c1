"""A fork waits while the recorder's own threads are inside SQLite.

SQLite keeps process-wide mutexes (opening a file takes one). A child forked while another
thread held one inherits it held by a thread the child does not have, and blocks forever at
its first use of SQLite: a pre-forking server that made a recorder at start-up would get
workers whose traces are never written. The recorder's writer and checkpoint threads hold
:data:`SQLITE_CALLS` around their SQLite calls; ``os.fork`` takes it first (waiting at most
``_FORK_WAIT`` seconds, then forking anyway), and the child starts with it free.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType

__all__ = ["SQLITE_CALLS"]

#: The longest a fork waits for the recorder's threads to leave SQLite (a checkpoint
#: waiting for the disk takes tens of milliseconds; a store on a stalled disk may never end).
_FORK_WAIT = 5.0


class _ForkGuard:
    """Held around SQLite calls by background threads; taken by ``os.fork``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._forking = False

    def __enter__(self) -> None:
        self._lock.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._lock.release()

    def _before_fork(self) -> None:
        self._forking = self._lock.acquire(timeout=_FORK_WAIT)

    def _after_in_parent(self) -> None:
        if self._forking:
            self._forking = False
            self._lock.release()

    def _after_in_child(self) -> None:
        self._forking = False
        self._lock = threading.Lock()  # (its holder, if any, is a thread the child lacks)


SQLITE_CALLS = _ForkGuard()

if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(
        before=SQLITE_CALLS._before_fork,
        after_in_parent=SQLITE_CALLS._after_in_parent,
        after_in_child=SQLITE_CALLS._after_in_child,
    )
