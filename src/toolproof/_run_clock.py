"""A run's wall-clock limit, and how a run is ended from anywhere inside it.

Every run on an event loop shares one loop timer (:class:`_Timers`); a run's :class:`Clock`
joins it while the run waits and cuts the wait off when the limit passes. :class:`Stop` is
how any part of the run (a limit, the final answer) ends it; ``toolproof._run`` catches it
and finishes the run the same way whatever the reason.
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncio

    from toolproof._trace import StopReason

_T = TypeVar("_T")

_UNCANCEL = sys.version_info >= (3, 11)  # Task.uncancel() tells our cut-off from a cancel


class Stop(BaseException):
    """Ends the run with a stop reason (a ``BaseException``: no ``except Exception`` eats it)."""

    def __init__(self, reason: StopReason, output: str | None = None, detail: str | None = None):
        self.reason, self.output, self.detail = reason, output, detail


class Clock:
    """The run's wall-clock limit, armed only while the run waits.

    The loop's timer (one for all the runs of an event loop, see :class:`_Timers`) cancels
    the run's task when the limit passes during :meth:`within`; between steps (in the code
    of an ``Agent.iter`` caller) it only marks the time as up, and the next wait is cut off
    at its first suspension, as a fresh ``asyncio.timeout(0)`` would do.
    """

    __slots__ = (
        "_cancelled",
        "_inside",
        "_loop",
        "_task",
        "_timers",
        "deadline",
        "expired",
        "seconds",
    )

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.deadline: float | None = None  # on the perf_counter clock
        self.expired = self._inside = self._cancelled = False
        self._timers: _Timers | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None

    def start(self, started: float) -> None:
        """Arm the limit, and note the task the run waits in (see :meth:`bind`)."""
        if self.seconds is None:
            return
        self.deadline = started + self.seconds
        if _UNCANCEL:
            if not _asyncio:
                _bind_asyncio()
            # Looking up the running loop costs a system call (getpid) on Python 3.11: once.
            loop = self._loop = _asyncio[0]()
            self._timers = _Timers.of(loop)
            self._timers.add(self, self.deadline, loop)
            self._task = _asyncio[1](loop)  # given the loop: no system call

    def bind(self) -> None:
        """Note the task the run waits in: call it from that task before it waits.

        :meth:`start` notes the task it runs in; each step of ``Agent.iter`` calls this (a
        caller may step the run from another task).
        """
        if self._loop is not None:
            self._task = _asyncio[1](self._loop)

    def stop(self) -> None:
        if self._timers is not None:
            self._timers.clocks.pop(self, None)
            self._timers = None

    def _expire(self) -> None:
        self.expired = True
        if self._inside and self._task is not None:
            self._cancelled = True
            self._task.cancel()

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline - 1e-3

    async def within(self, awaitable: Awaitable[_T], what: str = "") -> _T:
        """Await ``awaitable``; the time limit cut-off ends the run with ``budget``."""
        if self.deadline is None:
            return await awaitable
        if not _UNCANCEL:  # pragma: no cover - Python 3.10
            return await self._wait_for(awaitable, what)
        task: Any = self._task  # cancelling() and uncancel() are Python 3.11+
        assert task is not None, "a run always runs in a task (bound by Agent.run / iter)"
        entry = task.cancelling()
        self._inside = True
        if self.expired:  # time ran out between steps: cut off at the first suspension
            import asyncio

            asyncio.get_running_loop().call_soon(self._expire)
        try:
            return await awaitable
        except BaseException as exc:
            import asyncio

            ours, self._cancelled = self._cancelled, False
            if ours and task.uncancel() <= entry and isinstance(exc, asyncio.CancelledError):
                raise Stop("budget", None, self.limit_detail(what)) from None
            if isinstance(exc, asyncio.TimeoutError) and self.past_deadline():
                raise Stop("budget", None, self.limit_detail(what)) from None
            raise
        finally:
            self._inside = False
            if self._cancelled:  # fired as the wait finished: take the cancellation back
                self._cancelled = False
                task.uncancel()

    async def _wait_for(self, awaitable: Awaitable[_T], what: str) -> _T:  # pragma: no cover
        import asyncio

        assert self.deadline is not None
        remaining = max(self.deadline - time.perf_counter(), 0.0)
        try:
            return await asyncio.wait_for(awaitable, remaining)
        except asyncio.TimeoutError:
            if self.past_deadline():
                raise Stop("budget", None, self.limit_detail(what)) from None
            raise

    def limit_detail(self, what: str = "") -> str:
        return f"time limit reached ({self.seconds:g} s){what}"


#: ``asyncio.get_running_loop`` and ``asyncio.current_task``, bound by the first run (an
#: ``import`` statement in a function costs about 0.3 µs a call, even for a loaded module).
_asyncio: list[Callable[..., Any]] = []


def _bind_asyncio() -> None:
    import asyncio

    _asyncio[:] = [asyncio.get_running_loop, asyncio.current_task]


class _Timers:
    """The time limits of every run on one event loop, served by one loop timer.

    A timer per run cost more than the rest of a scripted run's bookkeeping (each one is
    pushed into the loop's heap, then cancelled). Here a run only joins and leaves a dict;
    the one timer is armed for the earliest deadline, and when it fires it expires the runs
    that are due and re-arms for the next one.
    """

    __slots__ = ("clocks", "handle", "loop", "when")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.clocks: dict[Clock, float] = {}  # each run's clock and its deadline
        # The loop and the armed timer, held weakly: the loop must stay collectable.
        self.loop = weakref.ref(loop)
        self.handle: weakref.ref[asyncio.TimerHandle] | None = None
        self.when = float("inf")  # the deadline the timer is armed for (perf_counter clock)

    @staticmethod
    def of(loop: asyncio.AbstractEventLoop) -> _Timers:
        """The timers of ``loop`` (made on first use, forgotten with the loop)."""
        global _last_timers
        last = _last_timers  # the common case: the same loop as the last run of any thread
        if last is not None and last.loop() is loop:
            return last
        found = _loop_timers.get(loop)
        if found is None:
            found = _loop_timers[loop] = _Timers(loop)
        _last_timers = found
        return found

    def add(self, clock: Clock, deadline: float, loop: asyncio.AbstractEventLoop) -> None:
        self.clocks[clock] = deadline
        if deadline < self.when:
            self._arm(deadline, loop)

    def _arm(self, when: float, loop: asyncio.AbstractEventLoop) -> None:
        armed = self.handle() if self.handle is not None else None
        if armed is not None:
            armed.cancel()
        self.when = when
        at = loop.time() + max(when - time.perf_counter(), 0.0)
        self.handle = weakref.ref(loop.call_at(at, self._fire))

    def _fire(self) -> None:
        import asyncio

        when, self.when, self.handle = self.when, float("inf"), None
        due = [clock for clock, deadline in self.clocks.items() if deadline <= when]
        for clock in due:
            del self.clocks[clock]
            clock._expire()
        if self.clocks:
            self._arm(min(self.clocks.values()), asyncio.get_running_loop())


#: Each event loop's timers (an entry goes with its loop), and the last ones used.
_loop_timers: weakref.WeakKeyDictionary[Any, _Timers] = weakref.WeakKeyDictionary()
_last_timers: _Timers | None = None
