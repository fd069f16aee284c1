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
        # native id -> (fd, device, inode) of its state file, or _CLOSED
        self._files: dict[int, tuple[int, int, int] | int] = {}

    def any_ready(self, threads: Iterable[int]) -> bool:
        """Whether one of ``threads`` (native ids) is runnable now but not on a core."""
        if not self._supported:
            return False
        files = self._files
        for native_id in threads:
            entry = files.get(native_id)
            if entry is None:
                entry = self._open(native_id)
            if entry == _CLOSED:
                continue
            assert isinstance(entry, tuple)
            try:
                data = os.pread(entry[0], 512, 0)
                # "pid (name) S ...": the name may hold spaces and parentheses
                state = data[data.rindex(b")") + 2]
            except (OSError, ValueError, IndexError):
                self._forget(entry)
                files[native_id] = _CLOSED
                continue
            if state == ord("R"):
                return True
        return False

    def _open(self, native_id: int) -> tuple[int, int, int] | int:
        files = self._files
        if len(files) >= _KEPT:  # forget the oldest (threads come and go)
            self._forget(files.pop(next(iter(files))))
        entry: tuple[int, int, int] | int = _CLOSED
        try:
            fd = os.open(f"/proc/self/task/{native_id}/stat", os.O_RDONLY)
        except OSError:
            pass
        else:
            try:
                info = os.fstat(fd)
            except OSError:  # pragma: no cover - a descriptor just opened
                os.close(fd)
            else:
                entry = (fd, info.st_dev, info.st_ino)
        files[native_id] = entry
        return entry

    @staticmethod
    def _forget(entry: tuple[int, int, int] | int) -> None:
        """Close a state file, unless its number now names another file.

        (Something else may have closed it, and the number been reused by a file of yours:
        that one is left alone.)
        """
        if entry == _CLOSED:
            return
        assert isinstance(entry, tuple)
        fd, device, inode = entry
        try:
            info = os.fstat(fd)
        except OSError:
            return
        if (info.st_dev, info.st_ino) == (device, inode):
            with contextlib.suppress(OSError):
                os.close(fd)

    def open_files(self) -> int:
        """How many state files are open now."""
        return sum(1 for entry in self._files.values() if entry != _CLOSED)

    def close(self) -> None:
        """Close every state file (the object can be used again: files reopen on demand)."""
        files, self._files = self._files, {}
        for entry in files.values():
            self._forget(entry)
