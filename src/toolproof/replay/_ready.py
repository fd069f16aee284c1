"""Whether a thread is ready to run but not yet running (Linux: ``/proc``; elsewhere never).

The recorder's writer naps to hand the interpreter to the agent's threads. A thread woken
by that nap still needs the OS to give it a core before it can take the interpreter; on a
loaded machine that can take longer than the nap, and the writer, waking first, takes the
interpreter back. After a nap in which no other thread ran, the writer asks this whether a
thread that records traces is still in the scheduler's "runnable" state, on its way to the
interpreter, and naps once more if so.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

__all__ = ["ReadyThreads"]

#: Thread ids whose state file is kept open (the recorder names at most this many).
_KEPT = 16
_CLOSED = -1  # a thread whose state cannot be read (it ended): not asked again


class ReadyThreads:
    """Reads the scheduler state of chosen threads of this process.

    Each thread's ``/proc/self/task/<id>/stat`` is opened once and read again in place
    (one ``pread``, a few microseconds). A thread that has ended reads as not ready and is
    not asked again. Only the thread that made the object may use it; :meth:`close` frees
    its files (a forked child closes its parent's copies the same way).
    """

    def __init__(self) -> None:
        self._supported = os.path.isdir("/proc/self/task")
        self._files: dict[int, int] = {}

    def any_ready(self, threads: Iterable[int]) -> bool:
        """Whether one of ``threads`` (native ids) is runnable now but not on a core."""
        if not self._supported:
            return False
        files = self._files
        found = False
        for native_id in threads:
            fd = files.get(native_id)
            if fd is None:
                fd = self._open(native_id)
            if fd == _CLOSED:
                continue
            try:
                data = os.pread(fd, 512, 0)
                # "pid (name) S ...": the name may hold spaces and parentheses
                state = data[data.rindex(b")") + 2]
            except (OSError, ValueError, IndexError):
                os.close(fd)
                files[native_id] = _CLOSED
                continue
            if state == ord("R"):
                found = True
                break
        return found

    def _open(self, native_id: int) -> int:
        files = self._files
        if len(files) >= _KEPT:  # forget the oldest (threads come and go)
            oldest = next(iter(files))
            fd = files.pop(oldest)
            if fd != _CLOSED:
                os.close(fd)
        try:
            fd = os.open(f"/proc/self/task/{native_id}/stat", os.O_RDONLY)
        except OSError:
            fd = _CLOSED
        files[native_id] = fd
        return fd

    def open_files(self) -> int:
        """How many state files are open now."""
        return sum(1 for fd in self._files.values() if fd != _CLOSED)

    def close(self) -> None:
        """Close every state file (the object can be used again: files reopen on demand)."""
        files, self._files = self._files, {}
        for fd in files.values():
            if fd != _CLOSED:
                with contextlib.suppress(OSError):
                    os.close(fd)
