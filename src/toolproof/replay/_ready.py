"""What the agent's threads are doing, as the kernel sees them (Linux ``/proc``; elsewhere never).

The recorder's writer naps to hand the interpreter to the agent's threads. It asks two
things about the threads that record traces, each one ``pread`` of a file under
``/proc/self/task/<id>/`` (a few microseconds):

- whether one is blocked on CPython's interpreter lock (:meth:`ReadyThreads.any_waiting`):
  a thread of the agent woke (its model answered) and waits for the writer to let go. The
  writer naps at once instead of at the end of its slice. The kernel shows a blocked
  thread's system call and its first argument (``syscall``): a thread waiting for the lock
  waits on a futex at the lock's address. That address is found once per process, by
  watching a thread of our own block on the lock (:func:`lock_watch`); where it cannot
  be found (another platform, another interpreter) the question is never asked.
- whether one is runnable but not yet on a core (:meth:`ReadyThreads.any_ready`, the
  scheduler state in ``stat``). A thread woken by a nap still needs the OS to give it a
  core before it can take the interpreter; on a loaded machine that can take longer than
  the nap, and the writer, waking first, would take the interpreter back. After a nap in
  which no other thread ran, the writer naps once more while one is.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable

__all__ = ["NAP_SLACK_NS", "ReadyThreads", "lock_watch", "shorten_naps"]

#: Files kept open at most: two for each of 16 threads (the recorder names at most 8).
_KEPT = 32
_CLOSED = -1  # a thread whose file cannot be read (it ended): not asked again
_STAT, _SYSCALL = "stat", "syscall"
#: The futex system call's number, by machine: how a thread blocked on a lock shows.
_FUTEX = {"x86_64": 202, "aarch64": 98}
#: A waiter blocks on the lock's condition variable or on its mutex, which lie side by
#: side: an address this close to the one seen counts as the interpreter lock.
_LOCK_SPAN = 256
_PROBE_SECONDS = 0.002  # how long the search holds the interpreter lock, at most
_SET_TIMER_SLACK = 29  # prctl(PR_SET_TIMERSLACK, nanoseconds)
#: The writer's timer slack: how much later than asked the OS may end its naps (Linux
#: gives every thread 50 µs; a nap of 1 µs then takes about 80-110 µs).
NAP_SLACK_NS = 20_000


class ReadyThreads:
    """Reads what chosen threads of this process are doing, from ``/proc``.

    Each thread's file is opened once and read again in place (one ``pread``, a few
    microseconds). A thread that has ended reads as neither waiting nor ready, and is not
    asked again. Only the thread that made the object may use it; :meth:`close` frees its
    files (a forked child closes its parent's copies the same way).
    """

    def __init__(self) -> None:
        self._supported = os.path.isdir("/proc/self/task")
        # (file, native id) -> (fd, device, inode) of the file, or _CLOSED
        self._files: dict[tuple[str, int], tuple[int, int, int] | int] = {}
        self._watch: _Watch | None = None  # see watches_lock
        self._watching: bool | None = None
        self._held_read: Callable[[int], bytes | None] = _no_read
        self._ran: dict[int, int | None] = {}  # CPU ns of each thread at the last look
        self._waited: set[int] = set()  # threads waiting for the lock at the last look

    def watches_lock(self) -> bool:
        """Whether :meth:`any_waiting` can tell (finds the lock's address the first time)."""
        if self._watching is None:
            self._watch = lock_watch() if self._supported else None
            if self._watch is not None:
                self._held_read = self._watch.reader()
            self._watching = self._watch is not None
        return self._watching

    def any_waiting(self, threads: Iterable[int]) -> bool:
        """Whether one of ``threads`` (native ids) is blocked on the interpreter lock.

        Read while holding the lock: an ordinary read would let it go, and the thread,
        woken, would read as running (and find it taken back).
        """
        watch = self._watch
        if watch is None:
            return False
        prefix, start, low, high = watch.prefix, len(watch.prefix), watch.low, watch.high
        ran, waited = self._ran, self._waited
        for native_id in threads:
            # A thread must run (wake, return from its wait) to start waiting for the lock:
            # one that has used no CPU time since the last look and was not waiting then is
            # not now. (Its CPU clock: a third of the cost of reading its system call.)
            try:
                cpu: int | None = time.clock_gettime_ns(_thread_clock(native_id))
            except (OSError, OverflowError):  # it has ended (or is no thread of ours)
                cpu = None
            if cpu is not None and ran.get(native_id) == cpu and native_id not in waited:
                continue
            if len(ran) >= _KEPT:
                ran.clear()
            ran[native_id] = cpu
            waited.discard(native_id)
            fd = self._fd(_SYSCALL, native_id)
            if fd is None:
                continue
            data = self._held_read(fd)
            # "202 0x7f2f4f54e6f0 0x89 ...": the call, then its arguments ("running" if
            # it is not blocked); the first argument of a futex wait is its address.
            if data is None:
                self._drop(_SYSCALL, native_id)
                continue
            if not data.startswith(prefix):
                continue
            try:
                address = int(data[start : data.find(b" ", start)], 16)
            except ValueError:
                continue
            if low <= address <= high:
                waited.add(native_id)
                return True
        return False

    def any_ready(self, threads: Iterable[int]) -> bool:
        """Whether one of ``threads`` (native ids) is runnable now but not on a core."""
        if not self._supported:
            return False
        for native_id in threads:
            data = self._read(_STAT, native_id, 512)
            if data is None:
                continue
            try:
                # "pid (name) S ...": the name may hold spaces and parentheses
                state = data[data.rindex(b")") + 2]
            except (ValueError, IndexError):
                self._drop(_STAT, native_id)
                continue
            if state == ord("R"):
                return True
        return False

    def _fd(self, name: str, native_id: int) -> int | None:
        """The open descriptor of a thread's file (opened the first time), or ``None``."""
        key = (name, native_id)
        entry = self._files.get(key)
        if entry is None:
            entry = self._open(key)
        if entry == _CLOSED:
            return None
        assert isinstance(entry, tuple)
        return entry[0]

    def _read(self, name: str, native_id: int, size: int) -> bytes | None:
        fd = self._fd(name, native_id)
        if fd is None:
            return None
        try:
            return os.pread(fd, size, 0)
        except OSError:
            self._drop(name, native_id)
            return None

    def _drop(self, name: str, native_id: int) -> None:
        self._forget(self._files.get((name, native_id), _CLOSED))
        self._files[(name, native_id)] = _CLOSED

    def _open(self, key: tuple[str, int]) -> tuple[int, int, int] | int:
        files = self._files
        if len(files) >= _KEPT:  # forget the oldest (threads come and go)
            self._forget(files.pop(next(iter(files))))
        entry: tuple[int, int, int] | int = _CLOSED
        try:
            fd = os.open(f"/proc/self/task/{key[1]}/{key[0]}", os.O_RDONLY)
        except OSError:
            pass
        else:
            try:
                info = os.fstat(fd)
            except OSError:  # pragma: no cover - a descriptor just opened
                os.close(fd)
            else:
                entry = (fd, info.st_dev, info.st_ino)
        files[key] = entry
        return entry

    @staticmethod
    def _forget(entry: tuple[int, int, int] | int) -> None:
        """Close a file, unless its number now names another file.

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
        """How many files are open now."""
        return sum(1 for entry in self._files.values() if entry != _CLOSED)

    def close(self) -> None:
        """Close every file (the object can be used again: files reopen on demand)."""
        files, self._files = self._files, {}
        for entry in files.values():
            self._forget(entry)


def _no_read(fd: int) -> bytes | None:
    return None


def _thread_clock(native_id: int) -> int:
    """The id of the CPU-time clock of this process's thread ``native_id`` (Linux).

    As ``pthread_getcpuclockid`` makes it: ``(~tid << 3) | CPUCLOCK_SCHED | PERTHREAD``.
    The kernel refuses it (``EINVAL``) once the thread has ended.
    """
    return (~native_id << 3) | 6


class _Watch:
    """How to see a thread wait for the interpreter lock (see :func:`lock_watch`)."""

    __slots__ = ("high", "low", "prefix", "reader")

    def __init__(
        self, number: int, address: int, reader: Callable[[], Callable[[int], bytes | None]]
    ) -> None:
        self.prefix = b"%d " % number  # the futex call, as its syscall file starts
        self.low, self.high = address - _LOCK_SPAN, address + _LOCK_SPAN
        #: Makes a function that reads a file's first bytes without letting the lock go
        #: (each with a buffer of its own: one per thread that reads).
        self.reader = reader


_found: list[_Watch | None] = []  # the search's result (a fork keeps it: the same memory)
_search = threading.Lock()


def _search_in_child() -> None:
    # A fork during a search: the child has no searching thread, and its copy of the lock
    # would stay held. It searches again, if it needs to.
    global _search
    _search = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_search_in_child)


def lock_watch() -> _Watch | None:
    """How to see a thread of this process blocked on the interpreter lock, or ``None``.

    Found once per process: a thread of our own is made to wait for the lock while this
    thread holds it and reads that thread's ``syscall`` file through a C call that keeps
    the lock (``ctypes.PyDLL``; an ordinary read would let it go). The lock is held for at
    most 2 ms, once. ``None`` where it cannot be seen: not Linux, no ``ctypes``, a machine
    whose futex call is not known, an interpreter without that lock, or a thread that did
    not block in time.
    """
    with _search:
        if not _found:
            try:
                _found.append(_probe())
            except Exception:  # any surprise: the question is never asked
                _found.append(None)
        return _found[0]


def _probe() -> _Watch | None:
    number = _FUTEX.get(os.uname().machine) if hasattr(os, "uname") else None
    if number is None or not os.path.isdir("/proc/self/task"):
        return None
    import ctypes  # (only here, once per process: about a millisecond)

    libc = ctypes.PyDLL(None)  # PyDLL: its calls keep the interpreter lock
    pread = libc.pread
    pread.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_long)
    pread.restype = ctypes.c_ssize_t
    give_way = libc.sched_yield  # (on one core the other thread needs ours to get there)

    def reader() -> Callable[[int], bytes | None]:
        buffer = ctypes.create_string_buffer(128)

        def read(fd: int) -> bytes | None:
            count = pread(fd, buffer, 127, 0)
            return buffer.raw[:count] if count >= 0 else None

        return read

    read = reader()

    ready, go = threading.Event(), threading.Event()
    ids: list[int] = []

    def wait() -> None:
        ids.append(threading.get_native_id())
        ready.set()
        go.wait()  # then, woken, it needs the interpreter lock this thread holds

    helper = threading.Thread(target=wait, name="toolproof-lock-probe", daemon=True)
    helper.start()
    fd = -1
    try:
        if not ready.wait(5):
            return None
        fd = os.open(f"/proc/self/task/{ids[0]}/syscall", os.O_RDONLY)
        call = b"%d" % number
        go.set()
        deadline = time.perf_counter() + _PROBE_SECONDS
        while time.perf_counter() < deadline:
            give_way()
            # "202 <address> <op> <value> <timeout> ...": a wait on the lock's condition
            # always has a timeout (the switch interval); the event above has none.
            parts = (read(fd) or b"").split(b" ", 5)
            if len(parts) > 4 and parts[0] == call and parts[4] != b"0x0":
                return _Watch(number, int(parts[1], 16), reader)
        return None
    finally:
        go.set()
        if fd >= 0:
            os.close(fd)
        helper.join(5)


def shorten_naps() -> bool:
    """Let the calling thread's short sleeps end sooner (Linux; elsewhere nothing changes).

    The writer's naps only hand the interpreter over: a thread waiting for it takes it in
    a few tens of microseconds, and the rest of the nap is the writer idle. The OS may end
    a thread's sleep up to its timer slack late (50 µs by default); the writer's own
    thread is given :data:`NAP_SLACK_NS`. No other thread is affected.

    Returns:
        Whether the slack was set.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        return bool(prctl(_SET_TIMER_SLACK, NAP_SLACK_NS, 0, 0, 0) == 0)
    except Exception:  # no ctypes, no prctl: the default slack stands
        return False
